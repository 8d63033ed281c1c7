/**
 * The run slots over HTTP, with the SDK's own `Client`: a runner allowed one run at a time, a
 * caller over the limit waits the runner's queue time and then gets `BUSY` with the figures
 * (how many run, the limit, its share, when to retry) — and the token it was refused with runs
 * later, once. The runner counts an HTTP caller by a hash of its bearer token, never the token.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Client } from '@modelcontextprotocol/client';
import { bearerClientId } from '../../server/http/auth.js';
import { awaitAllTitled, HELD_JS, heldOutput, release, tags } from '../held-scripts.js';
import { auditLines, startRunner, writeSkills, type RunnerHandle } from '../runner/harness.js';
import { connectClient, startHttp, type HttpServer } from './harness.js';

const TOKEN = randomBytes(24).toString('hex');
let runner: RunnerHandle;
let server: HttpServer;
beforeAll(async () => {
  const skills = writeSkills({ held: { run: [{ script: 'held.js', interpreter: 'node', timeout: 120 }], files: { 'held.js': HELD_JS } } });
  // Run uids apart from the other suites' (skill-run.test.ts has 61900-61907); as root the front
  // drops to uid 61183, which the runner admits (the hosted recipe).
  runner = await startRunner({
    env: { SKILLS_DIR: skills, SKILL_MCP_UID_RANGE: '61908-61915', SKILL_MCP_RUN_QUEUE_MS: '1500' },
    args: ['--max-runs', '1', ...(process.getuid?.() === 0 ? ['--front-uid', '61183', '--front-gid', '61183'] : [])],
  });
  server = await startHttp({
    SKILLS_DIR: skills,
    SKILL_MCP_RUNNER_SOCKET: runner.socketPath,
    MCP_CONFIRM_MODE: 'auto',
    SKILL_MCP_HTTP_TOKEN: TOKEN,
  });
}, 30_000);
afterAll(async () => {
  await server?.stop();
  await runner?.stop();
});

async function call(client: Client, args: Record<string, unknown>): Promise<{ isError: boolean; value: Record<string, unknown> }> {
  const result = await client.callTool({ name: 'skill_run', arguments: { name: 'held', script: 'held.js', ...args } });
  const text = (result.content as { text?: string }[]).map((c) => c.text ?? '').join('');
  return { isError: result.isError === true, value: (result.structuredContent ?? JSON.parse(text)) as Record<string, unknown> };
}

async function approved(client: Client, args: string[]): Promise<Record<string, unknown>> {
  const preview = await call(client, { args });
  expect(preview.value).toMatchObject({ status: 'confirmation-required' });
  return { args, confirmToken: preview.value['confirmToken'] };
}

test('over the limit a caller waits, then gets BUSY with the figures and when to retry; the refused token runs later, once', async () => {
  const [holding, refused] = tags(2);
  const [first, second] = await Promise.all([connectClient(server.url, 'legacy', TOKEN), connectClient(server.url, 'modern', TOKEN)]);
  try {
    const running = call(first, await approved(first, [holding!]));
    const seen = await awaitAllTitled([`held:${holding}`]);
    const later = await approved(second, [refused!]);
    const busy = await call(second, later);
    expect(busy.isError).toBe(true);
    expect(busy.value).toMatchObject({
      error: { code: 'BUSY', message: expect.stringMatching(/^1 of 1 runs are in progress.*same confirmToken/) },
      busy: { running: 1, maxRuns: 1, queued: 0, clientRunning: 1, clientShare: 1 },
    });
    const figures = busy.value['busy'] as { waitedMs: number; retryAfterMs: number };
    expect(figures.waitedMs).toBeGreaterThanOrEqual(1400);
    expect(figures.retryAfterMs).toBeGreaterThan(0);

    release(seen);
    expect((await running).value).toMatchObject({ status: 'completed', exitCode: 0 });
    const again = call(second, later);
    release(await awaitAllTitled([`held:${refused}`]));
    const ran = await again;
    expect(ran.value).toMatchObject({ status: 'completed', exitCode: 0 });
    expect(heldOutput(String(ran.value['stdout'])).report.tag).toBe(refused);
    expect((await call(second, later)).value).toMatchObject({ error: { code: 'TOKEN_REUSED' } });

    // Both eras' callers hold the same token: one client to the runner, named by its hash alone.
    const accepts = auditLines(runner.stateDir).filter((l) => l['event'] === 'run.accept');
    expect(accepts.map((l) => l['client'])).toEqual([bearerClientId(TOKEN), bearerClientId(TOKEN)]);
    expect(JSON.stringify(auditLines(runner.stateDir))).not.toContain(TOKEN);
  } finally {
    await Promise.all([first.close(), second.close()]);
  }
});
