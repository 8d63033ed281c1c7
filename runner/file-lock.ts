/**
 * @module An exclusive lock between the processes of one machine, in pure Node (no native addon):
 * a lock file holding `<pid> <nonce>`. Every standalone `skill-mcp` a user starts runs its own
 * runner on the same state directory, and their audit appends must not interleave (each line's
 * `seq` and `prev` continue the line before it). The lock is held only for the synchronous span of
 * one write (a few ms). `withLockAsync` is the one for request paths: its waiter sleeps on timers
 * (backing off), so the event loop goes on serving while another process holds the lock.
 * `withLock` waits by blocking the thread (Atomics.wait) and is for start-up, where nothing else
 * runs yet. A lock whose holder is gone (its pid
 * is dead, or it is older than STALE_LOCK_MS — no append takes that long, and a reused pid cannot
 * keep it forever) is broken, so a process killed mid-append never blocks the next one.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, linkSync, lstatSync, openSync, readdirSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { basename, dirname, join } from 'node:path';
import { SkillMcpError } from '../shared/errors.js';
import { readNoFollow } from './state.js';

/** A lock older than this is stale whoever holds it: an append takes milliseconds. */
export const STALE_LOCK_MS = 10_000;
/** Give up (and fail the append) after this long: only a stream of live holders could cause it. */
const LOCK_WAIT_MS = 30_000;
const MAX_SLEEP_MS = 8;

const sleeper = new Int32Array(new SharedArrayBuffer(4));
function sleepMs(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The lock as found: its exact content (the identity compared before breaking it) and age. */
export function readHeld(path: string): { content: string; pid: number; ageMs: number } | undefined {
  try {
    const ageMs = Date.now() - lstatSync(path).mtimeMs;
    const content = readNoFollow(path);
    return { content, pid: Number(/^(\d+) /.exec(content)?.[1] ?? NaN), ageMs };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined; // released meanwhile
    throw error;
  }
}

/**
 * Whether a lock's holder is gone. For `withLock`, our own pid with another nonce is a
 * predecessor's lock (this thread holds none while it blocks); for `withLockAsync` it may be
 * another request of this very process, so only its age can make it stale.
 */
function isStale(held: { pid: number; ageMs: number }, ownPidIsStale = true): boolean {
  if (held.ageMs > STALE_LOCK_MS || !Number.isSafeInteger(held.pid)) return true;
  return held.pid === process.pid ? ownPidIsStale : !pidAlive(held.pid);
}

/**
 * Removes a stale lock. Security: it is moved aside and compared before it is deleted — another
 * waiter may have broken the same stale lock and taken the lock anew since we read it (its
 * content has a fresh nonce), and a live lock must not be deleted; such a one is put back.
 */
export function breakLock(path: string, observed: string, aside: string): void {
  try {
    renameSync(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  let content: string | undefined;
  try {
    content = readNoFollow(aside);
  } catch {
    content = undefined;
  }
  if (content !== observed) {
    try {
      linkSync(aside, path); // EEXIST: yet another holder since; the newest keeps the name
    } catch {
      // nothing more can be done without a kernel lock
    }
  }
  unlinkSync(aside);
}

/**
 * Runs `fn` holding the lock at `path` (in a private directory). The lock file appears with its
 * content at once (written to a temp file, then hard-linked to its name; `link` fails with EEXIST
 * when it is held), so a waiter never mistakes a lock being written for an empty stale one.
 */
export function withLock<T>(path: string, fn: () => T): T {
  const nonce = randomBytes(8).toString('hex');
  const content = `${process.pid} ${nonce}\n`;
  const tmp = `${path}.${process.pid}.${nonce}.tmp`;
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, content);
  } finally {
    closeSync(fd);
  }
  const deadline = Date.now() + LOCK_WAIT_MS;
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        linkSync(tmp, path);
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const held = readHeld(path);
      if (held === undefined) continue;
      if (isStale(held)) {
        breakLock(path, held.content, `${path}.${process.pid}.${nonce}.stale`);
        continue;
      }
      if (Date.now() > deadline)
        throw new SkillMcpError('INTERNAL', `the audit lock ${path} stayed busy for ${LOCK_WAIT_MS} ms (held by pid ${held.pid})`);
      sleepMs(Math.min(attempt, MAX_SLEEP_MS) * (0.5 + Math.random()));
    }
  } finally {
    unlinkSync(tmp);
  }
  try {
    return fn();
  } finally {
    release(path, content);
  }
}

/**
 * {@link withLock} for request paths: a waiter sleeps on a timer between tries (1, 2, 4 … up to
 * 8 ms, jittered) instead of blocking the thread. The lock file's few bytes are made, linked and
 * cleaned up with synchronous calls (tens of µs each; as promises they were five thread-pool trips
 * per lock, twice per audit batch: bench/run-floor.mjs); only the wait for another holder is
 * asynchronous. `fn` runs synchronously under the lock, so the critical section stays as short as
 * `withLock`'s. Break-and-release are the same checked steps.
 */
export async function withLockAsync<T>(path: string, fn: () => T): Promise<T> {
  const nonce = randomBytes(8).toString('hex');
  const content = `${process.pid} ${nonce}\n`;
  const tmp = `${path}.${process.pid}.${nonce}.tmp`;
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, content);
  } finally {
    closeSync(fd);
  }
  const deadline = Date.now() + LOCK_WAIT_MS;
  try {
    for (let attempt = 1; ; attempt++) {
      let linked = true;
      try {
        linkSync(tmp, path);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        linked = false;
      }
      if (linked) {
        // Held from here: `fn` and the release run in this one synchronous span, no await between.
        try {
          return fn();
        } finally {
          release(path, content);
        }
      }
      const held = readHeld(path);
      if (held === undefined) continue;
      if (isStale(held, false)) {
        breakLock(path, held.content, `${path}.${process.pid}.${nonce}.stale`);
        continue;
      }
      if (Date.now() > deadline)
        throw new SkillMcpError('INTERNAL', `the lock ${path} stayed busy for ${LOCK_WAIT_MS} ms (held by pid ${held.pid})`);
      await sleep(Math.min(2 ** (attempt - 1), MAX_SLEEP_MS) * (0.5 + Math.random()));
    }
  } finally {
    unlinkSync(tmp);
  }
}

/** Deletes the lock only if it is still ours (a holder slower than STALE_LOCK_MS may have lost it). */
function release(path: string, content: string): void {
  if (readHeld(path)?.content === content) unlinkSync(path);
}

/** Removes temp and aside files of lock holders that died (their pid is gone). */
export function removeLockLeftovers(path: string): void {
  const prefix = `${basename(path)}.`;
  const dir = dirname(path);
  for (const name of readdirSync(dir)) {
    const match = /^(\d+)\.[0-9a-f]{16}\.(tmp|stale)$/.exec(name.startsWith(prefix) ? name.slice(prefix.length) : '');
    if (match && Number(match[1]) !== process.pid && !pidAlive(Number(match[1]))) {
      try {
        unlinkSync(join(dir, name));
      } catch {
        // another runner removed it first
      }
    }
  }
}
