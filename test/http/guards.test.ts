/**
 * The HTTP front's gates, against the built server on a real loopback socket: browser origins
 * and DNS-rebinding Host names refused, protocol headers checked against the body, unknown
 * methods and paths answered as such, and request bodies capped before they are buffered.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { errorCode, modernPost, startHttp, type HttpServer } from './harness.js';

let server: HttpServer;
beforeAll(async () => {
  server = await startHttp({ SKILL_MCP_HTTP_MAX_BODY_BYTES: '65536' });
});
afterAll(async () => {
  await server.stop();
});

describe('Origin and Host (browser attacks)', () => {
  test('a cross-site Origin is refused with 403 before anything is served', async () => {
    const answer = await modernPost(server.url, 'skills/list', {}, { origin: 'https://evil.example' });
    expect(answer.status).toBe(403);
    expect(answer.body?.['result']).toBeUndefined();
  });

  test('the opaque "null" Origin (sandboxed iframe) is refused', async () => {
    expect((await modernPost(server.url, 'skills/list', {}, { origin: 'null' })).status).toBe(403);
  });

  test('a localhost Origin and a request without Origin (non-browser client) are served', async () => {
    expect((await modernPost(server.url, 'skills/list', {}, { origin: 'http://localhost:5173' })).status).toBe(200);
    expect((await modernPost(server.url, 'skills/list')).status).toBe(200);
  });

  test('DNS rebinding: a foreign Host header is refused even from loopback', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const { port } = new URL(server.url);
      const req = httpRequest(
        { host: '127.0.0.1', port, path: '/mcp', method: 'POST', headers: { host: 'evil.example', 'content-type': 'application/json' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end('{}');
    });
    expect(status).toBe(403);
  });

  test('another path than /mcp is 404', async () => {
    const response = await fetch(server.url.replace('/mcp', '/admin'), { method: 'POST', body: '{}' });
    expect(response.status).toBe(404);
  });
});

describe('protocol headers (2026-07-28 over HTTP)', () => {
  test('a missing Mcp-Method header is 400 / -32020', async () => {
    const answer = await modernPost(server.url, 'skills/list', {}, { 'mcp-method': null });
    expect([answer.status, errorCode(answer)]).toEqual([400, -32020]);
  });

  test('an Mcp-Method header naming another method than the body is 400 / -32020', async () => {
    const answer = await modernPost(server.url, 'skills/list', {}, { 'mcp-method': 'tools/list' });
    expect([answer.status, errorCode(answer)]).toEqual([400, -32020]);
  });

  test('a missing MCP-Protocol-Version header under a 2026-07-28 envelope is 400 / -32020', async () => {
    const answer = await modernPost(server.url, 'skills/list', {}, { 'mcp-protocol-version': null });
    expect([answer.status, errorCode(answer)]).toEqual([400, -32020]);
  });

  test('an MCP-Protocol-Version header disagreeing with the envelope is 400 / -32020', async () => {
    const answer = await modernPost(server.url, 'skills/list', {}, { 'mcp-protocol-version': '2025-11-25' });
    expect([answer.status, errorCode(answer)]).toEqual([400, -32020]);
  });

  test('an unsupported protocol version is 400 / -32022 naming the supported ones', async () => {
    const body = {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/list',
      params: {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2099-01-01',
          'io.modelcontextprotocol/clientInfo': { name: 't', version: '0' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    };
    const response = await fetch(server.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2099-01-01',
        'mcp-method': 'tools/list',
      },
      body: JSON.stringify(body),
    });
    const answer = (await response.json()) as { error: { code: number; data: { supported: string[] } } };
    expect(response.status).toBe(400);
    expect(answer.error.code).toBe(-32022);
    expect(answer.error.data.supported).toContain('2026-07-28');
  });

  test('an unknown method is 404 / -32601', async () => {
    const answer = await modernPost(server.url, 'skills/delete');
    expect([answer.status, errorCode(answer)]).toEqual([404, -32601]);
  });

  test('the same server answers a 2025-era initialize (stateless, no session id)', async () => {
    const response = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '0' } },
      }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('mcp-session-id')).toBeNull();
    expect(await response.text()).toContain('"io.modelcontextprotocol/skills"');
  });
});

describe('request body cap (SKILL_MCP_HTTP_MAX_BODY_BYTES=65536)', () => {
  test('a declared Content-Length over the cap is 413 without reading the body', async () => {
    const big = 'x'.repeat(70_000);
    const answer = await modernPost(server.url, 'skills/list', { padding: big });
    expect(answer.status).toBe(413);
  });

  test('a chunked body (no Content-Length) that grows past the cap is 413', async () => {
    const { port } = new URL(server.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          path: '/mcp',
          method: 'POST',
          headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      for (let i = 0; i < 20; i += 1) req.write('y'.repeat(8192));
      req.end();
    });
    expect(status).toBe(413);
  });

  test('a body under the cap is served', async () => {
    const answer = await modernPost(server.url, 'skills/list', { padding: 'x'.repeat(30_000) });
    expect(answer.status).toBe(200);
  });
});
