/**
 * SIGTERM stops the HTTP front gracefully: new connections are refused at once, a request already
 * in flight still gets its full answer, then the process exits 0. A request that outlives the
 * grace period is cut and the process still exits.
 */
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { expect, test } from 'vitest';
import { envelope, MODERN, startHttp, type HttpServer } from './harness.js';

const BODY = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'skills/list', params: envelope() });

/**
 * Opens a request whose headers the server has accepted (it answered `100 Continue`, which it
 * does only once its request handler is running) but whose body is still being sent.
 */
async function requestInFlight(server: HttpServer): Promise<{ req: ClientRequest; response: Promise<{ status: number; text: string }> }> {
  const { port } = new URL(server.url);
  let req!: ClientRequest;
  const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path: '/mcp',
        method: 'POST',
        headers: {
          expect: '100-continue',
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'content-length': String(Buffer.byteLength(BODY)),
          'mcp-protocol-version': MODERN,
          'mcp-method': 'skills/list',
        },
      },
      (res: IncomingMessage) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
  });
  req.flushHeaders();
  await new Promise<void>((resolve) => req.once('continue', () => resolve()));
  req.write(BODY.slice(0, 10));
  return { req, response };
}

function stderrLine(server: HttpServer, pattern: RegExp): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => {
      if (pattern.test(server.stderr())) {
        server.process.stderr!.off('data', check);
        resolve();
      }
    };
    server.process.stderr!.on('data', check);
    check();
  });
}

function canConnect(url: string): Promise<boolean> {
  const { port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

test('SIGTERM: an in-flight request finishes with its full answer, new connections are refused, exit 0', async () => {
  const server = await startHttp();
  const { req, response } = await requestInFlight(server);
  server.process.kill('SIGTERM');
  await stderrLine(server, /stopping: 1 request\(s\) in flight/);
  expect(await canConnect(server.url)).toBe(false);
  req.end(BODY.slice(10));
  const answer = await response;
  expect(answer.status).toBe(200);
  expect(JSON.parse(answer.text)).toMatchObject({
    id: 7,
    result: { skills: [expect.objectContaining({ uri: 'skill://commit-message/SKILL.md' })] },
  });
  expect(await server.exited).toBe(0);
  expect(server.stderr()).toMatch(/skill-mcp: stopped\n/);
});

test('SIGTERM: a request that outlives SKILL_MCP_HTTP_SHUTDOWN_GRACE_MS is cut and the process still exits 0', async () => {
  const server = await startHttp({ SKILL_MCP_HTTP_SHUTDOWN_GRACE_MS: '200' });
  const { response } = await requestInFlight(server);
  server.process.kill('SIGTERM');
  await expect(response).rejects.toThrow();
  expect(await server.exited).toBe(0);
  expect(server.stderr()).toMatch(/1 request\(s\) did not finish within SKILL_MCP_HTTP_SHUTDOWN_GRACE_MS and were cut/);
});

test('SIGTERM with nothing in flight exits promptly', async () => {
  const server = await startHttp();
  const started = Date.now();
  server.process.kill('SIGTERM');
  expect(await server.exited).toBe(0);
  // Promptly = without waiting out the 30 s default grace; loose enough for a loaded machine.
  expect(Date.now() - started).toBeLessThan(15_000);
});
