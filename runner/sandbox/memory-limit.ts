/**
 * @module Telling a run stopped by its memory cap from any other failure. The cap is RLIMIT_DATA
 * (docs/isolation.md): the kernel refuses the allocation and the interpreter reports it in its own
 * words on stderr, then usually dies. No signal or status marks it, so this reads those words —
 * the ones node and python3 print when an allocation is refused — and only for a run that failed.
 */

/** What node (V8, Buffer, C++ runtime) and python3 print when an allocation is refused. */
const OUT_OF_MEMORY =
  /(?:JavaScript heap out of memory|Array buffer allocation failed|std::bad_alloc|MemoryError|Cannot allocate memory|Fatal process out of memory)/;

/** Only the tail is read: the report comes last, and a flood of output must not be scanned whole. */
const TAIL_BYTES = 8192;

export function hitMemoryLimit(exitCode: number | null, signal: string | null, stderr: Uint8Array): boolean {
  if (exitCode === 0 && signal === null) return false;
  const tail = Buffer.from(stderr.subarray(Math.max(0, stderr.length - TAIL_BYTES))).toString('latin1');
  return OUT_OF_MEMORY.test(tail);
}
