/**
 * @module What the HTTP suites share: the built bin started as `skill-mcp --http --port 0` (a
 * real process on a real loopback socket), the URL it prints, raw requests in either era, and
 * the SDK's own `Client` over its Streamable HTTP transport. Servers start from the e2e base
 * environment (private HOME, TMPDIR and state dir in the file's own temp tree), and the file's
 * afterAll fails if any of their processes (a runner guard, a runner) is left running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEachFile } from '../file-hooks.js';
import { Client } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { baseEnv, expectNoLeftovers } from '../e2e/harness.js';

/** A server was started by the file running now: its end is checked for leftovers (every file that started one). */
let startedHere = false;
afterEachFile(async () => {
  if (!startedHere) return;
  startedHere = false;
  await expectNoLeftovers();
});

export const REPO = fileURLToPath(new URL('../..', import.meta.url));
export const SERVER_JS = `${REPO}dist/skill-mcp.js`;
export const MODERN = '2026-07-28';

export interface HttpServer {
  url: string;
  process: ChildProcess;
  stderr(): string;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  exited: Promise<number | string>;
  stop(): Promise<number | string>;
}

/** Starts the built server over HTTP on a free loopback port and waits for its `listening on` line. */
export async function startHttp(
  env: Record<string, string> = {},
  args: string[] = [],
  options: { port?: number } = {},
): Promise<HttpServer> {
  if (!existsSync(SERVER_JS)) throw new Error('dist/skill-mcp.js is missing: run `npm run build` first');
  startedHere = true;
  const child = spawn(process.execPath, [SERVER_JS, '--http', '--port', String(options.port ?? 0), ...args], {
    env: { ...baseEnv(), ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      const match = /listening on (http:\/\/[^\s"]+)/.exec(stderr);
      if (match) resolve(match[1]!);
    });
    void exited.then((code) => reject(new Error(`the server exited (${code}) before listening:\n${stderr}`)));
  });
  return {
    url,
    process: child,
    stderr: () => stderr,
    exited,
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** The per-request envelope every 2026-07-28 request carries. */
export function envelope(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ...extra,
    _meta: {
      'io.modelcontextprotocol/protocolVersion': MODERN,
      'io.modelcontextprotocol/clientInfo': { name: 'skill-mcp-http-test', version: '0.0.0' },
      'io.modelcontextprotocol/clientCapabilities': {},
    },
  };
}

export interface RawAnswer {
  status: number;
  headers: Headers;
  body: Record<string, unknown> | undefined;
}

/**
 * POSTs one JSON-RPC request in the 2026-07-28 shape: headers matching the body unless
 * `headers` overrides them (a `null` value removes one).
 */
export async function modernPost(
  url: string,
  method: string,
  params: Record<string, unknown> = {},
  headers: Record<string, string | null> = {},
): Promise<RawAnswer> {
  const base: Record<string, string | null> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN,
    'mcp-method': method,
    ...headers,
  };
  const sent = Object.fromEntries(Object.entries(base).filter((entry): entry is [string, string] => entry[1] !== null));
  const response = await fetch(url, {
    method: 'POST',
    headers: sent,
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: envelope(params) }),
  });
  const text = await response.text();
  let body: Record<string, unknown> | undefined;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, body };
}

/** The JSON-RPC error code in a raw answer, if any. */
export function errorCode(answer: RawAnswer): number | undefined {
  return (answer.body?.['error'] as { code?: number } | undefined)?.code;
}

/** The SDK's `Client` over Streamable HTTP, in the 2025 era (initialize) or pinned to 2026-07-28. */
export async function connectClient(url: string, era: 'legacy' | 'modern', token?: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(
    new URL(url),
    token ? { requestInit: { headers: { authorization: `Bearer ${token}` } } } : {},
  );
  const client = new Client(
    { name: 'skill-mcp-http-test', version: '0.0.0' },
    era === 'modern' ? { versionNegotiation: { mode: { pin: MODERN } } } : {},
  );
  await client.connect(transport);
  return client;
}
