/**
 * Slow or greedy clients cannot exhaust the HTTP front: a client that never finishes its headers
 * or its body is answered 408 and disconnected at the deadline (slowloris) — the socket destroyed,
 * even when the client never closes its side — and connections over SKILL_MCP_HTTP_MAX_CONNECTIONS
 * are dropped while the server keeps serving the others. 600 such clients at once keep a real SDK
 * client out only until their deadline. With SKILL_MCP_HTTP_MAX_CONNECTIONS_PER_ADDRESS, one
 * address's connection over the cap is refused 429; X-Forwarded-For is believed only from an
 * address in SKILL_MCP_HTTP_TRUSTED_PROXIES (loopback has many addresses: the test's sockets pick
 * their source among 127.0.0.1-3).
 */
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { connectClient, envelope, MODERN, modernPost, startHttp, type HttpServer } from './harness.js';

let server: HttpServer;
let port: number;
beforeAll(async () => {
  server = await startHttp({
    SKILL_MCP_HTTP_HEADERS_TIMEOUT_MS: '500',
    SKILL_MCP_HTTP_REQUEST_TIMEOUT_MS: '1000',
    SKILL_MCP_HTTP_MAX_CONNECTIONS: '4',
  });
  port = Number(new URL(server.url).port);
});
afterAll(async () => {
  await server.stop();
});

function open(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Everything the server sent until it closed the connection, and how long that took. */
function untilClosed(socket: Socket): Promise<{ text: string; ms: number }> {
  const started = Date.now();
  let text = '';
  socket.on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8');
  });
  socket.on('error', () => undefined);
  return new Promise((resolve) => socket.once('close', () => resolve({ text, ms: Date.now() - started })));
}

test('headers never finished (slowloris): 408 and the connection closed at the deadline', async () => {
  const socket = await open();
  const closed = untilClosed(socket);
  socket.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1\r\n');
  const { text, ms } = await closed;
  expect(text).toMatch(/^HTTP\/1\.1 408/);
  // Cut (held open, it would run into the test timeout); the bound is loose for a loaded machine.
  expect(ms).toBeLessThan(20_000);
});

test('a body never finished: 408 and the connection closed at the request deadline', async () => {
  const socket = await open();
  const closed = untilClosed(socket);
  socket.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"jsonrpc"');
  const { text, ms } = await closed;
  expect(text).toMatch(/^HTTP\/1\.1 408/);
  expect(ms).toBeLessThan(20_000);
});

test('connections over the cap are dropped; the server keeps answering once they go', async () => {
  const held = await Promise.all(Array.from({ length: 4 }, () => open()));
  for (const socket of held) socket.on('error', () => undefined);
  const extra = await open().catch(() => undefined);
  if (extra) {
    // Accepted by the kernel, then closed by the server without a byte.
    const { text } = await untilClosed(extra);
    expect(text).toBe('');
  }
  await Promise.all(held.map((socket) => new Promise((resolve) => socket.once('close', resolve).destroy())));
  // The server learns of the closes asynchronously; a request racing them may still be dropped.
  let status = 0;
  for (let attempt = 0; attempt < 20 && status !== 200; attempt += 1) {
    status = await modernPost(server.url, 'skills/list').then(
      (a) => a.status,
      () => 0,
    );
  }
  expect(status).toBe(200);
});

/** A client that stalls and never closes its side: it keeps its socket half-open unless the server destroys it. */
function stall(at: number, payload: string, from = '127.0.0.1'): Promise<{ socket: Socket; hungUp: Promise<string> }> {
  return new Promise((resolve) => {
    const socket = connect({ port: at, host: '127.0.0.1', localAddress: from, allowHalfOpen: true });
    let text = '';
    // The server's end of the conversation: its FIN ('end'), or a reset ('error'/'close').
    const hungUp = new Promise<string>((done) => {
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('utf8');
      });
      socket.once('end', () => done(text));
      socket.once('close', () => done(text));
      socket.on('error', () => done(text));
    });
    socket.once('connect', () => {
      socket.write(payload);
      resolve({ socket, hungUp });
    });
    socket.once('error', () => resolve({ socket, hungUp }));
  });
}

const UNFINISHED_HEADERS = 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1\r\n';
function unfinishedBody(extra = ''): string {
  return `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n${extra}Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"jsonrpc"`;
}

