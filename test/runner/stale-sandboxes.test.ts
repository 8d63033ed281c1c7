/**
 * A runner's start finds the sandboxes a dead predecessor left (runner/workspace/scratch.ts,
 * `staleSandboxes`; docs/isolation.md, the go-ahead): bubblewrap processes binding a run folder of
 * a runner that is gone. Real processes stand in for bubblewrap (argv[0] set to a bubblewrap path,
 * the binds bubblewrap would have); one of a live runner, one binding elsewhere and one not named
 * bubblewrap must never be listed.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { removeStaleRunFolders, staleSandboxes } from '../../runner/workspace/scratch.js';

const scratch = realpathSync(mkdtempSync(join(tmpdir(), 'skill-mcp-stale-boxes-')));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  }
  rmSync(scratch, { recursive: true, force: true });
});

/** A pid no process has now: one that ran and was reaped. */
const deadPid = spawnSync('true').pid!;
const ID = '0123456789abcdef';

/** A process whose argv reads `argv0 … <flag> <path> /work` (sh -c sleeping, its own group). */
function standIn(argv0: string, flag: string, path: string): number {
  const child = spawn('/bin/sh', ['-c', 'sleep 1000; :', flag, path, '/work'], { argv0, detached: true, stdio: 'ignore' });
  children.push(child);
  return child.pid!;
}

describe.skipIf(process.platform !== 'linux')('the sandboxes a dead runner left', () => {
  it("lists a bubblewrap binding a dead runner's run folder (work or skill copy), with its uid; never a live runner's, another folder's or another program's", async () => {
    const stale = standIn('/usr/bin/bwrap', '--bind', join(scratch, `run-${deadPid}-${ID}`, 'work'));
    const staleCopy = standIn('bwrap', '--ro-bind', join(scratch, `run-${deadPid}-${ID}-skill`));
    // The vitest main process is alive: a runner of that pid is not gone.
    standIn('/usr/bin/bwrap', '--bind', join(scratch, `run-${process.ppid}-${ID}`, 'work'));
    standIn('/usr/bin/bwrap', '--bind', join(tmpdir(), `run-${deadPid}-${ID}`, 'work'));
    standIn('/usr/bin/bwrap', '--bind', join(scratch, `not-a-run-${deadPid}`));
    standIn('/usr/bin/sleepy', '--bind', join(scratch, `run-${deadPid}-${ID}`, 'work'));
    await new Promise((r) => setTimeout(r, 100));
    const found = staleSandboxes(scratch);
    expect(found.map((p) => p.pid).sort()).toEqual([stale, staleCopy].sort());
    expect(found.every((p) => p.uid === process.getuid!())).toBe(true);
    // A trailing slash in the configured folder finds the same.
    expect(
      staleSandboxes(`${scratch}/`)
        .map((p) => p.pid)
        .sort(),
    ).toEqual([stale, staleCopy].sort());
  });
});

describe('the run folders a dead runner left', () => {
  it('race: a folder another runner starting at the same moment removes between our listing and our removal is gone, not a failure', () => {
    const dir = mkdtempSync(join(scratch, 'folders-'));
    const left = `run-${deadPid}-${ID}`;
    mkdirSync(join(dir, left));
    // Listed, then swept by the other runner before this one reached it.
    const sweptFirst = `run-${deadPid}-${'f'.repeat(16)}`;
    expect(removeStaleRunFolders(dir, [sweptFirst, left])).toEqual({ removed: 1, failed: 0 });
    expect(existsSync(join(dir, left))).toBe(false);
  });
});
