/**
 * What the runner cleans and checks at start: run folders a crashed runner left under the scratch
 * directory (removed, only its own, never through a symlink), and an environ it could not scrub
 * (hosted: every run refused; standalone: a warning).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditLines, startRunner, tempDir, uidRange, writeSkills } from './harness.js';

const skills = writeSkills({
  s: { run: [{ script: 'a.js', interpreter: 'node', timeout: 5 }], files: { 'a.js': 'process.stdout.write("ran")' } },
});

/** A pid no process has now: one of a child that has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

describe('stale scratch folders', () => {
  it('a crashed runner\'s run folders are removed at start, counted in runner.start; symlinks, live runners\' and foreign folders are left', async () => {
    const base = tempDir('stale');
    const scratch = join(base, 'scratch');
    const outside = tempDir('stale-outside');
    writeFileSync(join(outside, 'precious'), 'keep');
    const dead = deadPid();
    const crashed = join(scratch, `run-${dead}-0123456789abcdef`);
    mkdirSync(join(crashed, 'deep', 'er'), { recursive: true });
    writeFileSync(join(crashed, 'deep', 'er', 'secret.txt'), 'left by a script');
    // A link the dead run planted inside its folder: removing the folder must not descend into it.
    symlinkSync(outside, join(crashed, 'link-out'));
    // An entry with a run-folder name that is a symlink: never followed, never removed.
    const linkNamedLikeRun = join(scratch, `run-${dead}-fedcba9876543210`);
    symlinkSync(outside, linkNamedLikeRun);
    // A live runner's folder (this test process stands in for it) and an unrelated folder.
    const live = join(scratch, `run-${process.pid}-00000000000000aa`);
    mkdirSync(live);
    mkdirSync(join(scratch, 'not-a-run-folder'));

    const runner = await startRunner({ env: { SKILLS_DIR: skills }, base, args: ['--uid-range', uidRange(5)] });
    try {
      expect(existsSync(crashed)).toBe(false);
      expect(existsSync(join(outside, 'precious'))).toBe(true);
      expect(existsSync(linkNamedLikeRun)).toBe(true);
      expect(existsSync(live)).toBe(true);
      expect(existsSync(join(scratch, 'not-a-run-folder'))).toBe(true);
      const start = auditLines(runner.stateDir).find((l) => l['event'] === 'runner.start');
      expect(start).toMatchObject({ scratch_stale_removed: 1, scratch_stale_failed: 0 });
    } finally {
      await runner.stop();
    }
  });
});
