/**
 * @module Our own small reader of the `.tar.gz` archives a discovery index may name: it yields the
 * regular files of an archive as (path, bytes) and refuses everything else, so no archive entry can
 * become a link, a device or a write outside the skill. Only ustar headers (POSIX, or GNU tar's
 * default for plain entries) and pax extended headers are read; GNU long-name records, sparse files
 * and base-256 sizes are refused, named.
 * Gunzip is capped on its output, so a decompression bomb stops at the cap. Pure: no disk access.
 */
import { gunzipSync } from 'node:zlib';

const BLOCK = 512;

export class ArchiveRefused extends Error {}

export interface ArchiveEntry {
  /** The path as the archive spells it, `./` prefix removed; checked by the caller. */
  path: string;
  kind: 'file' | 'dir';
  bytes: Buffer;
}

/** Gunzips at most `maxBytes` of output; past it the archive is refused (not cut). */
export function gunzipCapped(gz: Buffer, maxBytes: number): Buffer {
  try {
    // Security: maxOutputLength makes zlib stop with an error instead of inflating a bomb into memory.
    return gunzipSync(gz, { maxOutputLength: maxBytes });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ERR_BUFFER_TOO_LARGE' || error instanceof RangeError)
      throw new ArchiveRefused(`it unpacks to more than ${maxBytes} bytes, over what a pull accepts`);
    throw new ArchiveRefused(`it is not a gzip stream (${error instanceof Error ? error.message : String(error)})`);
  }
}

/** A NUL-terminated (or full-width) field as text. */
function field(block: Buffer, start: number, length: number): string {
  const raw = block.subarray(start, start + length);
  const nul = raw.indexOf(0);
  return (nul < 0 ? raw : raw.subarray(0, nul)).toString('utf8');
}

/** An octal number field; base-256 (high bit set) and anything not octal are refused. */
function octal(block: Buffer, start: number, length: number, what: string): number {
  if ((block[start]! & 0x80) !== 0) throw new ArchiveRefused(`a header's ${what} is in base-256, which this reader does not take`);
  const text = field(block, start, length).trim();
  if (text === '') return 0;
  if (!/^[0-7]+$/.test(text)) throw new ArchiveRefused(`a header's ${what} ${JSON.stringify(text)} is not an octal number`);
  const value = Number.parseInt(text, 8);
  if (!Number.isSafeInteger(value)) throw new ArchiveRefused(`a header's ${what} is too large`);
  return value;
}

/** Whether the header's checksum (the sum of its bytes, the checksum field read as spaces) holds. */
function checksumHolds(block: Buffer): boolean {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i]!;
  return sum === octal(block, 148, 8, 'checksum');
}

/** pax records `"<len> <key>=<value>\n"`; only `path` and `size` change what we read. */
function paxRecords(data: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  let at = 0;
  while (at < data.length) {
    const space = data.indexOf(0x20, at);
    const length = space > at ? Number(data.subarray(at, space).toString('latin1')) : Number.NaN;
    if (!Number.isSafeInteger(length) || length <= space - at || at + length > data.length || data[at + length - 1] !== 0x0a)
      throw new ArchiveRefused('a pax extended header is malformed');
    const record = data.subarray(space + 1, at + length - 1).toString('utf8');
    const eq = record.indexOf('=');
    if (eq <= 0) throw new ArchiveRefused('a pax extended header record has no key');
    out.set(record.slice(0, eq), record.slice(eq + 1));
    at += length;
  }
  return out;
}

/** What each type flag is, for the refusal message. */
const TYPE_NAMES: Record<string, string> = {
  '1': 'a hard link',
  '2': 'a symbolic link',
  '3': 'a character device',
  '4': 'a block device',
  '6': 'a FIFO',
  '7': 'a contiguous file',
  L: 'a GNU long-name record',
  K: 'a GNU long-link record',
  S: 'a GNU sparse file',
};

/**
 * Every entry of an uncompressed tar. Refused whole: a link, device, FIFO or any type but a
 * regular file or folder; a bad checksum; an entry running past the end; a path given twice;
 * anything but zeros after the end-of-archive block.
 */
export function readTar(tar: Buffer): ArchiveEntry[] {
  const entries: ArchiveEntry[] = [];
  const seen = new Set<string>();
  let at = 0;
  let pax = new Map<string, string>();
  while (true) {
    if (at + BLOCK > tar.length) throw new ArchiveRefused('it ends without an end-of-archive block');
    const header = tar.subarray(at, at + BLOCK);
    if (header.every((b) => b === 0)) {
      // Security: data after the end marker would be a second, hidden archive some readers take.
      if (!tar.subarray(at).every((b) => b === 0)) throw new ArchiveRefused('it holds data after its end-of-archive block');
      return entries;
    }
    if (!checksumHolds(header)) throw new ArchiveRefused(`the header at byte ${at} has a wrong checksum`);
    // POSIX ustar ("ustar\0" "00"), or GNU tar's default ("ustar " " \0"), whose plain entries are
    // the same fields; its extensions (long names, sparse files) have their own types, refused below.
    const magic = header.subarray(257, 265).toString('latin1');
    const posix = magic === 'ustar\x0000';
    if (!posix && magic !== 'ustar  \x00')
      throw new ArchiveRefused(`the header at byte ${at} is not a ustar header (magic ${JSON.stringify(magic)})`);
    const type = String.fromCharCode(header[156]!);
    let size = octal(header, 124, 12, 'size');
    const paxSize = pax.get('size');
    if (paxSize !== undefined) {
      if (!/^[0-9]+$/.test(paxSize)) throw new ArchiveRefused(`a pax size ${JSON.stringify(paxSize)} is not a number`);
      size = Number(paxSize);
    }
    const start = at + BLOCK;
    // Security: an entry claiming more bytes than the archive holds is refused, not read short.
    if (!Number.isSafeInteger(size) || start + size > tar.length)
      throw new ArchiveRefused(`an entry at byte ${at} claims ${size} bytes, more than the archive holds`);
    const data = tar.subarray(start, start + size);
    at = start + Math.ceil(size / BLOCK) * BLOCK;
    if (type === 'x') {
      pax = paxRecords(data);
      continue;
    }
    if (type === 'g') continue; // global pax defaults: nothing in them changes a path or a size we read
    // GNU headers keep times, not a name prefix, in these bytes.
    const prefix = posix ? field(header, 345, 155) : '';
    const name = pax.get('path') ?? (prefix ? `${prefix}/${field(header, 0, 100)}` : field(header, 0, 100));
    pax = new Map();
    let kind: ArchiveEntry['kind'];
    if (type === '0' || type === '\0') kind = 'file';
    else if (type === '5') kind = 'dir';
    // Security: links (to /etc/passwd, to a neighbour skill), devices and FIFOs are never materialised.
    else
      throw new ArchiveRefused(
        `"${name}" is ${TYPE_NAMES[type] ?? `an entry of type ${JSON.stringify(type)}`}; only regular files and folders are taken from an archive`,
      );
    let path = name.startsWith('./') ? name.slice(2) : name;
    if (kind === 'dir') path = path.replace(/\/+$/, '');
    if (kind === 'dir' && (path === '' || path === '.')) continue; // the archive's own top
    if (kind === 'file' && size !== data.length) throw new ArchiveRefused(`"${name}" is cut short`);
    if (seen.has(path)) throw new ArchiveRefused(`"${name}" is in the archive twice; which copy counts would depend on the reader`);
    seen.add(path);
    entries.push({ path, kind, bytes: kind === 'file' ? Buffer.from(data) : Buffer.alloc(0) });
  }
}
