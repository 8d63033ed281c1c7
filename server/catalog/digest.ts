/**
 * @module The digest and size a skill's entry publishes for one file, computed from the bytes a
 * read would serve: the same checks as read.ts (realpath inside the skill, open, then check what
 * was opened), but synchronous and streamed through a scratch buffer. Digesting a catalog is
 * tens of thousands of small files: as promises that was ~6 round trips per file (6 s for the
 * 50,000 files of bench/), here it is a few microseconds per syscall and no file is held whole.
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readSync, readlinkSync, realpathSync } from 'node:fs';
import { sep } from 'node:path';
import { SkillMcpError } from '../../shared/errors.js';
import { isInside } from '../../shared/paths.js';

export interface FileDigest {
  /** Lowercase hex SHA-256 of the bytes hashed. */
  hex: string;
  /** How many bytes were hashed (at most `maxBytes`, like a read). */
  size: number;
}

/**
 * Hashes `rel` (a path from the skill's own walk, already string-checked) inside `realDir`.
 * Throws a SkillMcpError when a read would refuse the file.
 */
export function digestServedFile(realDir: string, rel: string, maxBytes: number, scratch: Buffer): FileDigest {
  let real: string;
  try {
    // The native realpath(3): one syscall, where the JS realpathSync lstat()s every path component.
    real = realpathSync.native(realDir + sep + rel.split('/').join(sep));
  } catch (error) {
    throw new SkillMcpError('NOT_FOUND', `"${rel}": no such file in this skill.`, { cause: error });
  }
  // Security: a file swapped for a link to /etc/shadow after the scan must not even be hashed.
  if (!isInside(realDir, real) || real === realDir) throw new SkillMcpError('OUTSIDE_SKILL', `"${rel}" resolves outside the skill (symlink escape).`);
  let fd: number;
  try {
    // Security: O_NONBLOCK so a FIFO swapped in after the scan cannot hang the (synchronous) open.
    fd = openSync(real, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    throw new SkillMcpError('READ_FAILED', `"${rel}" cannot be opened.`, { cause: error });
  }
  try {
    // Security: check what was opened, not what was checked: a swap between the two is caught here.
    if (!fstatSync(fd).isFile()) throw new SkillMcpError('NOT_A_FILE', `"${rel}" is not a regular file.`);
    let opened: string | undefined;
    try {
      opened = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      opened = undefined;
    }
    if (opened !== undefined && !isInside(realDir, opened)) throw new SkillMcpError('OUTSIDE_SKILL', `"${rel}" resolves outside the skill (symlink escape).`);
    const hash = createHash('sha256');
    let size = 0;
    while (size < maxBytes) {
      const got = readSync(fd, scratch, 0, Math.min(scratch.length, maxBytes - size), size);
      if (got === 0) break;
      hash.update(scratch.subarray(0, got));
      size += got;
    }
    return { hex: hash.digest('hex'), size };
  } finally {
    closeSync(fd);
  }
}
