/**
 * The run-uid allocator on its own (runner/uids/pool.ts, claims.ts): one uid per live run. A run
 * holds its uid from `take` until its reap is complete, before its script has started too (when no
 * process shows the uid in use), and a uid whose run left a process behind is not handed out while
 * that process lives. The machine-wide claim files name their holder by pid and start time, so a
 * claim of this very process is never taken for a dead one, and a reused pid does not keep a dead
 * runner's claim alive. Works as any user: the claims folder is the test's own, and which uids have
 * processes is given to the pool.
 */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { claimHolderAlive, processStartTime, UidClaims } from '../../runner/uids/claims.js';
import { UidPool } from '../../runner/uids/pool.js';

const base = mkdtempSync(join(tmpdir(), 'skill-mcp-uid-pool-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));
let dirs = 0;
function claimDir(): string {
  const dir = join(base, `claims-${dirs++}`);
  mkdirSync(dir, { mode: 0o700 });
  chmodSync(dir, 0o700);
  return dir;
}

const FIRST = 62100;
const range = (size: number) => ({ first: FIRST, last: FIRST + size - 1 });
/** A pool whose view of "uids with processes" is the test's set. */
function pool(size: number, dir = claimDir(), inUse = new Set<number>()) {
  return { pool: new UidPool(range(size), [], new UidClaims(dir), () => inUse), dir, inUse };
}

describe('one uid per live run', () => {
  it('attack: the range wraps while every uid is held by a run whose script has not started — BUSY, never a uid another run holds', async () => {
    const { pool: p } = pool(3);
    const taken = [await p.take(), await p.take(), await p.take()];
    expect(new Set(taken).size).toBe(3);
    // No process shows any of them in use yet; they are still held.
    await expect(p.take()).rejects.toThrow(expect.objectContaining({ code: 'BUSY' }));
    await p.release(taken[1]!);
    expect(await p.take()).toBe(taken[1]);
    await expect(p.take()).rejects.toThrow(expect.objectContaining({ code: 'BUSY' }));
  });

  it("attack: a uid whose run folder could not be removed is never handed out again (its files would be the next run's), and its claim stays", async () => {
    const { pool: p, dir } = pool(2);
    const [left, other] = [await p.take(), await p.take()];
    await p.release(left, true, true);
    await p.release(other, true);
    expect(await p.take()).toBe(other);
    await expect(p.take()).rejects.toThrow(expect.objectContaining({ code: 'BUSY' }));
    // A second release (a later path of the same run) does not give it back either.
    await p.release(left, true);
    await expect(p.take()).rejects.toThrow(expect.objectContaining({ code: 'BUSY' }));
    expect(readdirSync(dir)).toContain(String(left));
  });

  it('attack: takes started together (each awaiting its /proc scan) never pick the same uid', async () => {
    const { pool: p } = pool(8);
    const taken = await Promise.all(Array.from({ length: 8 }, () => p.take()));
    expect(new Set(taken).size).toBe(8);
    await expect(p.take()).rejects.toThrow(expect.objectContaining({ code: 'BUSY' }));
  });

  it('many takes and releases interleaved: no uid is ever held by two runs at once', async () => {
    const { pool: p } = pool(8);
    const live = new Set<number>();
    for (let step = 0; step < 600; step++) {
      if (live.size > 0 && (live.size === 8 || step % 3 === 0)) {
        const uid = [...live][step % live.size]!;
        live.delete(uid);
        await p.release(uid);
        continue;
      }
      const uid = await p.take();
      expect(live.has(uid)).toBe(false);
      live.add(uid);
    }
  });

  it('attack: a run that left a process behind — its uid stays held (claim file too) until nothing of it is left', async () => {
    const { pool: p, dir, inUse } = pool(2);
    const a = await p.take();
    const b = await p.take();
    inUse.add(a); // the reap gave up: a process of a's uid lives on
    await p.release(a);
    await p.release(b);
    expect(readdirSync(dir)).toEqual([String(a)]);
    expect(await p.take()).toBe(b);
    await expect(p.take()).rejects.toThrow(expect.objectContaining({ code: 'BUSY' }));
    inUse.delete(a); // it is gone now
    await p.release(b);
    const next = [await p.take(), await p.take()].sort();
    expect(next).toEqual([a, b].sort());
  });

  it('attack: a uid released as emptied (its cgroup found empty) while a process of it does live on is still never handed out — every take scans again', async () => {
    const { pool: p, dir, inUse } = pool(1);
    const a = await p.take();
    inUse.add(a); // the caller's "emptied" was wrong: a process of the uid lives
    await p.release(a, true);
    // The claim went (the release believed the caller), but the take's own pass sees the process.
    expect(readdirSync(dir)).toEqual([]);
    await expect(p.take()).rejects.toThrow(expect.objectContaining({ code: 'BUSY' }));
    inUse.delete(a);
    expect(await p.take()).toBe(a);
  });

  it('a release as emptied skips the /proc pass; a plain release makes one', async () => {
    let passes = 0;
    const p = new UidPool(range(2), [], new UidClaims(claimDir()), () => {
      passes += 1;
      return new Set<number>();
    });
    const a = await p.take();
    const b = await p.take();
    expect(passes).toBe(2);
    await p.release(a, true);
    expect(passes).toBe(2);
    await p.release(b);
    expect(passes).toBe(3);
  });

  it("a second pool of this very process does not break the first pool's live claims", async () => {
    const dir = claimDir();
    const one = pool(2, dir).pool;
    const two = pool(2, dir).pool;
    const a = await one.take();
    const b = await one.take();
    await expect(two.take()).rejects.toThrow(expect.objectContaining({ code: 'BUSY' }));
    await one.release(a);
    expect(await two.take()).toBe(a);
    expect(readFileSync(join(dir, String(b)), 'utf8')).toMatch(new RegExp(`^${process.pid} \\d+ [0-9a-f]{16}\\n$`));
  });

  it("a claim naming this process's pid with another start time (a reused pid) is a dead runner's and is taken over", async () => {
    const dir = claimDir();
    const start = processStartTime(process.pid)!;
    writeFileSync(join(dir, String(FIRST)), `${process.pid} ${Number(start) + 1} feedfacefeedface\n`, { mode: 0o600 });
    expect(await pool(1, dir).pool.take()).toBe(FIRST);
  });

  it('claim liveness: live pid with its start time, legacy form, dead pid, garbage', async () => {
    const start = processStartTime(process.pid)!;
    expect(claimHolderAlive(`${process.pid} ${start} 0123456789abcdef\n`)).toBe(true);
    expect(claimHolderAlive(`${process.pid} 0123456789abcdef\n`)).toBe(true);
    expect(claimHolderAlive('2147483646 0123456789abcdef\n')).toBe(false);
    expect(claimHolderAlive('not a claim')).toBe(false);
  });
});
