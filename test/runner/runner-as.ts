/**
 * @module A runner started as a given uid on a folder that uid owns: what the tests that run both
 * bubblewrap levels from one root test process (levels.ts namespaceVariants) share.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync } from 'node:fs';
import { startRunner, tempDir, uidRange } from './harness.js';
import type { RunnerHandle } from './harness.js';

/**
 * A runner as `uid` (dropped with setpriv by a root test process), or as the test's own uid when
 * undefined, on a fresh folder that uid owns; `fileIndex` picks the run-uid range (uidRange).
 */
export async function startRunnerAs(
  uid: number | undefined,
  env: Record<string, string>,
  prefix: string,
  fileIndex: number,
): Promise<RunnerHandle> {
  const base = tempDir(prefix);
  if (uid !== undefined) execFileSync('chown', ['-R', `${uid}:${uid}`, base]);
  chmodSync(base, 0o755);
  return startRunner({
    env,
    base,
    args: ['--uid-range', uidRange(fileIndex)],
    ...(uid !== undefined ? { spawnPrefix: ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups'] } : {}),
  });
}
