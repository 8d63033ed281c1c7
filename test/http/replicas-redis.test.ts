/**
 * Many replicas, one truth (docs/hosting.md): two `skill-mcp --http` replicas, each with its own
 * runner and state directory, one `MCP_CONFIRM_SECRET`, one real `redis-server` on a loopback port
 * as the spent-token ledger. A token minted on one replica runs on the other and then nowhere
 * again (also after every process restarted); a token raced through both runs once; with Redis
 * killed mid-session runs are refused LEDGER_UNAVAILABLE while every read goes on, and runs resume
 * — with the very token that was refused — once Redis is back.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Client } from '@modelcontextprotocol/client';
import { auditLines, awaitAuditLine, startRunner, tempDir, type RunnerHandle } from '../runner/harness.js';
import { NO_REDIS_REASON, REDIS_SERVER, startRedis, type RedisHandle } from '../redis-harness.js';
import { connectClient, modernPost, REPO, startHttp, type HttpServer } from './harness.js';

const TOKEN = randomBytes(24).toString('hex');
const SECRET = randomBytes(32).toString('hex');
const FRONT_IDS = process.getuid?.() === 0 ? ['--front-uid', '61183', '--front-gid', '61183'] : [];
const UID_RANGES = ['61910-61917', '61918-61925'];
const SCRIPT = { name: 'commit-message', script: 'scripts/check-message.js' };

interface Replica {
  runner: RunnerHandle;
  http: HttpServer;
  client: Client;
}

describe.skipIf(!REDIS_SERVER)(`two HTTP replicas sharing one Redis ledger${REDIS_SERVER ? '' : ` (skipped: ${NO_REDIS_REASON})`}`, () => {
  let redis: RedisHandle;
  const stateDirs = [0, 1].map(() => join(tempDir('replica'), 'state'));
  let a: Replica;
  let b: Replica;

  /** Replica `i`: its runner (own state dir, kept across restarts) and its front on a free port. */
  async function replica(i: number): Promise<Replica> {
    const runner = await startRunner({
      env: {
        SKILL_MCP_UID_RANGE: UID_RANGES[i]!,
        MCP_CONFIRM_SECRET: SECRET,
        SKILL_MCP_REDIS_URL: redis.url,
        SKILL_MCP_AUDIT_HOST_ID: `replica-${i}`,
      },
      stateDir: stateDirs[i]!,
      args: FRONT_IDS,
    });
    const http = await startHttp({
      SKILLS_DIR: `${REPO}skills`,
      SKILL_MCP_RUNNER_SOCKET: runner.socketPath,
      MCP_CONFIRM_MODE: 'auto',
      MCP_CONFIRM_SECRET: SECRET,
      SKILL_MCP_HTTP_TOKEN: TOKEN,
    });
    return { runner, http, client: await connectClient(http.url, i === 0 ? 'modern' : 'legacy', TOKEN) };
  }

  async function stop(r: Replica | undefined): Promise<void> {
    if (!r) return;
    await r.client.close();
    await r.http.stop();
    await r.runner.stop();
  }

  beforeAll(async () => {
    redis = await startRedis();
    [a, b] = await Promise.all([replica(0), replica(1)]);
  });
  afterAll(async () => {
    await Promise.all([stop(a), stop(b)]);
  });

  async function run(r: Replica, args: string[], confirmToken?: string): Promise<{ isError: boolean; value: Record<string, unknown> }> {
    const result = await r.client.callTool({
      name: 'skill_run',
      arguments: { ...SCRIPT, args, ...(confirmToken ? { confirmToken } : {}) },
    });
    return { isError: result.isError === true, value: result.structuredContent as Record<string, unknown> };
  }

  async function mint(r: Replica, args: string[]): Promise<string> {
    const preview = await run(r, args);
    expect(preview.value).toMatchObject({ status: 'confirmation-required' });
    return preview.value['confirmToken'] as string;
  }

  const accepted = (): number => stateDirs.reduce((n, dir) => n + auditLines(dir).filter((l) => l['event'] === 'run.accept').length, 0);

  test('a token minted on A runs on B; then TOKEN_REUSED on A and on B — also after both replicas and both runners restarted', async () => {
    const args = ['feat: mint on one replica and run on the other'];
    const token = await mint(a, args);
    expect((await run(b, args, token)).value).toMatchObject({ status: 'completed', exitCode: 0 });
    for (const r of [a, b]) expect((await run(r, args, token)).value).toMatchObject({ error: { code: 'TOKEN_REUSED' } });

    await Promise.all([stop(a), stop(b)]);
    [a, b] = await Promise.all([replica(0), replica(1)]);
    for (const r of [a, b]) expect((await run(r, args, token)).value).toMatchObject({ error: { code: 'TOKEN_REUSED' } });
  });

  test('the same token sent to A and B at the same moment runs exactly once', async () => {
    for (let round = 0; round < 4; round++) {
      const args = [`fix: race ${round}`];
      const token = await mint(round % 2 ? b : a, args);
      const before = accepted();
      const answers = await Promise.all([run(a, args, token), run(b, args, token)]);
      expect(answers.filter((x) => x.value['status'] === 'completed')).toHaveLength(1);
      expect(answers.filter((x) => x.isError).map((x) => (x.value['error'] as { code: string }).code)).toEqual(['TOKEN_REUSED']);
      expect(accepted()).toBe(before + 1);
    }
  });

  test('Redis killed mid-session: runs refused LEDGER_UNAVAILABLE on both replicas, every read goes on; once Redis is back the refused token runs', async () => {
    const args = ['docs: survive an outage'];
    const token = await mint(a, args);
    await redis.kill();
    try {
      await Promise.all(stateDirs.map((dir) => awaitAuditLine(dir, (l) => l['event'] === 'ledger.unavailable')));
      for (const r of [a, b]) {
        const refused = await run(r, args, token);
        expect(refused.isError).toBe(true);
        expect(refused.value).toMatchObject({
          error: { code: 'LEDGER_UNAVAILABLE', message: expect.stringMatching(/Redis.*SKILL_MCP_REDIS_URL.*Reading skills still works/s) },
        });
        // A preview needs no ledger: it spends nothing.
        expect((await run(r, args)).value).toMatchObject({ status: 'confirmation-required' });
        // Reads: tools, resources, prompts, the skills extension.
        const listed = await r.client.callTool({ name: 'skill_list', arguments: {} });
        expect(listed.isError).not.toBe(true);
        expect((await r.client.callTool({ name: 'skill_load', arguments: { name: 'commit-message' } })).isError).not.toBe(true);
        expect(
          (await r.client.callTool({ name: 'skill_file', arguments: { name: 'commit-message', paths: ['scripts/check-message.js'] } }))
            .isError,
        ).not.toBe(true);
        const resources = await r.client.listResources();
        expect(resources.resources.length).toBeGreaterThan(0);
        expect((await r.client.readResource({ uri: resources.resources[0]!.uri })).contents.length).toBeGreaterThan(0);
        const prompts = await r.client.listPrompts();
        expect(prompts.prompts.length).toBeGreaterThan(0);
        expect((await r.client.getPrompt({ name: prompts.prompts[0]!.name })).messages.length).toBeGreaterThan(0);
      }
      const skills = await modernPost(a.http.url, 'skills/list', {}, { authorization: `Bearer ${TOKEN}` });
      expect(skills.status).toBe(200);
      expect(JSON.stringify(skills.body)).toContain('commit-message');
    } finally {
      await redis.start();
    }
    await Promise.all(stateDirs.map((dir) => awaitAuditLine(dir, (l) => l['event'] === 'ledger.restored')));
    // The refusals burnt nothing: the person's approval still runs, once.
    expect((await run(b, args, token)).value).toMatchObject({ status: 'completed', exitCode: 0 });
    expect((await run(a, args, token)).value).toMatchObject({ error: { code: 'TOKEN_REUSED' } });
  });
});
