/**
 * @module File names as the bytes they are. A Linux name is any bytes but `/` and NUL; Node reads
 * names as UTF-8 text by default and turns each byte that is not valid UTF-8 into U+FFFD, so a name
 * read that way may not open again (ENOENT), and two names (`bad\xff` and a real `bad\ufffd`) read
 * as one. Code that walks a folder a script wrote reads names here as bytes, builds paths from the
 * bytes, and shows a name that is not valid UTF-8 in an escaped spelling ({@link nameText}).
 */
import { isUtf8 } from 'node:buffer';
import { opendirSync } from 'node:fs';

const SLASH = Buffer.from('/');

/** `dir/name`, as bytes. */
export function joinBytes(dir: Buffer, name: Buffer): Buffer {
  return Buffer.concat([dir, SLASH, name]);
}

/** Whether a name's bytes are valid UTF-8 (shown as they are) or not (shown escaped, never opened by that spelling). */
export function validName(bytes: Buffer): boolean {
  return isUtf8(bytes);
}

/** The length of the valid UTF-8 sequence at `at` (RFC 3629: no overlong form, no surrogate, at most U+10FFFF), or 0. */
function sequenceAt(b: Buffer, at: number): number {
  const c = b[at]!;
  if (c < 0x80) return 1;
  const cont = (i: number, lo = 0x80, hi = 0xbf): boolean => at + i < b.length && b[at + i]! >= lo && b[at + i]! <= hi;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c === 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if ((c >= 0xe1 && c <= 0xec) || c === 0xee || c === 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (c === 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;
  if (c === 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c === 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

/**
 * A name as text: itself when it is valid UTF-8; otherwise each byte that is not part of a valid
 * sequence written `\xHH` (lower-case hex) and each backslash `\\`, the readable rest as it is
 * (`drop\xfe.txt`). So two different names never get one escaped spelling, and no escaped spelling
 * holds U+FFFD for a byte (a real `drop\ufffd.txt` is another name, shown as itself).
 */
export function nameText(bytes: Buffer): string {
  if (isUtf8(bytes)) return bytes.toString('utf8');
  let text = '';
  for (let at = 0; at < bytes.length; ) {
    const length = sequenceAt(bytes, at);
    if (length === 0) {
      text += `\\x${bytes[at]!.toString(16).padStart(2, '0')}`;
      at += 1;
    } else {
      const part = bytes.toString('utf8', at, at + length);
      text += part === '\\' ? '\\\\' : part;
      at += length;
    }
  }
  return text;
}

/** A folder opened to read its entries' names as bytes, one at a time (Node's typings know only string names for opendir). */
export interface ByteDir {
  /** The next entry's name, or null at the end. */
  next(): Buffer | null;
  close(): void;
}

export function openDirBytes(path: Buffer): ByteDir {
  const handle = opendirSync(path, { encoding: 'buffer' as BufferEncoding });
  return {
    next: () => {
      const entry = handle.readSync();
      return entry === null ? null : (entry.name as unknown as Buffer);
    },
    close: () => handle.closeSync(),
  };
}
