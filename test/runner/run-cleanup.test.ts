/**
 * A finished run's folder and its copy of the skill are removed after its answer, once its exit
 * line is durable (runner/requests/run-path.ts, afterAnswer → cleanUpRun): what cannot be removed
 * is reported for the `run.cleanup` line, never silently left; the run's uid comes back only once
 * its folder is gone (never, from this runner, when it could not be removed), and a runner told to
 * stop waits for its runs' removals. As root a mount left inside the run folder stands for whatever
 * keeps a removal from finishing; the next runner's start-up sweep is test/runner/workspace-mounts.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { AuditEvent } from '../../runner/audit/events.js';
import { afterAnswer, cleanUpRun } from '../../runner/requests/run-path.js';
import { UidPool } from '../../runner/uids/pool.js';
import { RunCopy } from '../../runner/workspace/run-copy.js';
import { runFolderName } from '../../runner/workspace/scratch.js';
import { runFoldersIn } from '../scratch-wait.js';
import { auditLines, awaitAuditLine, isRoot, prepareAndRun, startRunner, tempDir, text, until, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

/** A run folder as a finished run leaves it: a workspace with a file of the script's, and nested folders. */
function runFolder(scratchDir: string, runId: string): string {
  const dir = join(scratchDir, runFolderName(runId));
  mkdirSync(join(dir, 'work', 'out', 'deep'), { recursive: true });
  writeFileSync(join(dir, 'work', 'out', 'deep', 'result.txt'), 'done');
  return dir;
}

describe("the cleanup after a run's exit line", () => {
  it('removes the run folder and has nothing to record when all of it went', async () => {
    const scratchDir = tempDir('cleanup');
    const runId = '0123456789abcdef';
    const dir = runFolder(scratchDir, runId);
    const cleanup = await cleanUpRun(dir, false, new RunCopy(scratchDir, runId));
    expect(cleanup).toEqual({ removed: true });
    expect(existsSync(dir)).toBe(false);
  });

  it.skipIf(!isRoot)(
    'a run folder that cannot be removed (a mount inside it) is reported as workspace_left, not ignored (root only: mounts)',
    async () => {
      const scratchDir = tempDir('cleanup-left');
      const runId = 'fedcba9876543210';
      const dir = runFolder(scratchDir, runId);
      const held = join(dir, 'work', 'held');
      mkdirSync(held);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'skill-mcp-test', held]);
      try {
        const cleanup = await cleanUpRun(dir, false, new RunCopy(scratchDir, runId));
        expect(cleanup).toEqual({ removed: false, line: { workspace_left: true } });
        expect(existsSync(held)).toBe(true);
      } finally {
        execFileSync('umount', [held]);
      }
    },
  );

  it.skipIf(!isRoot)("a root runner's workspace tmpfs comes off first, so its folder goes too (root only: mounts)", async () => {
    const scratchDir = tempDir('cleanup-tmpfs');
    const runId = '00112233445566ff';
    const dir = runFolder(scratchDir, runId);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'skill-mcp-test', join(dir, 'work')]);
    const cleanup = await cleanUpRun(dir, true, new RunCopy(scratchDir, runId));
    expect(cleanup).toEqual({ removed: true });
    expect(existsSync(dir)).toBe(false);
  });
});

/** A pool of one uid that no process holds: whether a second run could take it is one `take`. */
function oneUidPool(): { pool: UidPool; uid: number } {
  return { pool: new UidPool({ first: 62090, last: 62090 }, [], undefined, () => new Set()), uid: 62090 };
}

/** An audit log that keeps its lines in memory and writes them at once. */
function memoryAudit(): { append(line: AuditEvent): Promise<void>; lines: AuditEvent[] } {
  const lines: AuditEvent[] = [];
  return { lines, append: async (line) => void lines.push(line) };
}

