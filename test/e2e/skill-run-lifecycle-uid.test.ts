/**
 * The one-bin launch started as root: the front drops to its own uid with a cleared environ, the
 * guard and the runner keep root, the runner clears its environ too.
 *
 * Tier `uid`: the privilege split happens only when the launcher starts as root (the test is skipped
 * otherwise); the front, guard and runner uids and environs do not depend on bubblewrap, which only
 * the runs' sandbox uses. Moved from skill-run-lifecycle.test.ts (level).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ERAS, expectNoLeftovers, serve, skillList, tempDir } from './harness.js';
import { guardOf, runnerPid, writeRunSkills } from './run-skills.js';

let root: string;
beforeAll(() => {
  root = writeRunSkills();
});
afterAll(expectNoLeftovers);

const isRoot = process.getuid?.() === 0;

describe('the one-bin launch started as root', () => {
  // Needs root: the privilege split only happens when the launcher starts as root (CI does).
  test.skipIf(!isRoot)(
    'the front serves as uid 61183 with a cleared environ; the guard and the runner keep root; the runner clears its environ too',
    async () => {
      const secret = 'e2e-secret-value-only-for-the-runner';
      const served = await serve({ SKILLS_DIR: root, E2E_SECRET: secret, SKILL_MCP_STATE_DIR: join(tempDir('state'), 'state') }, ERAS[0]!);
      try {
        await skillList(served.client); // wakes the runner
        const uids = (pid: number): string =>
          /^Uid:\s+(.*)$/m
            .exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]!
            .split(/\s+/)
            .join(' ');
        const runner = runnerPid(served.pid);
        const guard = guardOf(served.pid)!;
        expect(uids(served.pid)).toBe('61183 61183 61183 61183');
        expect(uids(guard)).toBe('0 0 0 0');
        expect(uids(runner)).toBe('0 0 0 0');
        expect(readFileSync(`/proc/${served.pid}/environ`, 'latin1')).not.toContain(secret);
        expect(readFileSync(`/proc/${runner}/environ`, 'latin1')).not.toContain(secret);
      } finally {
        await served.close();
      }
    },
  );
});
