/**
 * The cross-process lock's waiting side (runner/file-lock.ts). `withLockAsync` waits on timers, so
 * a runner waiting for a lock another process holds goes on serving: the event loop turns (timers
 * fire) during the wait, and the lock is taken as soon as it is free. A lock of this very process
 * (another request of ours) is waited for, never broken; a dead holder's lock is broken. Plain
 * files in a private temp folder; runs as any user.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { withLockAsync } from '../../runner/file-lock.js';

const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-file-lock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Counts event-loop turns (a 1 ms interval) until `stop`. */
function turns(): { count: () => number; stop: () => void } {
  let n = 0;
  const timer = setInterval(() => n++, 1);
  return { count: () => n, stop: () => clearInterval(timer) };
}

/** Resolves once `predicate` holds, looked at on each turn of the loop. */
async function until(predicate: () => boolean): Promise<void> {
  while (!predicate()) await new Promise((resolve) => setTimeout(resolve, 5));
}

test('a lock held by another live process: the waiter keeps its event loop turning, and takes the lock once it is released', async () => {
  const path = join(dir, 'held.lock');
  const holder = spawn('sleep', ['600'], { stdio: 'ignore' });
  await new Promise((resolve) => holder.once('spawn', resolve));
  writeFileSync(path, `${holder.pid} 0123456789abcdef\n`, { mode: 0o600 });
  const loop = turns();
  let got = false;
  const taken = withLockAsync(path, () => {
    got = true;
    return 'ran';
  });
  // Event-ordered: the loop turns many times while the other process holds the lock.
  await until(() => loop.count() >= 20);
  expect(got).toBe(false);
  unlinkSync(path); // the holder releases
  expect(await taken).toBe('ran');
  loop.stop();
  holder.kill();
});

test("a lock naming this very process is another request's: waited for, never broken", async () => {
  const path = join(dir, 'own.lock');
  writeFileSync(path, `${process.pid} fedcba9876543210\n`, { mode: 0o600 });
  const loop = turns();
  let got = false;
  const taken = withLockAsync(path, () => (got = true));
  await until(() => loop.count() >= 20);
  expect(got).toBe(false);
  unlinkSync(path);
  expect(await taken).toBe(true);
  loop.stop();
});

test("a dead holder's lock is broken at once", async () => {
  const path = join(dir, 'dead.lock');
  writeFileSync(path, '2147483646 0123456789abcdef\n', { mode: 0o600 });
  expect(await withLockAsync(path, () => 'ran')).toBe('ran');
});

test('requests of one process in turn: every one gets the lock, one at a time, and it is free afterwards', async () => {
  const path = join(dir, 'turns.lock');
  let inside = 0;
  let most = 0;
  const order = await Promise.all(
    Array.from({ length: 30 }, (_, i) =>
      withLockAsync(path, () => {
        inside++;
        most = Math.max(most, inside);
        inside--;
        return i;
      }),
    ),
  );
  expect(order.sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i));
  expect(most).toBe(1);
  expect(await withLockAsync(path, () => 'free')).toBe('free');
});

test("an error inside the lock is the caller's, and the lock is released", async () => {
  const path = join(dir, 'throws.lock');
  await expect(
    withLockAsync(path, () => {
      throw Object.assign(new Error('inside'), { code: 'EEXIST' });
    }),
  ).rejects.toThrow('inside');
  expect(await withLockAsync(path, () => 'again')).toBe('again');
});
