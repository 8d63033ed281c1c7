/**
 * `skill_run` over HTTP: the stateless front (a fresh server per request) reaches a runner
 * started on its own (`SKILL_MCP_RUNNER_SOCKET`, as in hosted or multi-replica setups), and the
 * one-time token path works across requests in both eras: preview + token, run once, reuse refused.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startRunner, tempDir, type RunnerHandle } from '../runner/harness.js';
import { connectClient, REPO, startHttp, type HttpServer } from './harness.js';

let runner: RunnerHandle;
let server: HttpServer;
let base: string;
beforeAll(async () => {
  base = tempDir('http-runner');
  // Run uids apart from the runner (61184-61279) and e2e (61600-61855) suites' ranges.
  runner = await startRunner({ env: { SKILL_MCP_UID_RANGE: '61900-61907' }, base });
  server = await startHttp({ SKILLS_DIR: `${REPO}skills`, SKILL_MCP_RUNNER_SOCKET: runner.socketPath, MCP_CONFIRM_MODE: 'auto' });
}, 30_000);
afterAll(async () => {
  await server?.stop();
  await runner?.stop();
  rmSync(base, { recursive: true, force: true });
});

async function run(client: Client, args: Record<string, unknown>): Promise<{ isError: boolean; value: Record<string, unknown> }> {
  const result = await client.callTool({ name: 'skill_run', arguments: { name: 'commit-message', script: 'scripts/check-message.js', ...args } });
  const text = (result.content as { text?: string }[]).map((c) => c.text ?? '').join('');
  return { isError: result.isError === true, value: (result.structuredContent ?? JSON.parse(text)) as Record<string, unknown> };
}

describe.each(['legacy', 'modern'] as const)('skill_run over HTTP, %s era, token path', (era) => {
  test('first call previews and mints a token; the second runs once; a third use is TOKEN_REUSED', async () => {
    const client = await connectClient(server.url, era);
    try {
      const args = ['feat(http): serve skills over streamable http'];
      const first = await run(client, { args });
      expect(first.value).toMatchObject({ status: 'confirmation-required', confirmToken: expect.any(String) });
      const token = first.value['confirmToken'] as string;
      const second = await run(client, { args, confirmToken: token });
      expect(second.isError, JSON.stringify(second.value)).toBe(false);
      expect(second.value).toMatchObject({ exitCode: 0, timedOut: false });
      const third = await run(client, { args, confirmToken: token });
      expect(third.isError).toBe(true);
      expect(JSON.stringify(third.value)).toContain('TOKEN_REUSED');
    } finally {
      await client.close();
    }
  });
});

/** A client that declares form elicitation and answers every prompt with `action`. */
async function elicitingClient(era: 'legacy' | 'modern', action: 'accept' | 'decline', asked: string[]): Promise<Client> {
  const client = new Client({ name: 'skill-mcp-http-test', version: '0.0.0' }, { capabilities: { elicitation: { form: {} } }, ...(era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {}) });
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push(request.params.message);
    return { action, content: {} };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  return client;
}

describe('skill_run over HTTP with a client that can show a prompt', () => {
  test('2026-07-28: the person is asked in an input-required round (no state kept between the requests), accept runs it', async () => {
    const asked: string[] = [];
    const client = await elicitingClient('modern', 'accept', asked);
    try {
      const ran = await run(client, { args: ['fix: keep the round stateless'] });
      expect(ran.value).toMatchObject({ status: 'completed', exitCode: 0 });
      expect(asked).toHaveLength(1);
      expect(asked[0]).toContain('scripts/check-message.js');
    } finally {
      await client.close();
    }
  });

  test('2026-07-28: decline runs nothing', async () => {
    const asked: string[] = [];
    const client = await elicitingClient('modern', 'decline', asked);
    try {
      expect((await run(client, { args: ['fix: nothing runs'] })).value).toMatchObject({ status: 'cancelled' });
      expect(asked).toHaveLength(1);
    } finally {
      await client.close();
    }
  });

  test('2025 era over stateless HTTP has no channel for a server request: it takes the token path instead of hanging', async () => {
    const asked: string[] = [];
    const client = await elicitingClient('legacy', 'accept', asked);
    try {
      expect((await run(client, { args: ['fix: token path'] })).value).toMatchObject({ status: 'confirmation-required', confirmToken: expect.any(String) });
      expect(asked).toEqual([]);
    } finally {
      await client.close();
    }
  });
});
