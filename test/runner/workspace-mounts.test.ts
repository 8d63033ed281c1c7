/**
 * The crash path of a root runner's workspace tmpfs (runner/workspace/mount.ts): a runner
 * SIGKILLed mid-run cannot unmount anything (no handler runs), so its run's tmpfs is still mounted
 * on the host — and the next runner on the same scratch directory takes it off and removes the
 * folder before it is ready. At both root levels (bubblewrap, and SKILL_MCP_BWRAP=off); a runner
 * that is not root mounts nothing (test/e2e/skill-run-workspace-cap.test.ts checks that).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mountsAtOrBelow } from '../../runner/workspace/mount.js';
import { expectedLevel } from '../levels.js';
import { awaitAuditLine, isRoot, startRunner, tempDir, uidRange, until, writeSkills } from './harness.js';

const skills = writeSkills({
  hold: {
    run: [{ script: 'hold.py', interpreter: 'python3', timeout: 60 }],
    files: { 'hold.py': 'import time\nopen("started", "w").write("yes")\ntime.sleep(120)\n' },
  },
});

describe(`a root runner's workspace tmpfs after a crash (${expectedLevel(true)})`, () => {
  it.skipIf(!isRoot)(
    "a runner SIGKILLed mid-run leaves its run's tmpfs mounted; the next runner unmounts it and removes the folder",
    async () => {
      const base = tempDir('ws-mounts');
      const scratch = join(base, 'scratch');
      const env = { SKILLS_DIR: skills, SKILL_MCP_RUN_WORKSPACE_BYTES: String(4 * 1024 * 1024) };
      const first = await startRunner({ env, base, args: ['--uid-range', uidRange(13)] });
      const prepared = await first.client.prepare({ skill: 'hold', script: 'hold.py', args: [] });
      if (!prepared.ok) throw new Error(prepared.error.message);
      const finished = first.client
        .run(
          { skill: 'hold', script: 'hold.py', args: [], confirmToken: prepared.result.confirmToken },
          { timeoutMs: 60_000, cancelId: randomBytes(16).toString('hex') },
        )
        .catch((e: unknown) => e);
      await awaitAuditLine(first.stateDir, (e) => e['event'] === 'run.accept');
      const started = (): boolean =>
        existsSync(scratch) && readdirSync(scratch).some((f) => existsSync(join(scratch, f, 'work', 'started')));
      expect(await until(started, 20_000)).toBe(true);
      expect(mountsAtOrBelow(scratch)).toHaveLength(1);
      const exited = new Promise((r) => first.proc.once('exit', r));
      first.proc.kill('SIGKILL');
      await exited;
      await finished;
      // Nothing ran the runner's clean-up: the mount is still there (the run itself died with the runner).
      expect(mountsAtOrBelow(scratch)).toHaveLength(1);
      const second = await startRunner({ env, base, args: ['--uid-range', uidRange(13)] });
      try {
        expect(mountsAtOrBelow(scratch)).toEqual([]);
        expect(readdirSync(scratch).filter((n) => n.startsWith('run-') && !n.endsWith('-helper'))).toEqual([]);
      } finally {
        await second.stop();
      }
    },
    120_000,
  );
});