describe('after the answer: the removal, then the uid', () => {
  it('attack: a second run takes the uid of a run whose folder is still being removed — the uid comes back only once the folder is gone', async () => {
    const scratchDir = tempDir('after-answer');
    const runId = '0a0b0c0d0e0f0102';
    const dir = runFolder(scratchDir, runId);
    // Enough entries that the removal takes a while: a release before it would be seen below.
    for (let i = 0; i < 200; i++) writeFileSync(join(dir, 'work', `f${i}`), 'x');
    const { pool, uid } = oneUidPool();
    expect(await pool.take()).toBe(uid);
    let durable!: () => void;
    const exitLine = new Promise<void>((resolve) => (durable = resolve));
    const audit = memoryAudit();
    const after = afterAnswer({ uidPool: pool, audit }, runId, exitLine, {
      scratch: dir,
      tmpfs: false,
      copy: new RunCopy(scratchDir, runId),
      cgroup: undefined,
      uid,
      emptied: true,
    });
    // Until the exit line is durable nothing is removed, and the uid is the run's.
    await expect(pool.take()).rejects.toThrow(/every uid of the run range is in use/);
    expect(existsSync(dir)).toBe(true);
    durable();
    // Asked again and again while the removal runs: whenever the uid is handed out, the folder is gone.
    for (;;) {
      const got = await pool.take().catch(() => undefined);
      if (got === undefined) continue;
      expect(got).toBe(uid);
      expect(existsSync(dir)).toBe(false);
      break;
    }
    await after;
    expect(audit.lines).toEqual([]);
  });

  it.skipIf(!isRoot)(
    'attack: a run folder that could not be removed keeps its uid out of the pool for good, and the run.cleanup line says so (root only: mounts)',
    async () => {
      const scratchDir = tempDir('after-answer-left');
      const runId = '1a1b1c1d1e1f1112';
      const dir = runFolder(scratchDir, runId);
      const held = join(dir, 'work', 'held');
      mkdirSync(held);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'skill-mcp-test', held]);
      try {
        const { pool, uid } = oneUidPool();
        await pool.take();
        const audit = memoryAudit();
        await afterAnswer({ uidPool: pool, audit }, runId, Promise.resolve(), {
          scratch: dir,
          tmpfs: false,
          copy: new RunCopy(scratchDir, runId),
          cgroup: undefined,
          uid,
          emptied: true,
        });
        expect(audit.lines).toEqual([{ event: 'run.cleanup', run_id: runId, workspace_left: true }]);
        // Its files are still there, owned by that uid: no later run of this runner may be that uid.
        await expect(pool.take()).rejects.toThrow(/every uid of the run range is in use/);
        await pool.release(uid);
        await expect(pool.take()).rejects.toThrow(/every uid of the run range is in use/);
      } finally {
        execFileSync('umount', [held]);
      }
    },
  );
});

const runners: RunnerHandle[] = [];
afterAll(async () => {
  await Promise.all(runners.map((r) => r.stop()));
});

// Writes `started` in its workspace, then waits (a run that SIGTERM ends).
const HOLD_PY = `import time
open('started', 'w').write('yes')
time.sleep(60)
`;

describe('a runner told to stop', () => {
  it('SIGTERM during a run: the runner ends the run, removes its folders, then writes runner.stop with nothing pending', async () => {
    const skills = writeSkills({
      hold: { run: [{ script: 'hold.py', interpreter: 'python3', timeout: 120 }], files: { 'hold.py': HOLD_PY } },
    });
    const base = tempDir('stop-removal');
    const scratch = join(base, 'scratch');
    const runner = await startRunner({ env: { SKILLS_DIR: skills }, base, args: isRoot ? ['--uid-range', '62091-62098'] : [] });
    runners.push(runner);
    const prepared = await runner.client.prepare({ skill: 'hold', script: 'hold.py', args: [] });
    if (!prepared.ok) throw new Error(prepared.error.message);
    const ran = runner.client
      .run({ skill: 'hold', script: 'hold.py', args: [], confirmToken: prepared.result.confirmToken }, { timeoutMs: 120_000 })
      .catch((error: unknown) => error);
    // The script has started once its marker is in its workspace (a host folder at every level).
    expect(await until(() => runFoldersIn(scratch).some((f) => existsSync(join(scratch, f, 'work', 'started'))), 30_000)).toBe(true);
    await runner.stop();
    await ran;
    expect(runFoldersIn(scratch)).toEqual([]);
    const lines = auditLines(runner.stateDir);
    expect(lines.find((l) => l.event === 'run.exit')).toMatchObject({ ended: 'cancelled' });
    const stop = lines.find((l) => l.event === 'runner.stop');
    expect(stop).toMatchObject({ why: 'SIGTERM' });
    // Its removal came before the stop line: nothing was left for the next start's sweep.
    expect(stop).not.toHaveProperty('removals_pending');
  }, 60_000);
});