/** A whole 2026-07-28 skills/list POST from `from`, with extra headers; resolves with the status and body. */
function listFrom(at: number, from: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'skills/list', params: envelope() });
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: at,
        localAddress: from,
        method: 'POST',
        path: '/mcp',
        agent: false,
        headers: {
          host: `127.0.0.1:${at}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': MODERN,
          'mcp-method': 'skills/list',
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => {
          text += chunk.toString('utf8');
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('a flood of stalled clients (600, over the 512 connection cap)', () => {
  let flood: HttpServer;
  let at: number;
  beforeAll(async () => {
    flood = await startHttp({ SKILL_MCP_HTTP_HEADERS_TIMEOUT_MS: '1000', SKILL_MCP_HTTP_REQUEST_TIMEOUT_MS: '2000' });
    at = Number(new URL(flood.url).port);
  });
  afterAll(async () => {
    await flood.stop();
  });

  test('attack: 600 connections stall (300 headers never finished, 300 bodies never finished) and never close their side — after their deadline a real SDK client over Streamable HTTP is served', async () => {
    const stalled = await Promise.all(
      Array.from({ length: 600 }, (_, i) => stall(at, i % 2 === 0 ? UNFINISHED_HEADERS : unfinishedBody())),
    );
    // The server hangs up on every one of them: at once past the connection cap, else at the deadline.
    const answers = await Promise.all(stalled.map((s) => s.hungUp));
    const timedOut = answers.filter((text) => /^HTTP\/1\.1 408/.test(text)).length;
    expect(timedOut).toBeGreaterThan(0);
    expect(answers.every((text) => text === '' || /^HTTP\/1\.1 408/.test(text))).toBe(true);
    // The stalled sockets stay open on this side: only the server's destroy frees its places.
    expect(stalled.filter((s) => !s.socket.destroyed).length).toBeGreaterThan(0);
    // The server learns of its own closes a moment after the client sees them: a connect racing
    // them may still be dropped, so the client tries again (bounded by attempts, not time).
    let served: string[] | undefined;
    for (let attempt = 0; attempt < 20 && served === undefined; attempt++) {
      try {
        const client = await connectClient(flood.url, 'modern');
        served = (await client.listTools()).tools.map((t) => t.name);
        await client.close();
      } catch {
        served = undefined;
      }
    }
    expect(served).toContain('skill_list');
    for (const s of stalled) s.socket.destroy();
  }, 120_000);
});

describe('the per-address cap (2 per address; 127.0.0.2 is a trusted proxy)', () => {
  let capped: HttpServer;
  let at: number;
  beforeAll(async () => {
    capped = await startHttp({
      SKILL_MCP_HTTP_MAX_CONNECTIONS_PER_ADDRESS: '2',
      SKILL_MCP_HTTP_TRUSTED_PROXIES: '127.0.0.2',
      SKILL_MCP_HTTP_REQUEST_TIMEOUT_MS: '60000',
      SKILL_MCP_HTTP_HEADERS_TIMEOUT_MS: '60000',
    });
    at = Number(new URL(capped.url).port);
  });
  afterAll(async () => {
    await capped.stop();
  });

  test('attack: one address holds its 2 connections — the 3rd is refused 429 saying why; another address is served; freed places serve again', async () => {
    const held = await Promise.all([stall(at, UNFINISHED_HEADERS), stall(at, UNFINISHED_HEADERS)]);
    const third = await stall(at, UNFINISHED_HEADERS);
    const refused = await third.hungUp;
    expect(refused).toMatch(/^HTTP\/1\.1 429/);
    expect(refused).toMatch(/SKILL_MCP_HTTP_MAX_CONNECTIONS_PER_ADDRESS/);
    expect((await listFrom(at, '127.0.0.3')).status).toBe(200);
    await Promise.all(held.map((s) => new Promise((resolve) => s.socket.once('close', resolve).destroy())));
    // The server counts the closes when it sees them: a request racing them may still be refused.
    let status = 0;
    for (let attempt = 0; attempt < 20 && status !== 200; attempt++) status = (await listFrom(at, '127.0.0.1')).status;
    expect(status).toBe(200);
    third.socket.destroy();
  });

  test('attack: X-Forwarded-For from an untrusted peer is ignored — its connections count as its own address whatever the header says', async () => {
    const held = await Promise.all([
      stall(at, unfinishedBody('X-Forwarded-For: 10.0.0.1\r\n'), '127.0.0.3'),
      stall(at, unfinishedBody('X-Forwarded-For: 10.0.0.2\r\n'), '127.0.0.3'),
    ]);
    const third = await stall(at, unfinishedBody('X-Forwarded-For: 10.0.0.3\r\n'), '127.0.0.3');
    expect(await third.hungUp).toMatch(/^HTTP\/1\.1 429/);
    for (const s of [...held, third]) s.socket.destroy();
  });

  test('through the trusted proxy, the cap counts the client X-Forwarded-For names: its 3rd request at once is refused 429, another client is served', async () => {
    const inFlight = await Promise.all([
      stall(at, unfinishedBody('X-Forwarded-For: 10.0.0.7\r\n'), '127.0.0.2'),
      stall(at, unfinishedBody('X-Forwarded-For: 10.0.0.7\r\n'), '127.0.0.2'),
    ]);
    // Each request is counted once its headers are in: the refusal below must find both counted.
    // A forged entry left of the proxy's own is not believed: the client is the rightmost untrusted hop.
    let third = { status: 0, body: '' };
    for (let attempt = 0; attempt < 20 && third.status !== 429; attempt++)
      third = await listFrom(at, '127.0.0.2', { 'x-forwarded-for': '10.9.9.9, 10.0.0.7' });
    expect(third.status).toBe(429);
    expect(third.body).toMatch(/SKILL_MCP_HTTP_MAX_CONNECTIONS_PER_ADDRESS/);
    expect((await listFrom(at, '127.0.0.2', { 'x-forwarded-for': '10.0.0.8' })).status).toBe(200);
    // Many connections from the proxy itself are not capped as one address.
    expect((await listFrom(at, '127.0.0.2')).status).toBe(200);
    for (const s of inFlight) s.socket.destroy();
  });
});
