/**
 * @module The scratch directory: the parent of each run's private HOME/TMPDIR. A run folder is
 * named `run-<runner pid>-<run id>` so that a runner starting after a crash can tell the folders
 * its dead predecessors left (a script's files, maybe large, maybe sensitive) from those of
 * another runner alive on the same scratch directory, and remove only the former.
 */
import { lstatSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** A run's scratch folder, or (`-skill`) its private copy of the skill (runner/workspace/run-copy.ts). */
const RUN_FOLDER = /^run-([1-9][0-9]{0,9})-([0-9a-f]{16})(?:-skill)?$/;

/** The folder name of one run of this runner. */
export function runFolderName(runId: string): string {
  return `run-${process.pid}-${runId}`;
}

/** True when no process has that pid (a pid that is ours is a predecessor's: we have no runs yet). */
function isDead(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    // EPERM: it exists under another uid, so it may be a live runner; keep its folders.
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

export interface StaleSweep {
  removed: number;
  /** Stale folders that could not be removed (a same-uid script may have made them unwritable). */
  failed: number;
}

/**
 * Removes the run folders left by runners that are gone. Only names matching the run-folder
 * pattern are touched, and only real directories.
 * Security: never follows a symlink — an entry that is one is left alone, and `rmSync` unlinks
 * links inside a folder rather than descending into them — so a script that planted a link to
 * somewhere else cannot make the next runner delete what it points to. The scratch directory is the
 * runner's own (0711/0700), so no run uid can swap an entry between the check and the removal.
 */
export function removeStaleRunFolders(scratchDir: string): StaleSweep {
  const sweep: StaleSweep = { removed: 0, failed: 0 };
  for (const name of readdirSync(scratchDir)) {
    const match = RUN_FOLDER.exec(name);
    if (!match || !isDead(Number(match[1]))) continue;
    const path = join(scratchDir, name);
    try {
      if (!lstatSync(path).isDirectory()) continue;
      rmSync(path, { recursive: true, force: true });
      sweep.removed += 1;
    } catch {
      sweep.failed += 1;
    }
  }
  return sweep;
}
