/**
 * @module Machine-wide claims on run uids. Every root runner on a machine (each standalone
 * `skill-mcp` starts one) draws from the same default uid range, and after a run it kills every
 * process of that uid. Two runners picking the same free uid at the same moment would share
 * RLIMIT_NPROC and could kill each other's scripts; a claim file per uid, taken atomically before
 * the uid is used and dropped after the run's leftovers are reaped, makes the pick exclusive.
 * A claim whose runner died is taken over: its holder is named by pid *and* the process's start
 * time, so neither a reused pid nor this runner's own pid makes a dead claim look live or a live
 * one look dead.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, linkSync, lstatSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { SkillMcpError } from '../../shared/errors.js';
import { breakLock, pidAlive, readHeld } from '../file-lock.js';

/** tmpfs, root's, emptied at boot: claims never outlive the machine's processes. */
export const DEFAULT_CLAIM_DIR = '/run/skill-mcp-run-uids';

/** The start time of `pid` (clock ticks since boot, /proc/PID/stat field 22), or undefined when it is gone. */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count fields after the last `)`.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/**
 * Whether the claim `content` (`<pid> <start time> <nonce>`, or the older `<pid> <nonce>`) names a
 * live process. Security: a claim of this very process is live too — breaking it would hand a uid
 * a run of ours holds to a second run.
 */
export function claimHolderAlive(content: string): boolean {
  const match = /^(\d+) (?:(\d+) )?[0-9a-f]+\n?$/.exec(content);
  const pid = Number(match?.[1]);
  if (!match || !Number.isSafeInteger(pid) || pid <= 0 || !pidAlive(pid)) return false;
  return match[2] === undefined || processStartTime(pid) === match[2];
}

export class UidClaims {
  readonly #dir: string;
  readonly #mine = new Map<number, string>();

  constructor(dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const info = lstatSync(dir);
    // Security: a planted symlink or a folder another user controls could forge or steal claims.
    if (!info.isDirectory() || info.uid !== process.getuid?.() || (info.mode & 0o077) !== 0) {
      throw new SkillMcpError('SANDBOX_UNAVAILABLE', `the uid claim folder ${dir} must be a 0700 folder owned by the runner's uid`);
    }
    this.#dir = dir;
  }

  /** Claims `uid` for this runner; false when a live runner holds it. */
  tryClaim(uid: number): boolean {
    const path = join(this.#dir, String(uid));
    const start = processStartTime(process.pid);
    const content = `${process.pid} ${start === undefined ? '' : `${start} `}${randomBytes(8).toString('hex')}\n`;
    const tmp = `${path}.${process.pid}.tmp`;
    const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o600);
    try {
      writeSync(fd, content);
    } finally {
      closeSync(fd);
    }
    try {
      for (let attempt = 0; attempt < 2; attempt++) {
        try {
          // The claim appears whole or not at all: `link` fails with EEXIST while it is held.
          linkSync(tmp, path);
          this.#mine.set(uid, content);
          return true;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        }
        const held = readHeld(path);
        if (held && claimHolderAlive(held.content)) return false;
        if (held) breakLock(path, held.content, `${path}.${process.pid}.stale`);
      }
      return false;
    } finally {
      unlinkSync(tmp);
    }
  }

  /** Drops this runner's claim on `uid` (only if it is still ours). */
  release(uid: number): void {
    const content = this.#mine.get(uid);
    this.#mine.delete(uid);
    if (content !== undefined && readHeld(join(this.#dir, String(uid)))?.content === content) unlinkSync(join(this.#dir, String(uid)));
  }
}
