/**
 * Slow or greedy clients cannot exhaust the HTTP front: a client that never finishes its headers
 * or its body is answered 408 and disconnected at the deadline (slowloris), and connections over
 * SKILL_MCP_HTTP_MAX_CONNECTIONS are dropped while the server keeps serving the others.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { modernPost, startHttp, type HttpServer } from './harness.js';

let server: HttpServer;
let port: number;
beforeAll(async () => {
  server = await startHttp({ SKILL_MCP_HTTP_HEADERS_TIMEOUT_MS: '500', SKILL_MCP_HTTP_REQUEST_TIMEOUT_MS: '1000', SKILL_MCP_HTTP_MAX_CONNECTIONS: '4' });
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
  socket.on('data', (chunk: Buffer) => void (text += chunk.toString('utf8')));
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
    status = await modernPost(server.url, 'skills/list').then((a) => a.status, () => 0);
  }
  expect(status).toBe(200);
});
