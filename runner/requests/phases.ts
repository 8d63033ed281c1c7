/**
 * @module Where a run's time goes, phase by phase (docs/audit.md, `phases_ms` of `run.exit`): one
 * `performance.now()` per phase boundary, each phase the time since the previous mark. Cheap (a
 * number per mark, no allocation beyond the small record) and durations only — no timestamps, no
 * names of skills or files — so the line tells an operator which step of the run path is slow
 * without saying anything a run did. bench/run-floor.mjs reads it beside bare bubblewrap.
 */

/** The phases of a run in the order they happen (a run that ends early has only the first ones). */
export const RUN_PHASES = [
  /** The connection's hello and the run request read and checked (front → runner). */
  'receive',
  /** Waiting for a run slot. */
  'admission',
  /** The token (MAC, ledger look-up, expiry) and the inputs' digests. */
  'verify',
  /** Re-derivation from the runner's private copy: the skill found, copied and hashed. */
  'derive',
  /** The run's own uid taken from the pool. */
  'uid',
  /** The token spent in the ledger (durably); in a held sandbox after the spawn call (run-path.ts). */
  'spend',
  /** The run's folder and workspace (a tmpfs as root) with the inputs written. */
  'workspace',
  /**
   * Waiting for the run's helper to listen (proxied runs only): what is left of its start once the
   * process is prepared, or in a held sandbox once the spawn call is made (run-path.ts).
   */
  'proxy',
  /** The run's memory cgroup made. */
  'cgroup',
  /**
   * The spawn's command line built and the run.accept line on disk. In a held sandbox the line is
   * written while bubblewrap builds it (run-path.ts): then only the wait left after the spawn call.
   */
  'accept',
  /** The spawn call itself: the chain's first program exec'd (held: with the command line built). */
  'spawn',
  /** From that exec to the run's main process gone: the sandbox built, the script's life, the sandbox taken down. */
  'script',
  /** The run's leftovers killed (its cgroup or its uid). */
  'reap',
  /** The script's output pipes read to their end. */
  'drain',
  /** The workspace's last look, the proxy closed, the output files read. */
  'outputs',
  // Then the exit line; the answer goes once it is durable, and the workspace and the copy are removed after it (run-path.ts afterAnswer).
] as const;

export type RunPhase = (typeof RUN_PHASES)[number];

export class RunPhases {
  readonly #ms: Partial<Record<RunPhase, number>> = {};
  #last: number;

  /** `startedAt`: the `performance.now()` the first phase began at (the connection's first byte). */
  constructor(startedAt: number = performance.now()) {
    this.#last = startedAt;
  }

  /** Ends `phase` now: the time since the previous mark is added to it. */
  mark(phase: RunPhase, now: number = performance.now()): void {
    this.#ms[phase] = (this.#ms[phase] ?? 0) + Math.max(0, now - this.#last);
    this.#last = now;
  }

  /** The phases so far, in their order, in ms to 0.01 (the audit line's `phases_ms`). */
  snapshot(): Partial<Record<RunPhase, number>> {
    const out: Partial<Record<RunPhase, number>> = {};
    for (const phase of RUN_PHASES) {
      const ms = this.#ms[phase];
      if (ms !== undefined) out[phase] = Math.round(ms * 100) / 100;
    }
    return out;
  }
}
