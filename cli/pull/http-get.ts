/**
 * @module Plain HTTP GETs for `skill-mcp pull --index`: the index and the artifacts it names. Every
 * URL, the first and each redirect's, passes the same rules before it is asked (https, or http to a
 * loopback address only; no credentials in it; SKILL_MCP_PULL_ALLOW; an index elsewhere cannot
 * point us at this machine's loopback), and every answer is capped while it streams in.
 */
import { notAllowed } from './allow.js';

export class FetchRefused extends Error {}

const MAX_REDIRECTS = 5;
const TIMEOUT_MS = 120_000;

/** 127.0.0.0/8, ::1 and `localhost`: the only hosts plain http may reach. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, '');
  return host === 'localhost' || host.endsWith('.localhost') || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** A URL as shown and recorded: no credentials, query or fragment. */
export function shownUrl(url: URL): string {
  return `${url.origin}${url.pathname}`;
}

/**
 * Why `url` may not be fetched, or undefined. `fromLoopback`: whether the index came from a
 * loopback host (only then may what it names be on loopback).
 */
export function urlRefusal(url: URL, fromLoopback: boolean, allow: string | undefined): string | undefined {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `${shownUrl(url)} is not http(s)`;
  const loopback = isLoopbackHost(url.hostname);
  // Security: plain http can be read and changed on the way; only this machine's own loopback is exempt.
  if (url.protocol === 'http:' && !loopback)
    return `${shownUrl(url)} is plain http; only https is fetched (http only from a loopback address)`;
  // Security: an index on another host must not make this machine fetch from its own loopback services.
  if (loopback && !fromLoopback) return `${shownUrl(url)} is on this machine's loopback, named by an index that is not`;
  // Security: credentials in a URL would be sent wherever it redirects and kept in logs.
  if (url.username !== '' || url.password !== '') return `${shownUrl(url)} holds credentials; pull takes no credentials in an index URL`;
  return notAllowed(shownUrl(url), allow);
}

export interface Fetched {
  bytes: Buffer;
  /** The media type the server said, lowercased, without parameters. */
  contentType: string | undefined;
  /** Where the bytes finally came from (after redirects). */
  url: URL;
}

/** Reads a body, refusing it once it passes `maxBytes` (a Content-Length above it is refused before reading). */
async function readCapped(response: Response, maxBytes: number, shown: string): Promise<Buffer> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes)
    throw new FetchRefused(`${shown} is ${declared} bytes, over the ${maxBytes} a pull accepts; nothing was read`);
  if (!response.body) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let seen = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    seen += value.byteLength;
    // Security: a server that streams without end, or lies in Content-Length, stops at the cap.
    if (seen > maxBytes) {
      await reader.cancel();
      throw new FetchRefused(`${shown} is over the ${maxBytes} bytes a pull accepts`);
    }
    chunks.push(Buffer.from(value));
  }
  return Buffer.concat(chunks);
}

/** GET `url`, following up to 5 redirects, each checked like the first. */
export async function getChecked(url: URL, maxBytes: number, fromLoopback: boolean): Promise<Fetched> {
  const allow = process.env['SKILL_MCP_PULL_ALLOW'];
  let at = url;
  for (let hop = 0; ; hop++) {
    const refusal = urlRefusal(at, fromLoopback, allow);
    if (refusal) throw new FetchRefused(hop === 0 ? refusal : `a redirect went to ${refusal}`);
    let response: Response;
    try {
      response = await fetch(at, { redirect: 'manual', signal: AbortSignal.timeout(TIMEOUT_MS), headers: { accept: '*/*' } });
    } catch (error) {
      throw new FetchRefused(
        `${shownUrl(at)} could not be fetched (${error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error)})`,
      );
    }
    if (response.status >= 300 && response.status < 400 && response.headers.has('location')) {
      await response.body?.cancel();
      if (hop >= MAX_REDIRECTS) throw new FetchRefused(`${shownUrl(url)} redirects more than ${MAX_REDIRECTS} times`);
      at = new URL(response.headers.get('location')!, at);
      continue;
    }
    if (response.status !== 200) {
      await response.body?.cancel();
      throw new FetchRefused(`${shownUrl(at)} answered HTTP ${response.status}`);
    }
    const bytes = await readCapped(response, maxBytes, shownUrl(at));
    const type = response.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase();
    return { bytes, contentType: type || undefined, url: at };
  }
}
