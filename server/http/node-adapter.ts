/**
 * @module Bridges `node:http` to the SDK's web-standard `fetch(Request) -> Response` handler.
 * The body is read here under a hard cap before any `Request` exists, and the response is
 * streamed with backpressure so one slow reader holds one socket, not the server's memory.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { jsonRpcError } from './guard.js';

/** Headers that describe the Node connection, not the message; `Request` must not carry them. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'te', 'trailer']);

function tooLarge(maxBytes: number): Response {
  return jsonRpcError(413, -32600, `Request body too large: at most ${maxBytes} bytes`, { connection: 'close' });
}

/** Collects the body, refusing as soon as it is known to exceed `maxBytes`. */
async function readCapped(req: IncomingMessage, maxBytes: number): Promise<Buffer | 'too-large'> {
  // Security: a declared length over the cap is refused before one byte is buffered.
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return 'too-large';
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    total += chunk.length;
    // Security: a chunked body has no declared length; count as it arrives and stop at the cap.
    if (total > maxBytes) return 'too-large';
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, total);
}

/** The request's headers as web `Headers`, without the hop-by-hop ones. */
export function webHeaders(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  return headers;
}

/** The path of the request target (origin-form or absolute-form); the authority is never trusted here. */
export function requestPath(req: IncomingMessage): { pathname: string; search: string } {
  const url = new URL(req.url ?? '/', 'http://skill-mcp.invalid');
  return { pathname: url.pathname, search: url.search };
}

/**
 * The web `Request` for `req` (headers already guarded), or the 413 to answer instead. The body
 * is read here, under the cap. `signal` aborts on client disconnect.
 */
export async function toWebRequest(
  req: IncomingMessage,
  headers: Headers,
  maxBytes: number,
  signal: AbortSignal,
): Promise<Request | Response> {
  const method = req.method ?? 'GET';
  const hasBody = method !== 'GET' && method !== 'HEAD';
  const body = hasBody ? await readCapped(req, maxBytes) : undefined;
  if (body === 'too-large') return tooLarge(maxBytes);
  return webRequest(req, headers, body, signal);
}

function webRequest(
  req: IncomingMessage,
  headers: Headers,
  body: Buffer | undefined,
  signal: AbortSignal,
  path = requestPath(req),
): Request {
  if (body !== undefined) headers.set('content-length', String(body.length));
  // The URL's authority is fixed: the client's Host header was checked by the guard, not used here.
  return new Request(`http://skill-mcp.invalid${path.pathname}${path.search}`, {
    method: req.method ?? 'GET',
    headers,
    ...(body !== undefined ? { body } : {}),
    signal,
  });
}

/** Decodes as the SDK's own body reader does (UTF-8, a leading BOM dropped, bad bytes replaced). */
const UTF8 = new TextDecoder();

/** A request body for the MCP endpoint, read under the cap. */
export interface McpBody {
  /** The bytes, or `undefined` for a GET/HEAD. */
  body: Buffer | undefined;
  /** The JSON body (any JSON value, `null` included); `undefined` when there is none or it is not JSON. */
  parsedBody: unknown;
}

/** An MCP request for the SDK handler: the web `Request`, and its body already parsed when it is JSON. */
export interface McpWebRequest {
  request: Request;
  parsedBody: unknown;
}

/**
 * The body of a request for the MCP endpoint, or the 413 to answer instead. Security: the cap is
 * applied here, before anything is parsed; the SDK applies its own only to bodies it reads itself.
 */
export async function readMcpBody(req: IncomingMessage, maxBytes: number): Promise<McpBody | Response> {
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  const body = hasBody ? await readCapped(req, maxBytes) : undefined;
  if (body === 'too-large') return tooLarge(maxBytes);
  return { body, parsedBody: body === undefined || body.length === 0 ? undefined : parseJson(body) };
}

/**
 * The SDK handler's `Request` for a body read by {@link readMcpBody}. A body that parsed as JSON
 * is handed to the SDK parsed (`parsedBody`) and the `Request` carries none: the SDK would
 * otherwise clone the request's stream and read and parse it again (about 6 % of a small
 * request's CPU, bench/RESULTS.md). A body that is empty or not JSON stays in the `Request`, for
 * the SDK to answer exactly as it always does.
 */
export function toMcpRequest(
  req: IncomingMessage,
  headers: Headers,
  read: McpBody,
  signal: AbortSignal,
  path = requestPath(req),
): McpWebRequest {
  const { body, parsedBody } = read;
  if (parsedBody === undefined) return { request: webRequest(req, headers, body, signal, path), parsedBody };
  headers.delete('content-length');
  return { request: webRequest(req, headers, undefined, signal, path), parsedBody };
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(UTF8.decode(body)) as unknown;
  } catch {
    return undefined;
  }
}

/** A JSON answer (the SDK's `Response.json`, our own errors): its whole body is already in memory. */
function isWholeJson(response: Response): boolean {
  const type = response.headers.get('content-type') ?? '';
  return /^application\/json\s*(;|$)/i.test(type) && !response.headers.has('content-length') && !response.headers.has('transfer-encoding');
}

/** Every chunk of a body that is already in memory (no chunk waits on anything but a microtask). */
async function chunksOf(body: ReadableStream<Uint8Array>): Promise<Uint8Array[]> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return chunks;
    chunks.push(value);
  }
}

/** The response's headers for `writeHead`, `set-cookie` kept as a list. */
function nodeHeaders(response: Response): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    headers[name] = name === 'set-cookie' ? response.headers.getSetCookie() : value;
  });
  return headers;
}

function writeHead(res: ServerResponse, response: Response, headers: Record<string, string | string[]>): void {
  // An empty statusText would send a blank reason phrase; let Node use the standard one.
  if (response.statusText) res.writeHead(response.status, response.statusText, headers);
  else res.writeHead(response.status, headers);
}

/**
 * Writes `response` to `res`, streaming the body (SSE included) and honouring backpressure. A
 * JSON answer is whole before it is sent (the SDK builds it with `Response.json`), so it goes out
 * with a `content-length` in one `end`: headers and body in one write, where streaming it waited
 * for the socket to drain a body over 16 KiB and then wrote the chunked terminator on its own
 * (one more syscall per answer, bench/RESULTS.md). Holding it costs no memory: the chunks are the
 * ones the `Response` already holds, not copies.
 */
export async function sendWebResponse(res: ServerResponse, response: Response): Promise<void> {
  const headers = nodeHeaders(response);
  if (response.body && isWholeJson(response)) {
    const chunks = await chunksOf(response.body);
    headers['content-length'] = String(chunks.reduce((total, chunk) => total + chunk.byteLength, 0));
    writeHead(res, response, headers);
    for (const chunk of chunks.slice(0, -1)) res.write(chunk);
    res.end(chunks.at(-1));
    return;
  }
  writeHead(res, response, headers);
  if (!response.body) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  const stop = (): void => void reader.cancel().catch(() => undefined);
  res.once('close', stop);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.write(value) && !res.destroyed) {
        await new Promise<void>((resolve) => {
          res.once('drain', resolve);
          res.once('close', resolve);
        });
      }
      if (res.destroyed) break;
    }
  } finally {
    res.off('close', stop);
    res.end();
  }
}
