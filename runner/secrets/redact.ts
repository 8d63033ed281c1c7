/**
 * @module Redaction, the second wall (issue 30; docs/secrets-redaction.md): every value a run could
 * have seen is searched for in what it returns, in each spelling of runner/secrets/forms.ts, and
 * each occurrence replaced by `[secret:NAME]`. Pure and streamed: a {@link Redactor} takes a stream
 * chunk by chunk and keeps only a carry of (longest spelling − 1) bytes between chunks, never a copy
 * of the whole output.
 *
 * The rule for overlaps: every byte inside any occurrence of any spelling is replaced. Occurrences
 * that overlap or touch form one stretch; a stretch is written as one `[secret:NAME]` per occurrence
 * that is not inside a longer one (so the longest wins where spellings nest), in order, a name
 * repeated back to back written once. The counts are the markers written.
 *
 * Security: the carry is what makes a value split across two chunks still caught, and at an output
 * cap it is dropped whole (never the part of it that matched): a script writing up to the cap cannot
 * leak the first bytes of a value that the cap cuts off, nor learn from what was held back whether
 * its bytes began a value (that would be an oracle for guessing a value byte by byte).
 */
import type { RedactionValue } from './binding.js';
import { formsOf, joinedForm, joinsPlainly, LineJoin, MIN_REDACTED_BYTES, searchable } from './forms.js';

interface Pattern {
  bytes: Buffer;
  name: string;
}

/** A pattern as a redactor searches it: in the joined text always, and as it is too unless it joins plainly. */
interface Compiled {
  /** Searched in the window as it is (undefined: every occurrence is found joined). */
  bytes: Buffer | undefined;
  /** Searched in the window's joined text (undefined: too short once its own line breaks are out). */
  joined: Buffer | undefined;
  name: string;
}

/** Patterns compiled once for every stream of a run, with the longest joined length − 1. */
interface CompiledSet {
  compiled: Compiled[];
  keepJoined: number;
}

function compile(patterns: readonly Pattern[]): CompiledSet {
  const compiled = patterns.map(({ bytes, name }): Compiled => {
    if (joinsPlainly(bytes)) return { bytes: undefined, joined: bytes, name };
    const joined = joinedForm(bytes);
    return { bytes, joined: joined.length >= MIN_REDACTED_BYTES ? joined : undefined, name };
  });
  return { compiled, keepJoined: Math.max(0, ...compiled.map((p) => p.joined?.length ?? 0)) - 1 };
}

interface Occurrence {
  start: number;
  end: number;
  name: string;
}

/** A stretch of overlapping or touching occurrences (absolute stream offsets), not yet written. */
interface Stretch {
  start: number;
  end: number;
  names: string[];
}

const EMPTY = Buffer.alloc(0);

export const marker = (name: string): string => `[secret:${name}]`;

/** One stream's redaction: `push` each chunk, then `end` once; each returns the bytes to pass on, in order. */
export class Redactor {
  private carry: Buffer = EMPTY;
  /** Bytes pushed so far (the absolute offset of the next chunk). */
  private pos = 0;
  /** Everything before it is written or inside a written stretch. */
  private cursor = 0;
  private open: Stretch | undefined;
  /** Whether the byte before the carry was a real one (forms.ts LineJoin): the carry is joined as it was. */
  private afterReal = true;
  /** Bytes dropped by `end(true)`: the carry at a cut, outside any whole occurrence. */
  heldBack = 0;
  private readonly compiled: Compiled[];
  /** The longest joined pattern's length − 1: real bytes to carry. */
  private readonly keepJoined: number;

  /**
   * @param keep how many bytes to carry between chunks: the longest pattern's length − 1.
   * @param onMarker called once per `[secret:NAME]` written.
   */
  constructor(
    patterns: readonly Pattern[] | CompiledSet,
    private readonly keep: number,
    private readonly onMarker: (name: string) => void,
  ) {
    const set = 'compiled' in patterns ? patterns : compile(patterns);
    this.compiled = set.compiled;
    this.keepJoined = set.keepJoined;
  }

