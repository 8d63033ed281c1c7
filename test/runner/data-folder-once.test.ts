/**
 * A skill's data folder (docs/isolation.md, "Data folders"), what the runner decides without the
 * folder's contents mattering: the approval binds the folder's quota (lowered after the preview:
 * DRAFT_CHANGED), and with no queue a second run of a busy folder is refused BUSY, its approval kept.
 *
 * Tier `front`: both are the runner's token and slot logic; the first never runs a script, the
 * second's scripts only mark the folder, the same at every level and uid (how the folder reaches a
 * script at each level is data-folder.test.ts's, level). Moved from data-folder.test.ts.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunner, tempDir, until, type RunnerHandle } from './harness.js';
import { dataEnv, run, writeDataSkills } from './data-skills.js';

const skills = writeDataSkills();
const env = dataEnv(skills);
const base = tempDir('data-runner');
const stateDir = join(base, 'state');
let runner: RunnerHandle;

beforeAll(async () => {
  runner = await startRunner({ env, base, stateDir });
}, 30_000);
afterAll(async () => {
  await runner?.stop();
});

describe('the approval binds the data folder', () => {
  it('the approval binds the folder’s quota: the operator lowering it after the preview makes the run DRAFT_CHANGED', async () => {
    const prepared = await runner.client.prepare({ skill: 'counter', script: 'count.py', args: [] });
    if (!prepared.ok) throw new Error(prepared.error.message);
    await runner.stop();
    runner = await startRunner({ env: { ...env, SKILL_MCP_DATA_BYTES: '5000' }, base, stateDir });
    try {
      const ran = await runner.client.run(
        { skill: 'counter', script: 'count.py', args: [], confirmToken: prepared.result.confirmToken },
        { timeoutMs: 60_000 },
      );
      expect(ran.ok).toBe(false);
      if (!ran.ok) {
        expect(ran.error.code).toBe('DRAFT_CHANGED');
        expect(ran.error.fresh?.willRun.data).toEqual({ folder: 'counter/anyone', bytes: 5000, files: 10_000 });
      }
    } finally {
      await runner.stop();
      runner = await startRunner({ env, base, stateDir });
    }
  }, 90_000);
});

describe('one run at a time per data folder, without a queue', () => {
  it('with no queue (SKILL_MCP_RUN_QUEUE_MS=0) the second run is refused BUSY and keeps its approval', async () => {
    const noQueue = await startRunner({
      env: { ...env, SKILL_MCP_RUN_QUEUE_MS: '0', SKILL_MCP_MAX_RUNS: '2' },
      stateDir: join(tempDir('data-busy'), 'state'),
    });
    try {
      const folder = join(noQueue.stateDir, 'data', 'holder', 'anyone');
      const a = run(noQueue.client, 'holder', 'hold.py', ['a']);
      expect(await until(() => existsSync(join(folder, 'started-a')), 30_000)).toBe(true);
      const prepared = await noQueue.client.prepare({ skill: 'holder', script: 'hold.py', args: ['b'] });
      if (!prepared.ok) throw new Error(prepared.error.message);
      const request = { skill: 'holder', script: 'hold.py', args: ['b'], confirmToken: prepared.result.confirmToken };
      const busy = await noQueue.client.run(request, { timeoutMs: 60_000 });
      expect(busy.ok).toBe(false);
      if (!busy.ok) {
        expect(busy.error.code).toBe('BUSY');
        expect(busy.error.message).toMatch(/data folder/);
      }
      writeFileSync(join(folder, 'go'), '');
      expect((await a).ran.ok).toBe(true);
      // The same approval runs once the folder is free.
      const again = await noQueue.client.run(request, { timeoutMs: 60_000 });
      expect(again.ok).toBe(true);
    } finally {
      await noQueue.stop();
    }
  }, 90_000);
});
