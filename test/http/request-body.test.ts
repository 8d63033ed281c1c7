/**
 * The HTTP front reads a request's body once, under its cap, and hands the SDK handler the parsed
 * JSON (server/http/node-adapter.ts `toMcpRequest`) instead of a body the SDK would clone, read and
 * parse again. What a client is answered must not change: JSON is served in both eras (a leading
 * BOM dropped, as the SDK's reader does), and a body that is empty, not JSON, or JSON that is not a
 * JSON-RPC message gets the SDK's own error, never a result.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { envelope, MODERN, startHttp, type HttpServer } from './harness.js';

let server: HttpServer;

beforeAll(async () => {
  server = await startHttp();
}, 30_000);

afterAll(async () => {
  await server?.stop();
});

const MODERN_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': MODERN,
  'mcp-method': 'tools/list',
};

async function send(body: string, headers: Record<string, string> = MODERN_HEADERS): Promise<{ status: number; text: string }> {
  const response = await fetch(server.url, { method: 'POST', headers, body });
  return { status: response.status, text: await response.text() };
}

const toolsList = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: envelope() });

describe('a request body, read once and handed over parsed', () => {
  test('a JSON request is served, and one behind a UTF-8 byte order mark too', async () => {
    for (const body of [toolsList, `\ufeff${toolsList}`]) {
      const answer = await send(body);
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.text).result.tools).toHaveLength(6);
    }
  });

  test('a body that is not JSON, or empty, is a parse error (-32700), in both eras', async () => {
    for (const [body, headers] of [
      ['not json', MODERN_HEADERS],
      ['', MODERN_HEADERS],
      ['{', { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }],
    ] as const) {
      const answer = await send(body, headers);
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text).error.code).toBe(-32700);
    }
  });

  test('JSON that is not a JSON-RPC message is an invalid request (-32600), not served', async () => {
    for (const body of ['null', '7', '"tools/list"']) {
      const answer = await send(body);
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text).error.code).toBe(-32600);
    }
  });

  test('headers that disagree with the parsed body are still refused by the SDK', async () => {
    const answer = await send(toolsList, { ...MODERN_HEADERS, 'mcp-method': 'prompts/list' });
    expect(answer.status).toBe(400);
    expect(answer.text).toContain('disagree');
  });

  test('a 2025-era initialize (no envelope) is served by the stateless fallback from the parsed body', async () => {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'request-body-test', version: '0' } },
    });
    const answer = await send(body, { 'content-type': 'application/json', accept: 'application/json, text/event-stream' });
    expect(answer.status).toBe(200);
    expect(answer.text).toContain('"protocolVersion":"2025-11-25"');
  });
});
