/**
 * @module Splits stdin into newline-delimited JSON-RPC lines with a hard per-line cap. A line over
 * the cap is never buffered: its bytes go through {@link TopLevelIdScanner} and are dropped, and
 * the reader reports it (with the id it carried) once its newline arrives, so the sender can be
 * answered and the session goes on.
 */
import { TopLevelIdScanner } from './top-level-id.js';

export type LineEvent = { line: string } | { oversized: { bytes: number; id: string | number | null | undefined } };

export class LineReader {
  private parts: Buffer[] = [];
  private size = 0;
  private scanner: TopLevelIdScanner | undefined;

  constructor(private readonly maxLineBytes: number) {}

  /** Feeds a chunk; returns the lines it completed, in order. */
  push(chunk: Buffer): LineEvent[] {
    const events: LineEvent[] = [];
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(0x0a, start);
      const end = newline === -1 ? chunk.length : newline;
      this.take(chunk.subarray(start, end));
      if (newline === -1) break;
      events.push(this.finish());
      start = newline + 1;
    }
    return events;
  }

  /** The bytes of a last line that had no newline when the input ended (answered like any other). */
  end(): LineEvent[] {
    return this.size === 0 && this.scanner === undefined ? [] : [this.finish()];
  }

  private take(piece: Buffer): void {
    if (piece.length === 0) return;
    this.size += piece.length;
    if (this.scanner) {
      this.scanner.feed(piece);
      return;
    }
    if (this.size <= this.maxLineBytes) {
      this.parts.push(piece);
      return;
    }
    // Security: over the cap the line is scanned and dropped, never held — a client cannot make
    // the front buffer more than one capped line, however long it writes without a newline.
    this.scanner = new TopLevelIdScanner();
    for (const part of this.parts) this.scanner.feed(part);
    this.scanner.feed(piece);
    this.parts = [];
  }

  private finish(): LineEvent {
    const event: LineEvent = this.scanner
      ? { oversized: { bytes: this.size, id: this.scanner.id() } }
      : { line: Buffer.concat(this.parts, this.size).toString('utf8').replace(/\r$/, '') };
    this.parts = [];
    this.size = 0;
    this.scanner = undefined;
    return event;
  }
}
