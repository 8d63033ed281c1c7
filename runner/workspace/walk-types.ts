/**
 * @module What a run's outputs walk returns, as both sides name it: the walk itself
 * (runner/workspace/outputs.ts, in the walker's bundle) and the runner that reads its answer
 * (walk-link.ts, run-path.ts). Types and one bound only, so the runner holds none of the walk's code.
 */

/** Entries (files, folders, anything) examined at most: bounds the walk of a 100k-file bomb. */
export const MAX_WALK_ENTRIES = 4096;

export interface OutputFile {
  path: string;
  /** Apparent size (st_size) at the end of the run. */
  size: number;
  sha256?: string;
  bytes?: Uint8Array;
  /** Why the bytes are not carried (the file is still listed). */
  omitted?: string;
}

export interface Collected {
  files: OutputFile[];
  /** Why `files` is not the whole workspace, when it is not. */
  note?: string;
  /** Bytes carried in `files`. */
  bytes: number;
}
