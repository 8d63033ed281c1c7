/**
 * @module The resolution half of the path rules (docs/architecture.md §5), in one place: every byte
 * the front serves or hashes, and every byte the runner copies into a run, is read through a
 * descriptor this opened. The string half (and the
 * manifest check) happen before, in read.ts; the walk already string-checked what digest.ts hashes.
 * Synchronous on purpose: one native realpath(3) and a few syscalls, where the promise versions
 * cost several round trips per file (bench/RESULTS.md).
 */
import { closeSync, constants, fstatSync, openSync, readlinkSync, realpathSync } from 'node:fs';
import { sep } from 'node:path';
import { SkillMcpError } from './errors.js';
import { isInside } from './paths.js';

/** Opens `rel` (a `/`-separated path inside the skill) read-only; the caller closes `fd`. */
export function openInsideSkill(realDir: string, rel: string): { fd: number; size: number } {
  let real: string;
  try {
    real = realpathSync.native(realDir + sep + rel.split('/').join(sep));
  } catch (error) {
    throw new SkillMcpError('NOT_FOUND', `"${rel}": no such file in this skill.`, { cause: error });
  }
  // Security: a link planted in the skill (or swapped in after the scan) pointing at /etc/passwd
  // or a neighbour skill.
  if (!isInside(realDir, real) || real === realDir) throw new SkillMcpError('OUTSIDE_SKILL', `"${rel}" resolves outside the skill (symlink escape).`);
  let fd: number;
  try {
    // Security: O_NONBLOCK so a FIFO swapped in after the scan cannot hang the open.
    fd = openSync(real, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    throw new SkillMcpError('READ_FAILED', `"${rel}" cannot be opened.`, { cause: error });
  }
  try {
    const info = fstatSync(fd);
    // Security: check what was opened, not what was checked: a swap between the two is caught here.
    if (!info.isFile()) throw new SkillMcpError('NOT_A_FILE', `"${rel}" is not a regular file.`);
    let opened: string | undefined;
    try {
      opened = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      opened = undefined; // no /proc: the realpath check above stands alone
    }
    if (opened !== undefined && !isInside(realDir, opened)) throw new SkillMcpError('OUTSIDE_SKILL', `"${rel}" resolves outside the skill (symlink escape).`);
    return { fd, size: info.size };
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}
