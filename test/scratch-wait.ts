/**
 * @module Waiting for a runner to remove its run folders. A run answers once its exit line is
 * durable and removes its folder and copy after (runner/requests/run-path.ts, afterAnswer), so a
 * test that looks for an empty scratch directory right after an answer waits for the removal — on
 * the directory's own change events (inotify), not on a timer.
 */
import { existsSync, readdirSync, watch } from 'node:fs';

/**
 * The run folders (`run-<pid>-<id>`, and `…-skill` copies) in a runner's scratch directory. Not the
 * `…-helper` folders: the runner's copies of its helper and walker bundles and its spare helper's
 * folder stay there while it runs (runner/sandbox/bundles.ts, runner/egress/helper-link.ts).
 */
export function runFoldersIn(scratch: string): string[] {
  return existsSync(scratch) ? readdirSync(scratch).filter((n) => n.startsWith('run-') && !n.endsWith('-helper')) : [];
}

/**
 * Resolves with the run folders left in `scratch` once there are none, or with those still there
 * after `withinMs` (a backstop against a hang: the caller's `toEqual([])` then names them).
 */
export function runFoldersGone(scratch: string, withinMs = 30_000): Promise<string[]> {
  if (runFoldersIn(scratch).length === 0) return Promise.resolve([]);
  return new Promise((resolve) => {
    // Watching first, then looking: a removal between the two is still seen.
    const watcher = watch(scratch);
    const finish = (): void => {
      clearTimeout(timer);
      watcher.close();
      resolve(runFoldersIn(scratch));
    };
    const timer = setTimeout(finish, withinMs);
    watcher.on('change', () => {
      if (runFoldersIn(scratch).length === 0) finish();
    });
    watcher.on('error', finish);
    if (runFoldersIn(scratch).length === 0) finish();
  });
}
