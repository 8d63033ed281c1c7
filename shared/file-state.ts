/**
 * @module What a file's metadata says about its bytes: device, inode, size, mtime and ctime in
 * nanoseconds, as one string. The front's digest index (server/catalog/digest-index.ts) reuses a
 * digest only for a file still in exactly the state it was hashed in; the walk (skill-walk.ts)
 * takes it from the same stat that gives a file's size, so an unchanged file need not be opened.
 * ctime is in it because no user can set it: an edit whose size and mtime are put back still moves it.
 */
import type { BigIntStats } from 'node:fs';

export function fileState(s: BigIntStats): string {
  return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
}
