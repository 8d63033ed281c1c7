/**
 * @module The audit lines the Redis link's mirror asks for (runner/audit/mirror.ts): read by the
 * runner from its own log — the link process cannot read it — after a seq, from the rotated
 * segments that may hold some and the live one, at most a batch at a time. A cursor remembers
 * where the last line it gave ends in the live segment, so a busy log is not read again from its
 * start at every line; a rotation (another inode) or a seq before the cursor reads the segments again.
 */
import { closeSync, openSync, readSync, fstatSync, statSync } from 'node:fs';
import { allSegments } from './segments.js';
import type { MirrorLine } from '../redis/link-protocol.js';

interface Parsed {
  seq: number;
  prev: string;
  line: string;
  /** Byte offset just past this line's newline. */
  end: number;
  /** In the live segment (its offset can be a cursor). */
  live?: boolean;
}

function inodeOf(path: string): number {
  try {
    return statSync(path).ino;
  } catch {
    return -1;
  }
}

/**
 * Every line after `seq`, from the rotated segments that may hold some (newest first, back to the
 * one that starts at or before it) and the live one. A segment is at most SKILL_MCP_AUDIT_MAX_BYTES.
 */
function linesAfter(path: string, seq: number): Parsed[] {
  const files = allSegments(path);
  const wanted: string[] = [];
  for (let i = files.length - 1; i >= 0; i--) {
    wanted.unshift(files[i]!);
    const first = parse(readHead(files[i]!), 0)[0];
    if (first === undefined || first.seq <= seq + 1) break;
  }
  return wanted.flatMap((file) => parse(readFrom(file, 0), 0).map((l) => (file === path ? { ...l, live: true } : l)));
}

/** The first 64 KiB of a file (enough for its first line). */
function readHead(path: string): string {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(Math.min(fstatSync(fd).size, 64 * 1024));
    readSync(fd, buf, 0, buf.length, 0);
    return buf.toString('utf8');
  } finally {
    closeSync(fd);
  }
}

function parse(text: string, base: number): Parsed[] {
  const out: Parsed[] = [];
  let start = 0;
  let end = base;
  for (;;) {
    const nl = text.indexOf('\n', start);
    if (nl < 0) break; // a line still being written (or torn): not yet
    const line = text.slice(start, nl);
    start = nl + 1;
    end += Buffer.byteLength(line) + 1;
    try {
      const entry = JSON.parse(line) as { seq?: unknown; prev?: unknown };
      if (typeof entry.seq === 'number' && typeof entry.prev === 'string')
        out.push({ seq: entry.seq, prev: entry.prev, line, end, live: false });
    } catch {
      // a broken line: the local verify names it; the next line will not chain in the stream
    }
  }
  return out;
}

function readFrom(path: string, offset: number): string {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size <= offset) return '';
    const buf = Buffer.alloc(size - offset);
    readSync(fd, buf, 0, buf.length, offset);
    return buf.toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** Lines given per answer, and their most bytes (a link line must stay under MAX_LINK_LINE_BYTES). */
const ANSWER_LINES = 5000;
const ANSWER_BYTES = 2 * 1024 * 1024;

export class MirrorSource {
  /** Where the line with `seq` ends in the live segment (of inode `ino`). */
  #cursor = { seq: 0, offset: 0, ino: -1 };

  constructor(private readonly auditPath: string) {}

  /** The next lines after `after` (none when there are no more). */
  after(after: number): MirrorLine[] {
    const ino = inodeOf(this.auditPath);
    const fromCursor = this.#cursor.seq > 0 && this.#cursor.seq <= after && this.#cursor.ino === ino;
    const lines = (
      fromCursor
        ? parse(readFrom(this.auditPath, this.#cursor.offset), this.#cursor.offset).map((l) => ({ ...l, live: true }))
        : linesAfter(this.auditPath, after)
    ).filter((l) => l.seq > after);
    const out: MirrorLine[] = [];
    let bytes = 0;
    for (const l of lines) {
      if (out.length === ANSWER_LINES || (out.length > 0 && bytes + l.line.length > ANSWER_BYTES)) break;
      out.push({ seq: l.seq, prev: l.prev, line: l.line });
      bytes += l.line.length;
      if (l.live) this.#cursor = { seq: l.seq, offset: l.end, ino };
    }
    return out;
  }
}
