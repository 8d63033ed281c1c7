/**
 * @module The digest and size a skill's entry publishes for one file, computed from the bytes a
 * read would serve: opened by the same checked open as read.ts (open-checked.ts), streamed through
 * a scratch buffer. Digesting a catalog is tens of thousands of small files: as promises that was
 * ~6 round trips per file (6 s for the 50,000 files of bench/), here it is a few microseconds per
 * syscall and no file is held whole.
 */
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, readSync } from 'node:fs';
import { fileState } from '../../shared/file-state.js';
import { DigestIndex, indexKey } from './digest-index.js';
import { openInsideSkill } from './open-checked.js';

const NO_INDEX = DigestIndex.none();

export interface FileDigest {
  /** Lowercase hex SHA-256 of the bytes hashed. */
  hex: string;
  /** How many bytes were hashed (at most `maxBytes`, like a read). */
  size: number;
}

/** The sha256 of the first `maxBytes` of an open file, streamed through `scratch`. */
function hashFd(fd: number, maxBytes: number, scratch: Buffer): FileDigest {
  const hash = createHash('sha256');
  let size = 0;
  while (size < maxBytes) {
    const got = readSync(fd, scratch, 0, Math.min(scratch.length, maxBytes - size), size);
    if (got === 0) break;
    hash.update(scratch.subarray(0, got));
    size += got;
  }
  return { hex: hash.digest('hex'), size };
}

/** What the walk saw of a file: its state (shared/file-state.ts) and size, from one stat. */
export interface WalkedFile {
  state: string;
  size: number;
}

/**
 * Hashes `rel` (a path from the skill's own walk, already string-checked) inside `realDir`.
 * Throws a SkillMcpError when a read would refuse the file. With an enabled `index`
 * (digest-index.ts) a file in a remembered, settled state is not read again; given `walked` (the
 * walk's stat of it), such a file is not even opened.
 *
 * `walked` must not be given in a root process (the catalog decides once): a root process's reads
 * also check the file's owner against the skill folder's (open-inside.ts), which a chown of the
 * folder changes without touching the file's state, so only the checked open may vouch there.
 */
export function digestServedFile(
  realDir: string,
  rel: string,
  maxBytes: number,
  scratch: Buffer,
  index: DigestIndex = NO_INDEX,
  walked?: WalkedFile,
): FileDigest {
  // The warm start: the walk found the file in a state the index holds a settled digest for.
  if (walked !== undefined && index.enabled && walked.size <= maxBytes) {
    const hex = index.lookup(indexKey(realDir, rel), walked.state);
    if (hex !== undefined) return { hex, size: walked.size };
  }
  const { fd } = openInsideSkill(realDir, rel);
  if (!index.enabled) {
    try {
      return hashFd(fd, maxBytes, scratch);
    } finally {
      closeSync(fd);
    }
  }
  try {
    // The state of the very file a read would serve (opened the same way), not of its path.
    const stat = fstatSync(fd, { bigint: true });
    const indexed = stat.size <= BigInt(maxBytes);
    const key = indexKey(realDir, rel);
    const state = fileState(stat);
    if (indexed) {
      const hex = index.lookup(key, state);
      if (hex !== undefined) return { hex, size: Number(stat.size) };
    }
    const started = index.begin(key, state);
    const { hex, size } = hashFd(fd, maxBytes, scratch);
    // Only a file read whole, to the size it had when opened, is remembered.
    if (indexed && BigInt(size) === stat.size) index.record(key, state, started, hex);
    return { hex, size };
  } finally {
    closeSync(fd);
  }
}
