/**
 * @module The lockfile, `DIR/.skill-mcp-lock.json`: for each skill `pull` wrote, where it came
 * from and the digest of every file. A later pull compares the server's digests with it to
 * update only what changed, and compares the folder with it to notice local edits before it
 * would replace them. Written whole to a temp file and renamed, so it is never half-written.
 */
import { randomBytes } from 'node:crypto';
import { lstatSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LOCK_FILE, LockSchema, type Lock } from '../../shared/pull-lock.js';

export { LOCK_FILE, type Lock, type LockSource, type LockedSkill } from '../../shared/pull-lock.js';

export class LockError extends Error {}

/** The lock in `dir`, or an empty one when there is none. A lock that does not parse stops the pull. */
export function readLock(dir: string): Lock {
  const path = join(dir, LOCK_FILE);
  const stat = lstatSync(path, { throwIfNoEntry: false });
  if (!stat) return { lockfileVersion: 1, skills: {} };
  // Security: a lockfile that is a link could make us read (and then replace) a file elsewhere.
  if (!stat.isFile()) throw new LockError(`${path} is not a regular file; move it away and pull again`);
  try {
    return LockSchema.parse(JSON.parse(readFileSync(path, 'utf8')));
  } catch (error) {
    throw new LockError(
      `${path} is not a lockfile this version of skill-mcp writes (${error instanceof Error ? error.message.split('\n')[0] : String(error)}); move it away and pull again`,
    );
  }
}

export function writeLock(dir: string, lock: Lock): void {
  const sorted: Lock = {
    lockfileVersion: 1,
    skills: Object.fromEntries(Object.entries(lock.skills).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
  };
  const temp = join(dir, `.skill-mcp-lock-${randomBytes(6).toString('hex')}.tmp`);
  try {
    writeFileSync(temp, `${JSON.stringify(sorted, null, 2)}\n`, { flag: 'wx', mode: 0o644 });
    renameSync(temp, join(dir, LOCK_FILE));
  } finally {
    rmSync(temp, { force: true });
  }
}

/** The digests a planned skill publishes, as the lock records them (sorted by path). */
export function digestsOf(files: readonly { path: string; digest: string }[]): Record<string, string> {
  return Object.fromEntries(files.map((f) => [f.path, f.digest] as const).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export function sameDigests(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}
