/**
 * A finished run's folder and its copy of the skill are removed after its exit line
 * (runner/requests/run-path.ts, cleanUpRun): what cannot be removed is reported for the
 * `run.cleanup` line, never silently left. As root a mount left inside the run folder stands for
 * whatever keeps a removal from finishing; the next runner's start-up sweep is
 * test/runner/workspace-mounts.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanUpRun } from '../../runner/requests/run-path.js';
import { RunCopy } from '../../runner/workspace/run-copy.js';
import { runFolderName } from '../../runner/workspace/scratch.js';
import { isRoot, tempDir } from './harness.js';

/** A run folder as a finished run leaves it: a workspace with a file of the script's, and nested folders. */
function runFolder(scratchDir: string, runId: string): string {
  const dir = join(scratchDir, runFolderName(runId));
  mkdirSync(join(dir, 'work', 'out', 'deep'), { recursive: true });
  writeFileSync(join(dir, 'work', 'out', 'deep', 'result.txt'), 'done');
  return dir;
}

describe('the cleanup after a run\'s exit line', () => {
  it('removes the run folder and has nothing to record when all of it went', async () => {
    const scratchDir = tempDir('cleanup');
    const runId = '0123456789abcdef';
    const dir = runFolder(scratchDir, runId);
    const cleanup = await cleanUpRun(dir, false, new RunCopy(scratchDir, runId));
    expect(cleanup).toEqual({ removed: true });
    expect(existsSync(dir)).toBe(false);
  });

  it.skipIf(!isRoot)('a run folder that cannot be removed (a mount inside it) is reported as workspace_left, not ignored (root only: mounts)', async () => {
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
  });

  it.skipIf(!isRoot)('a root runner\'s workspace tmpfs comes off first, so its folder goes too (root only: mounts)', async () => {
    const scratchDir = tempDir('cleanup-tmpfs');
    const runId = '00112233445566ff';
    const dir = runFolder(scratchDir, runId);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'skill-mcp-test', join(dir, 'work')]);
    const cleanup = await cleanUpRun(dir, true, new RunCopy(scratchDir, runId));
    expect(cleanup).toEqual({ removed: true });
    expect(existsSync(dir)).toBe(false);
  });
});
