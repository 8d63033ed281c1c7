/**
 * The run slots' rules on their own (runner/requests/admission.ts), where a real runner would need
 * dozens of held scripts to reach them: a client cannot fill the queue past its share's part and
 * push other clients out; a freed slot goes to the earliest waiter that may take it; a waiter that
 * leaves frees its place; the retry hint names the earliest end of a run the caller could use.
 * (run-slots.test.ts drives the same rules through a real runner.)
 */
import { describe, expect, it } from 'vitest';
import { RunAdmission } from '../../runner/requests/admission.js';
import type { Admission, Lease } from '../../runner/requests/admission.js';

const LONG_MS = 60_000;

function leaseOf(admission: Admission): Lease {
  if (!admission.ok) throw new Error(`not admitted: ${admission.why}`);
  return admission.lease;
}

/** Resolves with the admissions that have settled so far, in `order`. */
async function settled(pending: Promise<Admission>[]): Promise<(Admission | 'pending')[]> {
  const marks = pending.map((p) => Promise.race([p, new Promise<'pending'>((resolve) => setImmediate(() => resolve('pending')))]));
  return Promise.all(marks);
}

describe('the queue', () => {
  it("one client's burst fills only its share's part of the queue: another client still gets a place", async () => {
    const slots = new RunAdmission({ maxRuns: 2, perClient: 1, queueMs: LONG_MS }, LONG_MS);
    const never = new AbortController().signal;
    leaseOf(await slots.acquire('a', never));
    leaseOf(await slots.acquire('b', never));
    const burst = Array.from({ length: 8 }, () => slots.acquire('a', never));
    // 16 places, 8 of them a's (its share is half the slots); the ninth is refused at once.
    // (waitedMs is only checked to be there: "at once" depends on the clock of a loaded machine.)
    expect(await slots.acquire('a', never)).toMatchObject({
      ok: false,
      why: 'busy',
      figures: { queued: 8, clientRunning: 1, clientShare: 1, waitedMs: expect.any(Number) },
    });
    const other = slots.acquire('c', never);
    expect(slots.queued).toBe(9);
    expect((await settled([...burst, other])).every((s) => s === 'pending')).toBe(true);
  });

  it('a freed slot goes to the earliest waiter that may take it; a client at its share is passed, not skipped for good', async () => {
    const slots = new RunAdmission({ maxRuns: 2, perClient: 1, queueMs: LONG_MS }, LONG_MS);
    const never = new AbortController().signal;
    const a1 = leaseOf(await slots.acquire('a', never));
    const b1 = leaseOf(await slots.acquire('b', never));
    const a2 = slots.acquire('a', never);
    const c1 = slots.acquire('c', never);
    b1.release();
    // a is at its share: c, behind it, takes b's slot.
    const [aState, cState] = await settled([a2, c1]);
    expect(aState).toBe('pending');
    expect(cState).toMatchObject({ ok: true });
    a1.release();
    expect(await a2).toMatchObject({ ok: true });
  });

  it('a waiter that leaves is out of the queue at once, and its place is free', async () => {
    const slots = new RunAdmission({ maxRuns: 1, perClient: 1, queueMs: LONG_MS }, LONG_MS);
    const never = new AbortController().signal;
    const held = leaseOf(await slots.acquire('a', never));
    const leave = new AbortController();
    const leaving = slots.acquire('b', leave.signal);
    const staying = slots.acquire('c', never);
    leave.abort();
    expect(await leaving).toEqual({ ok: false, why: 'left' });
    expect(slots.queued).toBe(1);
    held.release();
    expect(await staying).toMatchObject({ ok: true });
  });

  it('past its wait a run is refused with the figures; the retry hint is the earliest end of a run it could use', async () => {
    let now = 1_000_000;
    const slots = new RunAdmission({ maxRuns: 2, perClient: 1, queueMs: 20 }, LONG_MS, () => now);
    const never = new AbortController().signal;
    leaseOf(await slots.acquire('a', never)).endsBy(now + 90_000);
    leaseOf(await slots.acquire('b', never)).endsBy(now + 5_000);
    // c may use any slot: the earliest end (b's, 5 s) frees one for it.
    const c = slots.acquire('c', never);
    now += 20;
    expect(await c).toMatchObject({
      ok: false,
      why: 'busy',
      figures: { running: 2, maxRuns: 2, clientRunning: 0, waitedMs: 20, retryAfterMs: 4_980 },
    });
    // a is at its share: only its own run's end (90 s) frees a slot it may use.
    const a = slots.acquire('a', never);
    expect(await a).toMatchObject({ ok: false, why: 'busy', figures: { clientRunning: 1, clientShare: 1, retryAfterMs: 89_980 } });
  });

  it('with no wait configured, a run over the limit is refused at once', async () => {
    const slots = new RunAdmission({ maxRuns: 1, perClient: 1, queueMs: 0 }, LONG_MS);
    const never = new AbortController().signal;
    leaseOf(await slots.acquire('a', never));
    expect(await slots.acquire('b', never)).toMatchObject({ ok: false, why: 'busy', figures: { waitedMs: expect.any(Number), queued: 0 } });
  });
});

describe('the time a run waited', () => {
  it('a run that takes a free slot at once waited 0 ms, even when the clock ticks between its checks; a queued run counts its wait', async () => {
    let clock = 1_000;
    // Every reading of the clock is a millisecond later: the worst a loaded machine can do.
    const slots = new RunAdmission({ maxRuns: 1, perClient: 1, queueMs: LONG_MS }, LONG_MS, () => clock++);
    const never = new AbortController().signal;
    const first = leaseOf(await slots.acquire('a', never));
    expect(first.waitedMs).toBe(0);
    const queued = slots.acquire('b', never);
    clock += 50;
    first.release();
    expect(leaseOf(await queued).waitedMs).toBeGreaterThanOrEqual(50);
  });
});
