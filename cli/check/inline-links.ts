/**
 * @module Inline markdown links — `[text](target "title")`, `![alt](<target>)` — found in one pass.
 * The same links as the regular expression
 * `!?\[[^\]\n]*\]\(\s*(<[^>\n]*>|[^\s)]+)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)` (global), without
 * its cost: as a regex it retries from every `[` and rescans to the same `]`, target end or `>`
 * each time (quadratic on `[[[[…` or `[a](b[a](b…`). Here every such scan is remembered by where it
 * ends: two starts that reach the same `]` (or the same end of target) fail or succeed alike, so
 * the text is scanned a bounded number of times. Pure.
 */

export interface InlineTarget {
  /** As written, angle brackets included. */
  written: string;
  /** Offset of `written` in the text. */
  offset: number;
}

/** JavaScript's `\s`, by code unit (a regex per character would cost more than the scan). */
function isSpace(code: number): boolean {
  return (
    (code >= 9 && code <= 13) ||
    code === 32 ||
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

/** The first index at or after `from` whose character passes `stop`, remembered for later calls from inside the scanned stretch. */
class NextStop {
  #from = -1;
  #at = -1;
  constructor(
    private readonly text: string,
    private readonly stop: (code: number) => boolean,
  ) {}

  at(from: number): number {
    // Security (of the rule's cost): no character in [#from, #at) stops, so the answer from inside it is the same.
    if (this.#from !== -1 && from >= this.#from && (this.#at === -1 || from <= this.#at)) return this.#at;
    let i = from;
    while (i < this.text.length && !this.stop(this.text.charCodeAt(i))) i++;
    this.#from = from;
    this.#at = i < this.text.length ? i : -1;
    return this.#at;
  }
}

/** Every inline link target in `text`, in order. */
export function inlineLinks(text: string): InlineTarget[] {
  const closeBracket = new NextStop(text, (c) => c === 93 || c === 10); // ] \n
  const angleEnd = new NextStop(text, (c) => c === 62 || c === 10); // > \n
  const targetEnd = new NextStop(text, (c) => c === 41 || isSpace(c)); // )
  const notSpace = new NextStop(text, (c) => !isSpace(c));
  const quoteEnd = {
    '"': new NextStop(text, (c) => c === 34),
    "'": new NextStop(text, (c) => c === 39),
    '(': new NextStop(text, (c) => c === 41),
  };
  /** Where the link ends (after `)`) when a target ending at `p` is followed by an optional title and `)`, else -1. */
  const rest = (p: number): number => {
    const q = notSpace.at(p);
    if (q === -1) return -1;
    const opener = text[q]!;
    if (q > p && (opener === '"' || opener === "'" || opener === '(')) {
      const close = quoteEnd[opener].at(q + 1);
      if (close !== -1) {
        const after = notSpace.at(close + 1);
        if (after !== -1 && text[after] === ')') return after + 1;
      }
    }
    return opener === ')' ? q + 1 : -1;
  };
  const restMemo = new Map<number, number>();
  const restAt = (p: number): number => {
    let end = restMemo.get(p);
    if (end === undefined) {
      end = rest(p);
      restMemo.set(p, end);
    }
    return end;
  };
  const out: InlineTarget[] = [];
  let pos = 0;
  for (;;) {
    const open = text.indexOf('[', pos);
    if (open === -1) break;
    const close = closeBracket.at(open + 1);
    if (close === -1) break; // no `]` at all after this: no later link either
    if (text[close] !== ']' || text[close + 1] !== '(') {
      pos = close + 1; // every `[` before `close` reaches the same character
      continue;
    }
    const k = notSpace.at(close + 2);
    let end = -1;
    let written = '';
    if (k !== -1 && text[k] === '<') {
      const gt = angleEnd.at(k + 1);
      if (gt !== -1 && text[gt] === '>') {
        end = restAt(gt + 1);
        if (end !== -1) written = text.slice(k, gt + 1);
      }
    }
    if (end === -1 && k !== -1 && text[k] !== ')') {
      const stop = targetEnd.at(k);
      const targetStop = stop === -1 ? text.length : stop;
      end = restAt(targetStop);
      if (end !== -1) written = text.slice(k, targetStop);
    }
    if (end === -1) {
      pos = close + 1;
      continue;
    }
    out.push({ written, offset: k });
    pos = end;
  }
  return out;
}