  push(chunk: Uint8Array): Buffer[] {
    return this.scan(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength), false, false);
  }

  /**
   * Ends the stream. `cut`: the stream was cut at a cap, so the carry's bytes may begin a value whose
   * rest never came — they are dropped (counted in {@link heldBack}); whole occurrences in it are still markers.
   */
  end(cut = false): Buffer[] {
    return this.scan(EMPTY, true, cut);
  }

  private scan(chunk: Buffer, final: boolean, cut: boolean): Buffer[] {
    const carry = this.carry;
    const window = carry.length === 0 ? chunk : chunk.length === 0 ? carry : Buffer.concat([carry, chunk]);
    const ws = this.pos - carry.length;
    const we = this.pos + chunk.length;
    this.pos = we;
    const joined = new LineJoin(window, this.afterReal);
    // Security: an occurrence starting at or past `boundary` may still be growing into the next
    // chunk, so nothing from there on is written yet; it is searched again with the next chunk. In
    // the joined text that is the last (longest joined − 1) real bytes before the first byte whose
    // joining the next chunk could still change; and the boundary is never inside a joint.
    let boundary = final ? we : Math.max(ws, we - this.keep);
    if (!final) {
      const settled = joined.unsettledFrom();
      const k = joined.realBefore(settled) - this.keepJoined;
      const fromJoined = k <= 0 ? 0 : Math.min(settled, joined.origin(k));
      boundary = ws + joined.snap(Math.min(boundary - ws, fromJoined));
    }
    const found: Occurrence[] = [];
    const text = joined.text;
    for (const p of this.compiled) {
      if (p.bytes !== undefined)
        for (let i = window.indexOf(p.bytes); i !== -1 && ws + i < boundary; i = window.indexOf(p.bytes, i + 1))
          found.push({ start: ws + i, end: ws + i + p.bytes.length, name: p.name });
      if (p.joined === undefined) continue;
      const last = p.joined.length - 1;
      for (let k = text.indexOf(p.joined); k !== -1; k = text.indexOf(p.joined, k + 1)) {
        const start = ws + joined.origin(k);
        if (start >= boundary) break;
        found.push({ start, end: ws + joined.origin(k + last) + 1, name: p.name });
      }
    }
    // Start order, the longer first at one start: a stretch grows left to right, nested ones fold in.
    found.sort((a, b) => a.start - b.start || b.end - a.end);
    const out: Buffer[] = [];
    const raw = (to: number): void => {
      const from = Math.max(this.cursor, ws);
      if (to <= from) return;
      if (cut) this.heldBack += to - from;
      else out.push(window.subarray(from - ws, to - ws));
      this.cursor = to;
    };
    const write = (stretch: Stretch): void => {
      raw(stretch.start);
      for (const name of stretch.names) {
        out.push(Buffer.from(marker(name)));
        this.onMarker(name);
      }
      this.cursor = Math.max(this.cursor, stretch.end);
    };
    let open = this.open;
    for (const o of found) {
      if (open !== undefined && o.start <= open.end) {
        // Inside the stretch's longest occurrence so far: folded in, not named again.
        if (o.end <= open.end) continue;
        if (open.names.at(-1) !== o.name) open.names.push(o.name);
        open.end = o.end;
        continue;
      }
      if (open !== undefined) write(open);
      open = { start: o.start, end: o.end, names: [o.name] };
    }
    // A stretch that ends before the boundary cannot grow: nothing later starts before the boundary.
    if (open !== undefined && (final || open.end < boundary)) {
      write(open);
      open = undefined;
    }
    this.open = open;
    raw(open !== undefined ? Math.min(open.start, boundary) : boundary);
    if (boundary > ws) this.afterReal = joined.isReal(boundary - ws - 1);
    this.carry = final ? EMPTY : Buffer.from(window.subarray(boundary - ws));
    return out;
  }
}

/** What a run's result and its `run.exit` line say about redaction (never a value). */
export interface RedactionSummary {
  /** Markers written, in all. */
  count: number;
  /** Per name, the names with at least one marker, sorted. */
  names: { name: string; count: number }[];
  /** Values not searched for (shorter than 8 bytes: runner/secrets/forms.ts). */
  notSearched?: string[];
}

/** A run's redaction: its values' spellings compiled once, and one tally for everything it returns. */
export class RunRedaction {
  private readonly patterns: Pattern[] = [];
  private readonly compiled: CompiledSet;
  private readonly keep: number;
  private readonly counts = new Map<string, number>();
  private readonly notSearched: string[];
  /** The run has values to report on (searched or not): its result carries a summary. */
  readonly reported: boolean;

  constructor(values: readonly RedactionValue[]) {
    this.reported = values.length > 0;
    const skipped = new Set<string>();
    for (const { name, value } of values) {
      if (!searchable(value)) {
        skipped.add(name);
        continue;
      }
      for (const bytes of formsOf(value)) this.patterns.push({ bytes, name });
    }
    // A name that is also searched under another binding was searched.
    for (const p of this.patterns) skipped.delete(p.name);
    this.notSearched = [...skipped].sort();
    this.keep = Math.max(0, ...this.patterns.map((p) => p.bytes.length)) - 1;
    this.compiled = compile(this.patterns);
  }

  /**
   * A redactor for one stream, or undefined when there is nothing to search for. Each marker it
   * writes is counted in the run's totals and, when given, told to `marked` too.
   */
  stream(marked?: (name: string) => void): Redactor | undefined {
    if (this.patterns.length === 0) return undefined;
    return new Redactor(this.compiled, this.keep, (name) => {
      this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
      marked?.(name);
    });
  }

  /** A short text the run chose (a destination, a file name), redacted whole; `marked` as for {@link stream}. */
  text(text: string, marked?: (name: string) => void): string {
    const r = this.stream(marked);
    if (r === undefined) return text;
    return Buffer.concat([...r.push(Buffer.from(text, 'utf8')), ...r.end()]).toString('utf8');
  }

  /** The same values, already compiled, with no marker counted yet: what one more part of the run's output writes. */
  fresh(): RunRedaction {
    return Object.assign(Object.create(RunRedaction.prototype) as RunRedaction, this, { counts: new Map<string, number>() });
  }

  /** Markers written so far, by name. */
  countsByName(): Record<string, number> {
    return Object.fromEntries(this.counts);
  }

  summary(): RedactionSummary {
    const names = [...this.counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, count]) => ({ name, count }));
    return {
      count: names.reduce((n, e) => n + e.count, 0),
      names,
      ...(this.notSearched.length > 0 ? { notSearched: this.notSearched } : {}),
    };
  }
}
