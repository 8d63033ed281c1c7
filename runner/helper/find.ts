/**
 * @module Finding (and replacing) a few byte strings in a stream without holding it: the proxy
 * counts placeholders in request bodies it forwards as they are, and swaps an echoed secret value
 * back to its placeholder in responses. Pure: chunks in, chunks and counts out.
 *
 * Security: a needle split across two chunks is still found — the scanner keeps the last
 * (longest needle − 1) bytes it has seen — so a script cannot hide a placeholder (or a server its
 * echo of the value) by where the chunks happen to break. Memory per stream is bounded by the
 * longest needle, whatever the body's size.
 */

export interface Needle {
  /** Whose it is (a secret's name): counts are kept per name. */
  name: string;
  bytes: Buffer;
}

/** Counts needles in a stream it does not change: `push` each chunk as it passes. */
export interface Scanner {
  push(chunk: Buffer): void;
  /** Occurrences found so far, per needle name (names with none are absent). */
  readonly counts: Map<string, number>;
}

export function makeScanner(needles: readonly Needle[]): Scanner {
  const usable = needles.filter((n) => n.bytes.length > 0);
  const keep = Math.max(0, ...usable.map((n) => n.bytes.length - 1));
  const counts = new Map<string, number>();
  let tail = Buffer.alloc(0);
  return {
    counts,
    push(chunk) {
      if (usable.length === 0 || chunk.length === 0) return;
      const window = tail.length > 0 ? Buffer.concat([tail, chunk]) : chunk;
      for (const needle of usable) {
        // Only matches that end inside the new chunk: one lying wholly in the kept tail was counted before.
        let at = window.indexOf(needle.bytes, Math.max(0, tail.length - needle.bytes.length + 1));
        while (at !== -1) {
          counts.set(needle.name, (counts.get(needle.name) ?? 0) + 1);
          at = window.indexOf(needle.bytes, at + needle.bytes.length);
        }
      }
      tail = Buffer.from(window.subarray(Math.max(0, window.length - keep)));
    },
  };
}

export interface Swap extends Needle {
  /** What each occurrence becomes. */
  to: Buffer;
}

/** Replaces needles in a stream: `push` returns what may go out now, `end` the held-back rest. */
export interface Replacer {
  push(chunk: Buffer): Buffer;
  end(): Buffer;
  /** Replacements made so far, per needle name. */
  readonly counts: Map<string, number>;
}

export function makeReplacer(swaps: readonly Swap[]): Replacer {
  const usable = swaps.filter((s) => s.bytes.length > 0);
  const keep = Math.max(0, ...usable.map((s) => s.bytes.length - 1));
  const counts = new Map<string, number>();
  let held = Buffer.alloc(0);
  /** Replaces every whole match in `data`; with `final`, nothing is held back. */
  function run(data: Buffer, final: boolean): Buffer {
    const out: Buffer[] = [];
    let from = 0;
    for (;;) {
      let best = -1;
      let which: Swap | undefined;
      for (const swap of usable) {
        const at = data.indexOf(swap.bytes, from);
        if (at !== -1 && (best === -1 || at < best)) {
          best = at;
          which = swap;
        }
      }
      if (which === undefined) break;
      out.push(data.subarray(from, best), which.to);
      counts.set(which.name, (counts.get(which.name) ?? 0) + 1);
      from = best + which.bytes.length;
    }
    // A match can only start in the last `keep` bytes if it runs past the end: hold those back.
    const safe = final ? data.length : Math.max(from, data.length - keep);
    out.push(data.subarray(from, safe));
    held = Buffer.from(data.subarray(safe));
    return Buffer.concat(out);
  }
  return {
    counts,
    push(chunk) {
      if (usable.length === 0) return chunk;
      return run(held.length > 0 ? Buffer.concat([held, chunk]) : chunk, false);
    },
    end() {
      return run(held, true);
    },
  };
}
