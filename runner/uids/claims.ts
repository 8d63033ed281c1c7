/**
 * @module Machine-wide claims on run uids. Every root runner on a machine (each standalone
 * `skill-mcp` starts one) draws from the same default uid range, and after a run it kills every
 * process of that uid. Two runners picking the same free uid at the same moment would share
 * RLIMIT_NPROC and could kill each other's scripts; a claim file per uid, taken atomically before
 * the uid is used and dropped after the run's leftovers are reaped, makes the pick exclusive.
 * A claim whose runner died is taken over (its pid is checked).
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, linkSync, lstatSync, mkdirSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { SkillMcpError } from '../../shared/errors.js';
import { breakLock, pidAlive, readHeld } from '../file-lock.js';

/** tmpfs, root's, emptied at boot: claims never outlive the machine's processes. */
export const DEFAULT_CLAIM_DIR = '/run/skill-mcp-run-uids';

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
    const content = `${process.pid} ${randomBytes(8).toString('hex')}\n`;
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
        if (held && Number.isSafeInteger(held.pid) && held.pid !== process.pid && pidAlive(held.pid)) return false;
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
