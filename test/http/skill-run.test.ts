/**
 * `skill_run` over HTTP: the stateless front (a fresh server per request) reaches a runner
 * started on its own (`SKILL_MCP_RUNNER_SOCKET`, as in hosted or multi-replica setups), and the
 * one-time token path works across requests in both eras: preview + token, run once, reuse refused.
 * Runs need an authenticated client: without a configured bearer token, whoever reaches the port
 * could ask for a run and approve it as well, so `skill_run` is refused `AUTH_REQUIRED` there.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startRunner, tempDir, type RunnerHandle } from '../runner/harness.js';
import { connectClient, REPO, startHttp, type HttpServer } from './harness.js';

let runner: RunnerHandle;
let server: HttpServer;
let open: HttpServer;
let base: string;
const TOKEN = randomBytes(24).toString('hex');
beforeAll(async () => {
  base = tempDir('http-runner');
  // Run uids apart from the runner (61184-61279) and e2e (61600-61855) suites' ranges. As root the
  // front drops to uid 61183: the runner admits it (the hosted recipe).
  runner = await startRunner({
    env: { SKILL_MCP_UID_RANGE: '61900-61907' },
    base,
    args: process.getuid?.() === 0 ? ['--front-uid', '61183', '--front-gid', '61183'] : [],
  });
  const env = { SKILLS_DIR: `${REPO}skills`, SKILL_MCP_RUNNER_SOCKET: runner.socketPath, MCP_CONFIRM_MODE: 'auto' };
  [server, open] = await Promise.all([startHttp({ ...env, SKILL_MCP_HTTP_TOKEN: TOKEN }), startHttp(env)]);
}, 30_000);
afterAll(async () => {
  await Promise.all([server?.stop(), open?.stop()]);
  await runner?.stop();
  rmSync(base, { recursive: true, force: true });
});

async function run(client: Client, args: Record<string, unknown>): Promise<{ isError: boolean; value: Record<string, unknown> }> {
  const result = await client.callTool({
    name: 'skill_run',
    arguments: { name: 'commit-message', script: 'scripts/check-message.js', ...args },
  });
  const text = (result.content as { text?: string }[]).map((c) => c.text ?? '').join('');
  return { isError: result.isError === true, value: (result.structuredContent ?? JSON.parse(text)) as Record<string, unknown> };
}

describe.each(['legacy', 'modern'] as const)('skill_run over HTTP, %s era, token path', (era) => {
  test('first call previews and mints a token; the second runs once; a third use is TOKEN_REUSED', async () => {
    const client = await connectClient(server.url, era, TOKEN);
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
  const client = new Client(
    { name: 'skill-mcp-http-test', version: '0.0.0' },
    { capabilities: { elicitation: { form: {} } }, ...(era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {}) },
  );
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push(request.params.message);
    return { action, content: {} };
  });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }),
  );
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
      expect((await run(client, { args: ['fix: token path'] })).value).toMatchObject({
        status: 'confirmation-required',
        confirmToken: expect.any(String),
      });
      expect(asked).toEqual([]);
    } finally {
      await client.close();
    }
  });
});

describe.each(['legacy', 'modern'] as const)('skill_run over HTTP without a configured bearer token (the default), %s era', (era) => {
  test('an unauthenticated POST cannot preview and then run a script: AUTH_REQUIRED says how to configure the token; nothing is prepared', async () => {
    const client = await connectClient(open.url, era);
    try {
      const before = auditCount('run.prepare');
      const first = await run(client, { args: ['feat: nobody was asked'] });
      expect(first.isError).toBe(true);
      expect(first.value).toMatchObject({ error: { code: 'AUTH_REQUIRED', message: expect.stringMatching(/SKILL_MCP_HTTP_TOKEN_FILE/) } });
      expect(first.value['confirmToken']).toBeUndefined();
      // A token minted elsewhere does not help either.
      const second = await run(client, { args: ['feat: nobody was asked'], confirmToken: 'smt1.forged' });
      expect(second.value).toMatchObject({ error: { code: 'AUTH_REQUIRED' } });
      expect(auditCount('run.prepare')).toBe(before);
    } finally {
      await client.close();
    }
  });

  test('reads go on, and skill_list says why no script runs here', async () => {
    const client = await connectClient(open.url, era);
    try {
      const loaded = await client.callTool({ name: 'skill_load', arguments: { name: 'commit-message' } });
      expect(loaded.isError).not.toBe(true);
      const listed = await client.callTool({ name: 'skill_list', arguments: {} });
      const skill = (
        listed.structuredContent as { skills: { name: string; runnable: boolean; unavailableScripts?: { why: string }[] }[] }
      ).skills.find((s) => s.name === 'commit-message')!;
      expect(skill.runnable).toBe(false);
      expect(skill.unavailableScripts?.[0]?.why).toMatch(/bearer token/);
    } finally {
      await client.close();
    }
  });
});

function auditCount(event: string): number {
  return readFileSync(join(runner.stateDir, 'audit.log'), 'utf8')
    .split('\n')
    .filter((l) => l.includes(`"event":"${event}"`)).length;
}
