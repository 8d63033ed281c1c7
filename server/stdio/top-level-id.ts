/**
 * @module Finds the top-level `"id"` of a JSON-RPC message without keeping the message: fed the
 * bytes of a line too long to buffer, it remembers only its nesting depth and, while inside the
 * `id` value, at most {@link MAX_ID_BYTES} bytes. So an oversized request can still be answered
 * under its own id (the SDK's client writes `id` after `params`, at the very end of the line).
 *
 * Works on bytes: every structural JSON character is ASCII and no byte of a multi-byte UTF-8
 * sequence is, so nothing inside a string is mistaken for structure.
 */

/** Longest id kept (bytes of its JSON text); a longer one counts as absent. */
export const MAX_ID_BYTES = 256;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

type Phase = 'start' | 'key' | 'colon' | 'value' | 'done';

export class TopLevelIdScanner {
  private depth = 0;
  private inString = false;
  private escaped = false;
  private phase: Phase = 'start';
  /** The key being read at depth 1, while it can still be `id`. */
  private key: number[] | undefined;
  /** The bytes of the `id` member's value while it is read; undefined for any other member. */
  private capture: number[] | undefined;
  private found: string | number | null | undefined;

  /** Feeds the next bytes of the line. Memory stays bounded whatever the line holds. */
  feed(bytes: Uint8Array): void {
    for (const byte of bytes) {
      if (this.phase === 'done') return;
      this.step(byte);
    }
  }

  /** After the whole line: its top-level id, or undefined when there is none (a notification, not an object, or no usable id). */
  id(): string | number | null | undefined {
    return this.found;
  }

  private step(byte: number): void {
    if (this.inString) {
      this.keep(byte);
      if (this.escaped) this.escaped = false;
      else if (byte === BACKSLASH) this.escaped = true;
      else if (byte === QUOTE) {
        this.inString = false;
        if (this.depth === 1 && this.phase === 'key') this.phase = 'colon';
      } else if (this.depth === 1 && this.phase === 'key' && this.key !== undefined) {
        this.key.push(byte);
        if (this.key.length > 2) this.key = undefined;
      }
      return;
    }
    if (byte === 0x20 || byte === 0x09 || byte === 0x0d || byte === 0x0a) return;
    if (this.depth === 0) {
      // Only an object has members; anything else has no id.
      if (this.phase === 'start' && byte === 0x7b) {
        this.depth = 1;
        this.phase = 'key';
      } else this.phase = 'done';
      return;
    }
    if (this.depth === 1 && this.phase !== 'value') {
      this.structure(byte);
      return;
    }
    if (this.depth === 1 && (byte === 0x2c || byte === 0x7d)) {
      // The end of a member's value.
      this.finishCapture();
      if (byte === 0x2c) this.phase = 'key';
      else this.phase = 'done';
      return;
    }
    this.keep(byte);
    if (byte === QUOTE) this.inString = true;
    else if (byte === 0x7b || byte === 0x5b) this.depth++;
    else if (byte === 0x7d || byte === 0x5d) this.depth--;
  }

  /** A byte directly inside the top-level object, between members' values. */
  private structure(byte: number): void {
    if (this.phase === 'key') {
      if (byte === QUOTE) {
        this.inString = true;
        this.key = [];
      } else this.phase = 'done'; // `}` ends the object; anything else is not JSON
      return;
    }
    if (this.phase === 'colon' && byte === 0x3a) {
      this.phase = 'value';
      this.capture = this.key !== undefined && this.key.length === 2 && this.key[0] === 0x69 && this.key[1] === 0x64 ? [] : undefined;
      return;
    }
    this.phase = 'done';
  }

  private keep(byte: number): void {
    if (this.capture === undefined) return;
    this.capture.push(byte);
    if (this.capture.length > MAX_ID_BYTES) this.capture = undefined;
  }

  private finishCapture(): void {
    if (this.capture === undefined) return;
    const text = Buffer.from(this.capture).toString('utf8');
    this.capture = undefined;
    try {
      const value: unknown = JSON.parse(text);
      // Duplicate keys: the last one wins, as with JSON.parse.
      this.found = typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value)) || value === null ? value : undefined;
    } catch {
      this.found = undefined;
    }
  }
}
