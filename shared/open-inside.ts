/**
 * @module The resolution half of the path rules (docs/architecture.md §5), in one place: every byte
 * the front serves or hashes, and every byte the runner copies into a run, is read through a
 * descriptor this opened. The string half (and the manifest check) happen before, in read.ts; the
 * walk already string-checked what digest.ts hashes. Synchronous on purpose: one native
 * realpath(3) and a few syscalls, where the promise versions cost several round trips per file
 * (bench/RESULTS.md).
 *
 * The open itself never follows a link: the path is resolved first (links inside the skill are
 * served as what they point to, the walk's rule), checked to stay inside, and then opened below
 * the skill's own open folder without following anything (open-beneath.ts: one openat2 call where
 * the kernel has it, else one O_NOFOLLOW open per component). A link swapped in anywhere on the
 * way after the check fails the open (ELOOP) instead of being followed — to /etc/shadow or a
 * neighbour's skill. What was opened is then checked again: a regular file, inside, and for a root
 * process owned by the skill's owner (or root) with one link.
 */
import { closeSync, fstatSync, readlinkSync, realpathSync } from 'node:fs';
import { relative, sep } from 'node:path';
import { SkillMcpError } from './errors.js';
import type { BeneathOpener } from './open-beneath.js';
import { rootReads } from './open-beneath.js';
import { isInside } from './paths.js';

/**
 * What a root process may read of a skill. Security: a runner started as root reads skill files
 * with every permission; it reads only what the skill's owner could have put there: a file owned
 * by the skill folder's owner (or by root: system-installed skills), with one link (a hard link
 * is another name of a file elsewhere — /etc/shadow linked into a skill — that the owner may not
 * be able to read).
 */
function rootMayRead(info: { uid: number; nlink: number }, ownerUid: number): string | undefined {
  if (info.uid !== ownerUid && info.uid !== 0)
    return `belongs to uid ${info.uid}, not to the skill's owner (a root runner reads only files the skill's owner or root owns)`;
  if (info.nlink !== 1) return `has ${info.nlink} hard links (a root runner reads only files with one name)`;
  return undefined;
}

/**
 * Opens `rel` (a `/`-separated path inside the skill) read-only; the caller closes `fd`. `opener`
 * is this process's way ({@link rootReads}) unless a test names one.
 */
export function openInsideSkill(realDir: string, rel: string, opener: BeneathOpener = rootReads().opener): { fd: number; size: number } {
  let real: string;
  try {
    real = realpathSync.native(realDir + sep + rel.split('/').join(sep));
  } catch (error) {
    throw new SkillMcpError('NOT_FOUND', `"${rel}": no such file in this skill.`, { cause: error });
  }
  // Security: a link planted in the skill (or swapped in after the scan) pointing at /etc/passwd
  // or a neighbour skill.
  if (!isInside(realDir, real) || real === realDir)
    throw new SkillMcpError('OUTSIDE_SKILL', `"${rel}" resolves outside the skill (symlink escape).`);
  let rootFd: number;
  let fd: number;
  try {
    rootFd = opener.openRoot(realDir);
  } catch (error) {
    throw new SkillMcpError('READ_FAILED', `"${rel}" cannot be opened (the skill folder is gone or was replaced).`, { cause: error });
  }
  let ownerUid: number;
  try {
    ownerUid = fstatSync(rootFd).uid;
    fd = opener.open(rootFd, relative(realDir, real).split(sep));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOTDIR')
      throw new SkillMcpError('OUTSIDE_SKILL', `"${rel}" changed into a link while it was opened; not followed.`, { cause: error });
    // openat2 only: a mount point inside the skill (or a way above it) on the path.
    if (code === 'EXDEV')
      throw new SkillMcpError('OUTSIDE_SKILL', `"${rel}" crosses a mount point or leaves the skill on the way; not followed.`, {
        cause: error,
      });
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
    if (opened !== undefined && !isInside(realDir, opened))
      throw new SkillMcpError('OUTSIDE_SKILL', `"${rel}" resolves outside the skill (symlink escape).`);
    return { fd, size: info.size };
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}
