/**
 * @module Small text helpers the rules share: offsets to line and column, markdown code masked
 * out (a link or comment shown as code is not a link or a comment), and a safe one-line quote of
 * text for a message.
 */

/** Maps string offsets to 1-based line and column (UTF-16 code units, as editors and SARIF count). */
export class LineIndex {
  readonly #starts: number[] = [0];

  constructor(text: string) {
    for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) this.#starts.push(i + 1);
  }

  at(offset: number): { line: number; column: number } {
    let lo = 0;
    let hi = this.#starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.#starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: offset - this.#starts[lo]! + 1 };
  }
}

/** The number of lines, counting a last line without a newline, not counting an empty tail. */
export function lineCount(text: string): number {
  if (text === '') return 0;
  const breaks = text.split('\n').length - 1;
  return text.endsWith('\n') ? breaks : breaks + 1;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/**
 * `text` with markdown code (fenced blocks and inline code spans) replaced by spaces, newlines
 * kept, so offsets still match the original.
 */
export function maskMarkdownCode(text: string): string {
  const lines = text.split('\n');
  let fence: string | undefined;
  const out = lines.map((line) => {
    const open = FENCE.exec(line);
    if (fence !== undefined) {
      if (open && open[1]![0] === fence[0] && open[1]!.length >= fence.length && line.trim() === open[1]) fence = undefined;
      return ' '.repeat(line.length);
    }
    if (open) {
      fence = open[1]!;
      return ' '.repeat(line.length);
    }
    return line;
  });
  return maskCodeSpans(out.join('\n'));
}

/**
 * Inline code spans masked: a run of backticks opens a span that the next run of exactly the same
 * length closes (a run with no such partner is literal text). Runs are listed once, and each
 * length keeps a pointer to its next run, so the text is read a bounded number of times — a
 * regex (`(`+)([\s\S]*?[^`])\1`) rescanned the rest of the text from every unmatched backtick.
 */
function maskCodeSpans(text: string): string {
  const starts: number[] = [];
  const lengths: number[] = [];
  for (let at = text.indexOf('`'); at !== -1; ) {
    let end = at + 1;
    while (text.charCodeAt(end) === 96) end++;
    starts.push(at);
    lengths.push(end - at);
    at = text.indexOf('`', end);
  }
  if (starts.length < 2) return text;
  // The next run of the same length after each run (-1: none), from one backward pass.
  const nextSame = new Int32Array(starts.length);
  const lastOf = new Map<number, number>();
  for (let r = starts.length - 1; r >= 0; r--) {
    nextSame[r] = lastOf.get(lengths[r]!) ?? -1;
    lastOf.set(lengths[r]!, r);
  }
  let codes: Uint16Array | undefined;
  for (let r = 0; r < starts.length; ) {
    const closer = nextSame[r]!;
    if (closer === -1) {
      r++;
      continue;
    }
    if (codes === undefined) {
      codes = new Uint16Array(text.length);
      for (let i = 0; i < text.length; i++) codes[i] = text.charCodeAt(i);
    }
    for (let i = starts[r]!, end = starts[closer]! + lengths[closer]!; i < end; i++) if (codes[i] !== 10) codes[i] = 32;
    r = closer + 1;
  }
  return codes ? new TextDecoder('utf-16le').decode(codes) : text;
}

/** Characters that would make a quoted excerpt misleading or multi-line. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is what this is for
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]|[\u{e0000}-\u{e007f}]/gu;

/** `text` as one short, printable line for a message. */
export function quote(text: string, maxChars = 80): string {
  const flat = text.replace(UNSAFE, ' ').replace(/\s+/g, ' ').trim();
  const chars = [...flat];
  return JSON.stringify(chars.length > maxChars ? `${chars.slice(0, maxChars).join('')}…` : flat);
}

/** "1 thing" / "2 things". */
export function plural(count: number, one: string, many = `${one}s`): string {
  return `${count.toLocaleString('en-US')} ${count === 1 ? one : many}`;
}