// Writes `started`, waits for the test's `go` in its workspace, prints its uid.
const WAIT_PY = `import os, time
open('started', 'w').write('yes')
while not os.path.exists('go'):
    time.sleep(0.02)
print(os.getuid())
`;

describe('a root runner with one run uid', () => {
  it.skipIf(!isRoot)(
    'attack: the next run would get the uid of a run whose folder is still on disk — it is refused BUSY instead, and runs as that uid only after a removal (root only: per-run uids)',
    async (ctx) => {
      const skills = writeSkills({
        quick: { run: [{ script: 'uid.py', interpreter: 'python3' }], files: { 'uid.py': 'import os\nprint(os.getuid())\n' } },
        wait: { run: [{ script: 'wait.py', interpreter: 'python3', timeout: 60 }], files: { 'wait.py': WAIT_PY } },
      });
      const base = tempDir('one-uid');
      const scratch = join(base, 'scratch');
      const runner = await startRunner({
        env: { SKILLS_DIR: skills, SKILL_MCP_MAX_RUNS: '1' },
        base,
        args: ['--uid-range', '62099-62099'],
      });
      runners.push(runner);
      // The uid comes back after each removal: one after another, every run gets it.
      for (let i = 0; i < 3; i++) expect(text((await prepareAndRun(runner.client, 'quick', 'uid.py')).result.stdout)).toBe('62099\n');
      const prepared = await runner.client.prepare({ skill: 'wait', script: 'wait.py', args: [] });
      if (!prepared.ok) throw new Error(prepared.error.message);
      const pending = runner.client.run(
        { skill: 'wait', script: 'wait.py', args: [], confirmToken: prepared.result.confirmToken },
        { timeoutMs: 60_000 },
      );
      expect(await until(() => runFoldersIn(scratch).some((f) => existsSync(join(scratch, f, 'work', 'started'))), 30_000)).toBe(true);
      const folder = join(scratch, readdirSync(scratch).find((f) => existsSync(join(scratch, f, 'work', 'started')))!);
      // An immutable file in the run folder stands for anything that keeps its removal from finishing.
      const pin = join(folder, 'pinned');
      writeFileSync(pin, 'x');
      try {
        execFileSync('chattr', ['+i', pin], { stdio: 'ignore' });
      } catch {
        writeFileSync(join(folder, 'work', 'go'), '');
        await pending;
        ctx.skip(); // a scratch file system without the immutable flag
      }
      try {
        writeFileSync(join(folder, 'work', 'go'), '');
        const ran = await pending;
        if (!ran.ok) throw new Error(ran.error.message);
        expect(text(ran.result.stdout)).toBe('62099\n');
        // The result says nothing of the removal (it ran after the answer); the log does.
        expect(ran.result.filesNote).toBeUndefined();
        expect(await awaitAuditLine(runner.stateDir, (l) => l.event === 'run.cleanup' && l.run_id === ran.result.runId)).toMatchObject({
          workspace_left: true,
        });
        const next = await runner.client.prepare({ skill: 'quick', script: 'uid.py', args: [] });
        if (!next.ok) throw new Error(next.error.message);
        const refused = await runner.client.run(
          { skill: 'quick', script: 'uid.py', args: [], confirmToken: next.result.confirmToken },
          { timeoutMs: 30_000 },
        );
        expect(refused.ok ? 'ran' : refused.error.code).toBe('BUSY');
        // It never started: no accept line for a second run after the held one.
        expect(auditLines(runner.stateDir).filter((l) => l.event === 'run.accept')).toHaveLength(4);
      } finally {
        execFileSync('chattr', ['-i', pin]);
      }
    },
    90_000,
  );
});
