/**
 * @module A run's place in the runner from its request to its end, and the one way a run is
 * refused: the types runner/requests/service.ts (the request table) and runner/requests/run-path.ts
 * (the run after its token is spent) both hold.
 */
import type { ErrorCode } from '../../shared/errors.js';
import type { Refusal } from '../../shared/protocol.js';
import type { RejectReason } from '../audit/events.js';
import type { RunningProcess } from '../sandbox/process.js';
import type { Lease } from './admission.js';
import type { RunPhases } from './phases.js';

export type Answer<T> = { ok: true; result: T } | { ok: false; error: Refusal };

/** Refuses the run: counts it, queues its run.reject line, and gives the refusal to answer with. */
export type Reject = (r: RejectReason, c: ErrorCode, m: string, e?: { token_id?: string; error?: string }) => { ok: false; error: Refusal };

/** A run from its request to its end: waiting for a slot, then holding one. */
export interface Slot {
  runId: string;
  /** The front's name for this run: the only thing a cancel may name. */
  cancelId: string;
  /** Whose run it is (the front's client id), for the per-client share. */
  client: string;
  cancelled: boolean;
  /** Aborted by a cancel or an asker that went away: takes a waiting run out of the queue. */
  leave: AbortController;
  lease?: Lease;
  /**
   * Its turn at its data folder (runner/data/locks.ts; the lock file and, for replicas, their Redis),
   * when it has one. Given back before the run answers: the next run of the folder may go at once.
   */
  dataLease?: { release(): void | Promise<void> };
  proc?: RunningProcess;
  /** Its terminal line (a reject or its exit) is queued: nothing more ends it in the log. */
  ended?: boolean;
  /** Its queued lines (awaited before its answer). */
  lines: Promise<void>[];
  /** Where its time went so far (its run.exit line's `phases_ms`). */
  phases: RunPhases;
  /** Set when it answered before its folders were removed: settles once they are gone and its uid is back (run-path.ts). */
  after?: Promise<void>;
}
