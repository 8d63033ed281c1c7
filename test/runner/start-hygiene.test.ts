/**
 * What the runner cleans and checks at start: run folders a crashed runner left under the scratch
 * directory (removed, only its own, never through a symlink), and an environ it could not scrub
 * (hosted: every run refused; standalone: a warning).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditLines, isRoot, prepareAndRun, startRunner, tempDir, uidRange, writeSkills, text } from './harness.js';

const skills = writeSkills({
  s: { run: [{ script: 'a.js', interpreter: 'node', timeout: 5 }], files: { 'a.js': 'process.stdout.write("ran")' } },
});

/** A pid no process has now: one of a child that has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

describe('stale scratch folders', () => {
  it("a crashed runner's run folders are removed at start, counted in runner.start; symlinks, live runners' and foreign folders are left", async () => {
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
      // runner.start is written before a runner's first decided line (docs/audit.md): decide one.
      expect(await runner.client.prepare({ skill: 'no-such-skill', script: 'a.js', args: [] })).toMatchObject({ ok: false });
    } finally {
      await runner.stop();
    }
    const start = auditLines(runner.stateDir).find((l) => l['event'] === 'runner.start');
    expect(start).toMatchObject({ scratch_stale_removed: 1, scratch_stale_failed: 0 });
  });
});

/**
 * A real scrub failure, no test hook: the runner starts in its own mount namespace where /proc is
 * bound read-only, so opening /proc/self/mem for writing fails with EROFS while every other /proc
 * read still works. (Measured: a process that changes uid in-process is non-dumpable and gets
 * EACCES there, but the runner never does that before its scrub; one started under another uid
 * by setpriv is dumpable again after exec and scrubs fine.)
 */
const READ_ONLY_PROC = [
  'unshare',
  '--mount',
  '--propagation',
  'private',
  '--',
  'sh',
  '-c',
  'mount --bind /proc /proc && mount -o remount,bind,ro /proc && exec "$@"',
  'unscrubbed-runner',
];
const GRANT = JSON.stringify([{ skill: 's', script: 'a.js' }]);

describe.skipIf(!isRoot)('an environ the runner could not scrub (root only: needs a mount namespace with a read-only /proc)', () => {
  it('hosted (MCP_SKILLS_PATH): describe says runs are not allowed, prepare and run are refused ENVIRON_UNSCRUBBED, audit says environ-unscrubbed', async () => {
    const runner = await startRunner({
      env: { MCP_SKILLS_PATH: skills, MCP_SKILL_RUN: GRANT },
      spawnPrefix: READ_ONLY_PROC,
      args: ['--uid-range', uidRange(5)],
    });
    try {
      const described = await runner.client.describe();
      expect(described).toMatchObject({
        ok: true,
        result: { runsAllowed: false, environ: { scrubbed: false }, runsRefusedWhy: expect.stringContaining('environ-unscrubbed') },
      });
      expect(described.ok && described.result.skills[0]!.scripts[0]).toMatchObject({ granted: true, runnable: false });
      expect(await runner.client.prepare({ skill: 's', script: 'a.js', args: [] })).toMatchObject({
        ok: false,
        error: { code: 'ENVIRON_UNSCRUBBED' },
      });
      // A token from anywhere does not help: the refusal comes before the token is even read.
      expect(await runner.client.run({ skill: 's', script: 'a.js', args: [], confirmToken: 'skm1.x.y' })).toMatchObject({
        ok: false,
        error: { code: 'ENVIRON_UNSCRUBBED' },
      });
      const lines = auditLines(runner.stateDir);
      expect(lines.find((l) => l['event'] === 'runner.start')).toMatchObject({
        environ_scrubbed: false,
        hosted: true,
        runs_refused: 'ENVIRON_UNSCRUBBED',
      });
      expect(lines.filter((l) => l['event'] === 'run.reject')).toMatchObject([
        { reason: 'environ-unscrubbed', skill: 's', script: 'a.js' },
      ]);
      expect(lines.some((l) => l['event'] === 'run.accept')).toBe(false);
      expect(runner.stderr()).toMatch(/warning: could not zero the environ block \(EROFS\)/);
    } finally {
      await runner.stop();
    }
  });

  it("hosted (MCP_DATA_DIR) with MCP_SKILL_ALLOW_UNSCRUBBED=1: the owner's override lets granted runs through", async () => {
    const runner = await startRunner({
      env: { MCP_DATA_DIR: tempDir('data'), SKILLS_DIR: skills, MCP_SKILL_RUN: GRANT, MCP_SKILL_ALLOW_UNSCRUBBED: '1' },
      spawnPrefix: READ_ONLY_PROC,
      args: ['--uid-range', uidRange(5)],
    });
    try {
      expect(await runner.client.describe()).toMatchObject({ ok: true, result: { runsAllowed: true, environ: { scrubbed: false } } });
      expect(text((await prepareAndRun(runner.client, 's', 'a.js')).result.stdout)).toBe('ran');
      expect(auditLines(runner.stateDir).find((l) => l['event'] === 'runner.start')).toMatchObject({
        environ_scrubbed: false,
        hosted: true,
        runs_refused: null,
      });
    } finally {
      await runner.stop();
    }
  });

  it('standalone: only a warning on stderr; runs are allowed', async () => {
    const runner = await startRunner({ env: { SKILLS_DIR: skills }, spawnPrefix: READ_ONLY_PROC, args: ['--uid-range', uidRange(5)] });
    try {
      expect(await runner.client.describe()).toMatchObject({ ok: true, result: { runsAllowed: true, environ: { scrubbed: false } } });
      expect(text((await prepareAndRun(runner.client, 's', 'a.js')).result.stdout)).toBe('ran');
      expect(runner.stderr()).toMatch(/warning: could not zero the environ block/);
      expect(auditLines(runner.stateDir).find((l) => l['event'] === 'runner.start')).toMatchObject({
        environ_scrubbed: false,
        hosted: false,
        runs_refused: null,
      });
    } finally {
      await runner.stop();
    }
  });
});
