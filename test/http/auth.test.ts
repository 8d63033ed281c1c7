/**
 * Optional bearer-token authentication: off by default; when a token is configured (inline or
 * from a file) every request without exactly that token is 401, in both eras, and the token never
 * appears in the server's output.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { connectClient, modernPost, startHttp, type HttpServer } from './harness.js';

const TOKEN = 'test-token-0123456789abcdef0123456789abcdef';
const servers: HttpServer[] = [];
const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-http-auth-'));

async function start(env: Record<string, string>): Promise<HttpServer> {
  const server = await startHttp(env);
  servers.push(server);
  return server;
}

afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  for (const server of servers) expect(server.stderr()).not.toContain(TOKEN);
  rmSync(dir, { recursive: true, force: true });
});

describe('auth off (no SKILL_MCP_HTTP_TOKEN)', () => {
  test('requests without Authorization are served', async () => {
    const server = await start({});
    expect((await modernPost(server.url, 'skills/list')).status).toBe(200);
  });
});

describe.each([
  ['SKILL_MCP_HTTP_TOKEN', () => ({ SKILL_MCP_HTTP_TOKEN: TOKEN })],
  [
    'SKILL_MCP_HTTP_TOKEN_FILE',
    () => {
      const file = join(dir, 'token');
      writeFileSync(file, `${TOKEN}\n`, { mode: 0o600 });
      return { SKILL_MCP_HTTP_TOKEN_FILE: file };
    },
  ],
])('auth on (%s)', (_name, env) => {
  let server: HttpServer;
  test('no Authorization header: 401 with a Bearer challenge, nothing served', async () => {
    server = await start(env());
    const answer = await modernPost(server.url, 'skills/list');
    expect(answer.status).toBe(401);
    expect(answer.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(answer.body?.['result']).toBeUndefined();
  });

  test('a wrong token, a prefix of the token, and another scheme are 401', async () => {
    for (const authorization of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `Basic ${TOKEN}`, 'Bearer ']) {
      expect((await modernPost(server.url, 'skills/list', {}, { authorization })).status, authorization).toBe(401);
    }
  });

  test('the right token is served, also to the SDK client in both eras', async () => {
    expect((await modernPost(server.url, 'skills/list', {}, { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
    for (const era of ['legacy', 'modern'] as const) {
      const client = await connectClient(server.url, era, TOKEN);
      const tools = await client.listTools();
      expect(tools.tools.map((t) => t.name)).toContain('skill_list');
      await client.close();
    }
  });

  test('the token is checked before the body is read: 401 (not 413) for an unauthenticated body over the cap', async () => {
    const answer = await modernPost(server.url, 'skills/list', { padding: 'x'.repeat(5 * 1024 * 1024) });
    expect(answer.status).toBe(401);
  });

  test('the SDK client without the token cannot connect', async () => {
    await expect(connectClient(server.url, 'modern')).rejects.toThrow();
  });
});

describe('token configuration mistakes stop the server with a message', () => {
  test('a short token is refused at start', async () => {
    await expect(startHttp({ SKILL_MCP_HTTP_TOKEN: 'short' })).rejects.toThrow(/at least 16 characters/);
  });

  test('an unreadable token file is refused at start, naming the variable', async () => {
    await expect(startHttp({ SKILL_MCP_HTTP_TOKEN_FILE: join(dir, 'missing') })).rejects.toThrow(
      /SKILL_MCP_HTTP_TOKEN_FILE cannot be read/,
    );
  });
});
