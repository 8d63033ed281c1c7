/**
 * Over HTTP every request gets its own `McpServer`, and the tools' declarations are built once per
 * process and shared by all of them (server/tools/definitions.ts). What a client sees must not
 * depend on that: every request lists the same tools with the same schemas, in both eras, and a
 * call's arguments are checked against them on every request alike.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { connectClient, modernPost, startHttp, type HttpServer } from './harness.js';

let server: HttpServer;

beforeAll(async () => {
  server = await startHttp({ SKILL_MCP_RUN_INPUT_BYTES: '54321' });
}, 30_000);

afterAll(async () => {
  await server?.stop();
});

describe('tools over HTTP, declared once per process', () => {
  test('every request lists the same six tools with the same input schemas, in both eras', async () => {
    const first = await modernPost(server.url, 'tools/list');
    const second = await modernPost(server.url, 'tools/list');
    expect(first.status).toBe(200);
    const tools = (
      first.body!['result'] as { tools: Array<{ name: string; inputSchema: { properties: Record<string, { description?: string }> } }> }
    ).tools;
    expect(tools.map((t) => t.name)).toEqual(['skill_list', 'skill_search', 'skill_load', 'skill_file', 'skill_run', 'skill_data_clear']);
    expect(second.body?.['result']).toEqual(first.body?.['result']);
    // The configured budget reaches the description (the declarations are built from the front's settings).
    expect(tools.find((t) => t.name === 'skill_run')?.inputSchema.properties['files']?.description).toContain('54321 bytes');
    const legacy = await connectClient(server.url, 'legacy');
    try {
      const listed = await legacy.listTools();
      expect(listed.tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema }))).toEqual(
        tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema })),
      );
    } finally {
      await legacy.close();
    }
  });

  test('arguments outside a shared schema are refused on every request, and good ones still served', async () => {
    for (let i = 0; i < 3; i++) {
      const refused = await modernPost(
        server.url,
        'tools/call',
        { name: 'skill_list', arguments: { limit: 0 } },
        { 'mcp-name': 'skill_list' },
      );
      const result = refused.body?.['result'] as { isError?: boolean; content?: Array<{ text?: string }> } | undefined;
      const error = refused.body?.['error'] as { message?: string } | undefined;
      // Refused either as a tool error or as a JSON-RPC error, never served.
      expect(result?.isError === true || error !== undefined).toBe(true);
      expect(JSON.stringify(refused.body)).toMatch(/limit/);
      const served = await modernPost(
        server.url,
        'tools/call',
        { name: 'skill_list', arguments: { limit: 1 } },
        { 'mcp-name': 'skill_list' },
      );
      expect((served.body!['result'] as { isError?: boolean }).isError).not.toBe(true);
    }
  });
});
