/**
 * @module What the runner counts about its runs since it started, for the front's metrics endpoint
 * (`describe` carries it; server/http/metrics.ts exposes it in Prometheus form): runs by how they
 * ended, refusals by reason, and the time spent reaping a run's leftovers after it. Counts only —
 * no skill, script, identity or argument is kept here, so nothing a run did leaks through metrics.
 */
import type { RejectReason } from '../audit/events.js';
import type { Ending } from '../sandbox/process.js';

/** How an accepted run ended: its process's ending, or `error` when the runner failed it after the accept. */
export type RunEnd = Ending | 'error';

export interface RunStatsSnapshot {
  /** Accepted runs that ended, by how. */
  ended: Partial<Record<RunEnd, number>>;
  /** Run requests refused before anything ran, by the audit's reject reason. */
  refused: Partial<Record<RejectReason, number>>;
  /** Reaps after a run's process ended: how many, and their summed duration. */
  reaps: number;
  reapSeconds: number;
}

export class RunStats {
  readonly #ended = new Map<RunEnd, number>();
  readonly #refused = new Map<RejectReason, number>();
  #reaps = 0;
  #reapMs = 0;

  ended(how: RunEnd): void {
    this.#ended.set(how, (this.#ended.get(how) ?? 0) + 1);
  }

  refused(reason: RejectReason): void {
    this.#refused.set(reason, (this.#refused.get(reason) ?? 0) + 1);
  }

  reaped(ms: number): void {
    this.#reaps += 1;
    this.#reapMs += Math.max(0, ms);
  }

  snapshot(): RunStatsSnapshot {
    return {
      ended: Object.fromEntries(this.#ended),
      refused: Object.fromEntries(this.#refused),
      reaps: this.#reaps,
      reapSeconds: this.#reapMs / 1000,
    };
  }
}
