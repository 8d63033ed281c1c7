/**
 * @module How many chunks of skill content one process reads and hashes at once. Node runs every
 * finished read of its thread pool in one turn of the event loop, so twenty describes of a large
 * skill reading side by side would hash twenty chunks between two looks at the sockets — and a
 * cancel would wait behind them. Through one gate, at most `max` chunks are in flight, handed out
 * in arrival order (every reader moves on, none starves): a turn of the loop holds a few chunks'
 * hashing, whatever the number of readers. The runner owns one gate for all its requests.
 */

export class ChunkGate {
  #active = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(readonly max: number) {}

  /** Runs `step` once one of the `max` places is free; the place is given back when it settles. */
  async run<T>(step: () => Promise<T>): Promise<T> {
    if (this.#active >= this.max) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#active++;
    try {
      return await step();
    } finally {
      // The place passes straight to the next waiter (still counted as active), or is freed.
      const next = this.#waiting.shift();
      if (next) next();
      else this.#active--;
    }
  }
}
