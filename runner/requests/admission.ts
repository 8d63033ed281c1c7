/**
 * @module How many runs at once, and whose (docs/architecture.md §8, issue #17). At most `maxRuns`
 * runs hold a slot, and one client (one bearer token, one stdio session: the front names it) at
 * most `perClient` of them. A run over either limit waits in a first-come queue for at most
 * `queueMs`, then is refused BUSY with the figures. A waiter holds nothing — its token is checked
 * and spent only once it holds a slot (service.ts) — and leaves the queue at once when it is
 * cancelled, its asker goes away, or its deadline passes.
 */
import { createHash } from 'node:crypto';

/**
 * The client a run counts against: the verified identity's subject when the front sent one (so a
 * person's share is theirs across connections and fronts), else the front's own client id.
 * Hashed (domain-separated, 128 bits) so audit lines and figures carry no raw claim here.
 */
export function admissionClient(identity: { subject: string } | undefined, client: string | undefined, unnamed: string): string {
  if (identity !== undefined)
    return createHash('sha256').update('skill-mcp subject\0').update(identity.subject, 'utf8').digest('hex').slice(0, 32);
  return client ?? unnamed;
}

export interface AdmissionLimits {
  /** Runs holding a slot at once. */
  maxRuns: number;
  /** Slots one client may hold at once (at most `maxRuns`). */
  perClient: number;
  /** How long a run over the limit waits for a slot before it is refused BUSY. */
  queueMs: number;
}

/**
 * Places in the queue: 4 per slot, at least 16 (so a burst at a limit of 1 still waits instead of
 * failing). A client may fill the part of it its share is of the slots (all of it standalone).
 */
export const QUEUE_PER_SLOT = 4;
export const MIN_QUEUE = 16;

/** What a BUSY refusal tells the caller (and the audit log). */
export interface BusyFigures {
  /** Runs in progress on this runner, and its limit. */
  running: number;
  maxRuns: number;
  /** Runs still waiting for a slot after this one gave up. */
  queued: number;
  /** This client's runs in progress, and its share. */
  clientRunning: number;
  clientShare: number;
  /** How long this run waited (0: the queue was full, so it did not wait). */
  waitedMs: number;
  /** When a slot this client may use is certain to be free: the earliest deadline of the runs that hold one. */
  retryAfterMs: number;
}

/** A held slot. */
export interface Lease {
  /** How long the run waited for its slot. */
  readonly waitedMs: number;
  /** The latest time this run can end (its timeout plus kill grace and drain): the base of retry hints. */
  endsBy(atMs: number): void;
  /** Gives the slot back (once; later calls do nothing). */
  release(): void;
}

export type Admission = { ok: true; lease: Lease } | { ok: false; why: 'busy'; figures: BusyFigures } | { ok: false; why: 'left' };

interface Held {
  client: string;
  endsAt: number;
}

interface Waiter {
  client: string;
  since: number;
  grant(): void;
}

export class RunAdmission {
  private readonly held = new Set<Held>();
  private readonly waiters: Waiter[] = [];

  /** `endsAtFallbackMs`: how far ahead a run's end is assumed before it says (its longest timeout). */
  constructor(
    readonly limits: AdmissionLimits,
    private readonly endsAtFallbackMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  get running(): number {
    return this.held.size;
  }

  get queued(): number {
    return this.waiters.length;
  }

  /** The most connections the queue and the slots can keep open at once. */
  get maxWaiting(): number {
    return Math.max(MIN_QUEUE, this.limits.maxRuns * QUEUE_PER_SLOT);
  }

  /** Queue places one client may hold: its share's part of the queue. */
  private get maxWaitingPerClient(): number {
    return Math.ceil((this.maxWaiting * this.limits.perClient) / this.limits.maxRuns);
  }

  private runningOf(client: string): number {
    let n = 0;
    for (const h of this.held) if (h.client === client) n++;
    return n;
  }

  private fits(client: string): boolean {
    return this.held.size < this.limits.maxRuns && this.runningOf(client) < this.limits.perClient;
  }

  /**
   * A slot for `client`, now or after a wait; `leave` takes the run out of the queue (cancel, the
   * asker went away); `onWait` hears when the run starts waiting (with the figures then). Security: a client over its share waits behind its own runs only — a later
   * waiter of another client may pass it, never the other way round.
   */
  acquire(client: string, leave: AbortSignal, onWait?: (at: { running: number; queued: number }) => void): Promise<Admission> {
    const since = this.now();
    if (leave.aborted) return Promise.resolve({ ok: false, why: 'left' });
    // After every change the queue holds only runs that do not fit, so one that fits now overtakes nobody.
    // A run that fits did not queue: its lease says 0, even when the clock ticked since `since`.
    if (this.fits(client)) return Promise.resolve({ ok: true, lease: this.grant(client) });
    const mine = this.waiters.filter((w) => w.client === client).length;
    // Security: a burst from one client cannot fill the queue and push every other client out.
    if (this.waiters.length >= this.maxWaiting || mine >= this.maxWaitingPerClient || this.limits.queueMs === 0) {
      return Promise.resolve({ ok: false, why: 'busy', figures: this.figures(client, since) });
    }
    return new Promise((resolve) => {
      const leaveQueue = (): void => {
        clearTimeout(timer);
        leave.removeEventListener('abort', onLeave);
        const at = this.waiters.indexOf(waiter);
        if (at >= 0) this.waiters.splice(at, 1);
      };
      const onLeave = (): void => {
        leaveQueue();
        resolve({ ok: false, why: 'left' });
      };
      const waiter: Waiter = {
        client,
        since,
        grant: () => {
          leaveQueue();
          resolve({ ok: true, lease: this.grant(client, since) });
        },
      };
      const timer = setTimeout(() => {
        leaveQueue();
        resolve({ ok: false, why: 'busy', figures: this.figures(client, since) });
      }, this.limits.queueMs);
      leave.addEventListener('abort', onLeave, { once: true });
      this.waiters.push(waiter);
      onWait?.({ running: this.held.size, queued: this.waiters.length });
    });
  }

  /** `since`: when a queued run began to wait; absent for one that took a free slot at once. */
  private grant(client: string, since?: number): Lease {
    const held: Held = { client, endsAt: this.now() + this.endsAtFallbackMs };
    this.held.add(held);
    let released = false;
    return {
      waitedMs: since === undefined ? 0 : this.now() - since,
      endsBy: (atMs) => {
        held.endsAt = atMs;
      },
      release: () => {
        if (released) return;
        released = true;
        this.held.delete(held);
        this.pump();
      },
    };
  }

  /** Hands freed slots to the earliest waiters that fit, in queue order. */
  private pump(): void {
    for (const waiter of [...this.waiters]) {
      if (this.held.size >= this.limits.maxRuns) return;
      if (this.fits(waiter.client)) waiter.grant();
    }
  }

  private figures(client: string, since: number): BusyFigures {
    const now = this.now();
    const clientRunning = this.runningOf(client);
    // At its share, only the client's own runs ending frees a slot it may use.
    const blocking = [...this.held].filter((h) => clientRunning < this.limits.perClient || h.client === client);
    const earliest = blocking.length > 0 ? Math.min(...blocking.map((h) => h.endsAt)) : now;
    return {
      running: this.held.size,
      maxRuns: this.limits.maxRuns,
      queued: this.waiters.length,
      clientRunning,
      clientShare: this.limits.perClient,
      waitedMs: now - since,
      retryAfterMs: Math.max(0, earliest - now),
    };
  }
}
