/**
 * @module The resolution half of the path rules (docs/architecture.md §5), in one place: every byte
 * the front serves or hashes, and every byte the runner copies into a run, is read through a
 * descriptor this opened. The string half (and the manifest check) happen before, in read.ts; the
 * walk already string-checked what digest.ts hashes. Synchronous on purpose: one native
 * realpath(3) and a few syscalls, where the promise versions cost several round trips per file
 * (bench/RESULTS.md).
 *
 * The open itself never follows a link: the path is resolved first (links inside the skill are
 * served as what they point to, the walk's rule), checked to stay inside, and then opened one
 * component at a time from the skill's own folder, each with O_NOFOLLOW through
 * `/proc/self/fd/<dir fd>/<name>`. A link swapped in anywhere on the way after the check fails the
 * open (ELOOP) instead of being followed — to /etc/shadow or a neighbour's skill.
 */
import { closeSync, constants, fstatSync, openSync, readlinkSync, realpathSync } from 'node:fs';
import { relative, sep } from 'node:path';
import { SkillMcpError } from './errors.js';
import { isInside } from './paths.js';

const FILE_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY | constants.O_NOFOLLOW;
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/**
 * Opens `segments` below the open folder `rootFd`, one component at a time, never through a link.
 * Security: O_NOFOLLOW on every component (a directory swapped for a link fails with ELOOP or
 * ENOTDIR), and each next component is opened relative to the descriptor of the folder before it,
 * so no rename of a folder above can redirect the walk.
 */
function openBeneath(rootFd: number, segments: readonly string[]): number {
  let dirFd = rootFd;
  try {
    for (const [i, name] of segments.entries()) {
      const last = i === segments.length - 1;
      const fd = openSync(`/proc/self/fd/${dirFd}/${name}`, last ? FILE_FLAGS : DIR_FLAGS);
      if (dirFd !== rootFd) closeSync(dirFd);
      dirFd = fd;
    }
    return dirFd;
  } catch (error) {
    if (dirFd !== rootFd) closeSync(dirFd);
    throw error;
  }
}

/**
 * What a root process may read of a skill. Security: a runner started as root reads skill files
 * with every permission; it reads only what the skill's owner could have put there: a file owned
 * by the skill folder's owner (or by root: system-installed skills), with one link (a hard link
 * is another name of a file elsewhere — /etc/shadow linked into a skill — that the owner may not
 * be able to read).
 */
function rootMayRead(info: { uid: number; nlink: number }, ownerUid: number): string | undefined {
  if (info.uid !== ownerUid && info.uid !== 0) return `belongs to uid ${info.uid}, not to the skill's owner (a root runner reads only files the skill's owner or root owns)`;
  if (info.nlink !== 1) return `has ${info.nlink} hard links (a root runner reads only files with one name)`;
  return undefined;
}

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
  let rootFd: number;
  let fd: number;
  try {
    rootFd = openSync(realDir, DIR_FLAGS);
  } catch (error) {
    throw new SkillMcpError('READ_FAILED', `"${rel}" cannot be opened (the skill folder is gone or was replaced).`, { cause: error });
  }
  let ownerUid: number;
  try {
    ownerUid = fstatSync(rootFd).uid;
    fd = openBeneath(rootFd, relative(realDir, real).split(sep));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOTDIR') throw new SkillMcpError('OUTSIDE_SKILL', `"${rel}" changed into a link while it was opened; not followed.`, { cause: error });
    throw new SkillMcpError('READ_FAILED', `"${rel}" cannot be opened.`, { cause: error });
  } finally {
    closeSync(rootFd);
  }
  try {
    const info = fstatSync(fd);
    // Security: check what was opened, not what was checked: a swap between the two is caught here.
    if (!info.isFile()) throw new SkillMcpError('NOT_A_FILE', `"${rel}" is not a regular file.`);
    if (process.getuid?.() === 0) {
      const refused = rootMayRead(info, ownerUid);
      if (refused !== undefined) throw new SkillMcpError('READ_FAILED', `"${rel}" ${refused}.`);
    }
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
