/**
 * Progress while a run lasts, as a client sees it (both eras): a run of ~2.5 s sends progress
 * notifications naming the script and the elapsed time, in order.
 *
 * Tier `front`: the notifications are the front's, timed by the front while it waits for the runner's
 * answer; the script only sleeps and prints, the same at every isolation level and uid. Moved from
 * skill-run-lifecycle.test.ts (level), which keeps the kill and cleanup tests.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ERAS, expectNoLeftovers, serve, tempDir, type Served } from './harness.js';
import { askToken, writeRunSkills } from './run-skills.js';

let root: string;
beforeAll(() => {
  root = writeRunSkills();
});
afterAll(expectNoLeftovers);

describe.each(ERAS)('progress while a run lasts, $name', (era) => {
  let served: Served;

  /** Phase 1 for `script` with `args`; returns the arguments of phase 2. */
  const approved = async (script: string, args: string[]) => {
    const preview = await askToken(served.client, { name: 'reporter', script, args });
    return { name: 'reporter', script, args, confirmToken: preview.confirmToken };
  };

  beforeAll(async () => {
    served = await serve({ SKILLS_DIR: root, SKILL_MCP_STATE_DIR: join(tempDir('state'), 'state') }, era);
  });
  afterAll(async () => {
    await served?.close();
  });

  test('progress: a run lasting ~2.5 s sends progress notifications with the elapsed time', async () => {
    const progress: { progress: number; message?: string }[] = [];
    const result = await served.client.callTool(
      { name: 'skill_run', arguments: await approved('scripts/sleep.js', ['2500']) },
      { onprogress: (p) => void progress.push(p as never) },
    );
    expect(result.isError, JSON.stringify(result)).not.toBe(true);
    expect((result.structuredContent as { stdout: string }).stdout).toBe('started\nslept 2500\n');
    expect(progress.length).toBeGreaterThanOrEqual(1);
    expect(progress[0]!.message).toMatch(/reporter\/scripts\/sleep\.js running for \d+ s/);
    expect(progress.map((p) => p.progress)).toEqual([...progress.map((p) => p.progress)].sort((a, b) => a - b));
  });
});
