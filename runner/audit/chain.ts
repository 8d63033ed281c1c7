/**
 * @module The hash chain's small pieces, shared by the writer, the verifier, the mirror and the
 * queries: the sha256 of a line's bytes, the genesis `prev`, and reading a log's first and last
 * lines from an open fd without reading the whole file.
 */
import * as crypto from 'node:crypto';
import { fstatSync, readSync } from 'node:fs';

export const GENESIS_PREV = '0'.repeat(64);
/** First window read back from the end for the last line (grown until it holds one whole line). */
const LAST_LINE_BYTES = 4096;
/** Read back from the end when the last line has no seq (a torn line): enough for any real line. */
const TAIL_BYTES = 256 * 1024;

/** One-shot `crypto.hash` where Node has it (20.12+): several times cheaper per line than a Hash object. */
const oneShot = (crypto as { hash?: (algorithm: string, data: string | Buffer, encoding: 'hex') => string }).hash;

export function lineHash(line: string | Buffer): string {
  return oneShot ? oneShot('sha256', line, 'hex') : crypto.createHash('sha256').update(line).digest('hex');
}

export function seqOf(line: string): number | undefined {
  try {
    const seq = (JSON.parse(line) as { seq?: unknown }).seq;
    return typeof seq === 'number' && Number.isSafeInteger(seq) ? seq : undefined;
  } catch {
    return undefined; // a broken line: verify reports it
  }
}

/** The log's last line (without its newline), and whether the file ends mid-line (a torn write). */
export function lastLine(fd: number): { line: string | undefined; torn: boolean } {
  const size = fstatSync(fd).size;
  if (size === 0) return { line: undefined, torn: false };
  for (let length = Math.min(size, LAST_LINE_BYTES); ; length = Math.min(size, length * 4)) {
    const buf = Buffer.alloc(length);
    readSync(fd, buf, 0, length, size - length);
    const torn = buf[length - 1] !== 0x0a;
    const end = torn ? length : length - 1;
    const start = buf.lastIndexOf(0x0a, end - 1) + 1;
    if (start > 0 || length === size) return { line: buf.subarray(start, end).toString('utf8'), torn };
  }
}

/** The complete lines at the end of the file, at most TAIL_BYTES of them. */
export function tailLines(fd: number, bytes = TAIL_BYTES): string[] {
  const size = fstatSync(fd).size;
  if (size === 0) return [];
  const length = Math.min(size, bytes);
  const buf = Buffer.alloc(length);
  readSync(fd, buf, 0, length, size - length);
  const lines = buf.toString('utf8').replace(/\n$/, '').split('\n');
  if (length < size) lines.shift(); // the window may start mid-line
  return lines;
}

/** The seq of the last line that has one, among `lines` (0 when none does). */
export function lastSeq(lines: readonly string[]): number {
  for (let i = lines.length - 1; i >= 0; i--) {
    const seq = seqOf(lines[i]!);
    if (seq !== undefined) return seq;
  }
  return 0;
}

/** The first line of the file (without its newline), or undefined when it holds no whole line. */
export function firstLine(fd: number): string | undefined {
  const size = fstatSync(fd).size;
  for (let length = Math.min(size, LAST_LINE_BYTES); length > 0; length = Math.min(size, length * 4)) {
    const buf = Buffer.alloc(length);
    readSync(fd, buf, 0, length, 0);
    const nl = buf.indexOf(0x0a);
    if (nl >= 0) return buf.subarray(0, nl).toString('utf8');
    if (length === size) return undefined;
  }
  return undefined;
}
