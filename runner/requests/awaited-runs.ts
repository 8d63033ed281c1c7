/**
 * @module The previewed runs a runner keeps a spare for. A spare (a root runner's outputs walker, a
 * proxied run's network helper) is a node start of its own. One is started at a run's preview,
 * while a person reads it, and after a run's answer only while another previewed run still waits
 * for one — a preview not yet run whose token has not expired. Before, a spare was started after
 * every answer: half of them were never used (a runner whose runs are each previewed first starts
 * one at the next preview anyway), each an idle process, as root one holding CAP_SETUID (walker)
 * or a uid of the run range (helper), and its start slowed a request sent right after the answer
 * (a preview then: ~53 ms against ~27 ms, bench/RESULTS.md).
 */

/** The most previews remembered: past it the oldest is forgotten (a spare is only a head start). */
const MAX_AWAITED = 1_000;

export class AwaitedRuns {
  /** When each previewed run's token expires (ms since the epoch), oldest first: the TTL is one per runner. */
  readonly #until: number[] = [];

  /** A run was previewed; its token expires at `until`. */
  add(until: number): void {
    this.#until.push(until);
    if (this.#until.length > MAX_AWAITED) this.#until.shift();
  }

  /** A run took its spare: the oldest preview is taken as its own. */
  taken(): void {
    this.#until.shift();
  }

  /** Whether a previewed run may still come and want a spare. */
  waiting(now: number = Date.now()): boolean {
    while (this.#until.length > 0 && this.#until[0]! <= now) this.#until.shift();
    return this.#until.length > 0;
  }
}
