/**
 * @module A full garbage collection on demand, for the one place where it pays: right before a
 * multi-MiB `skill_file` batch. Each batch makes ~35 MB of short-lived strings that V8 keeps in
 * large-object space until its next full collection, so without this the garbage of several
 * batches piled up and peak RSS grew with every batch (bench/RESULTS.md). A collection of the
 * front's small heap costs a few ms, next to the ~100 ms such a batch takes.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Finds V8's `gc` (a fresh context is the only way to reach it once exposed), or undefined. */
function exposeGc(): (() => void) | undefined {
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as unknown;
    return typeof gc === 'function' ? (gc as () => void) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Returns a function that runs a full collection, or does nothing where the runtime refuses. The
 * context that reaches `gc` is made on the first call, not at start: ~1 ms nobody needs before a
 * first big batch.
 */
export function fullCollector(): () => void {
  let gc: (() => void) | null | undefined = null;
  return () => {
    if (gc === null) gc = exposeGc();
    gc?.();
  };
}
