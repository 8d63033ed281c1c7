/**
 * @module One bounded read of an open file (the runner and the front read skill, declaration,
 * manifest and secret files the same way): the descriptor must be a regular file, and at most
 * `maxBytes` of it is read. Security: the size fstat gives is checked before a byte is read, so a
 * huge or sparse file costs nothing, and the buffer is never larger than the file said it was —
 * a file that grows while it is read is cut at the size it had, never read past the bound.
 */
import { fstatSync, readSync } from 'node:fs';
import type { Stats } from 'node:fs';

export type BoundedRead =
  | { ok: true; bytes: Buffer; stat: Stats }
  | { ok: false; why: 'not-a-file'; stat: Stats }
  | { ok: false; why: 'too-large'; stat: Stats };

/** Reads all of `fd` when it is a regular file of at most `maxBytes`; otherwise says which it is not. */
export function readBounded(fd: number, maxBytes: number): BoundedRead {
  const stat = fstatSync(fd);
  if (!stat.isFile()) return { ok: false, why: 'not-a-file', stat };
  if (stat.size > maxBytes) return { ok: false, why: 'too-large', stat };
  const bytes = Buffer.allocUnsafe(stat.size);
  let got = 0;
  while (got < bytes.length) {
    const n = readSync(fd, bytes, got, bytes.length - got, got);
    if (n === 0) break;
    got += n;
  }
  return { ok: true, bytes: bytes.subarray(0, got), stat };
}
