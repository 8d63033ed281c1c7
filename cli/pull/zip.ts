/**
 * @module Our own small reader of the `.zip` archives a discovery index may name. It returns the
 * same entries as the tar reader (tar.ts) so one caller takes either, and it reads a zip only when
 * every reader would read it the same way: the central directory is the table of contents, every
 * local header must repeat its entry, the entries and the directory must tile the file exactly (no
 * prepended, hidden, trailing or shared bytes), only stored and deflated regular files and folders.
 * Anything else is refused, named. Pure: no disk access; inflate capped on its output.
 */
import { inflateRawSync } from 'node:zlib';
import { checkPathString } from '../../shared/paths.js';
import { type ArchiveEntry, ArchiveRefused } from './tar.js';

const SIG_LOCAL = 0x04034b50;
const SIG_CENTRAL = 0x02014b50;
const SIG_END = 0x06054b50;
const SIG_ZIP64_LOCATOR = 0x07064b50;
const SIG_DESCRIPTOR = 0x08074b50;
const END_BYTES = 22;
/** The end record plus the longest comment it can carry: how far back from the end it can start. */
export const MAX_END_SCAN_BYTES = END_BYTES + 0xffff;
const CENTRAL_BYTES = 46;
const LOCAL_BYTES = 30;

/** General-purpose flag bits. */
const FLAG_ENCRYPTED = 0x0001;
const FLAG_DESCRIPTOR = 0x0008;
const FLAG_STRONG_ENCRYPTION = 0x0040;
const FLAG_UTF8 = 0x0800;
const FLAG_MASKED_HEADERS = 0x2000;

const EXTRA_ZIP64 = 0x0001;
const EXTRA_UNICODE_PATH = 0x7075;

export interface ZipLimits {
  /** The sum of every entry's unpacked bytes (each entry is capped by it too). */
  maxBytes: number;
  /** Entries in the central directory, folders included. */
  maxEntries: number;
}

/** The CRC-32 zip uses (IEEE 802.3, reflected); a table of our own, as zlib.crc32 is missing before Node 20.15. */
const CRC_TABLE = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

interface Central {
  name: string;
  nameBytes: Buffer;
  flags: number;
  method: number;
  crc: number;
  packed: number;
  size: number;
  offset: number;
  mode: number;
}

/** Where the end record starts: the one signature whose comment reaches exactly the end of the file. */
function findEnd(zip: Buffer): number {
  if (zip.length < END_BYTES) throw new ArchiveRefused('it is too short to be a zip archive');
  const found: number[] = [];
  let anySignature = false;
  // Security: bounded scan (the record and a 65,535-byte comment at most): a huge file costs no more.
  for (let at = zip.length - END_BYTES; at >= Math.max(0, zip.length - MAX_END_SCAN_BYTES); at--) {
    if (zip.readUInt32LE(at) !== SIG_END) continue;
    anySignature = true;
    if (at + END_BYTES + zip.readUInt16LE(at + 20) === zip.length) found.push(at);
  }
  // Security: bytes after the end record are a second payload some readers look at and others not; refused.
  if (found.length === 0)
    throw new ArchiveRefused(
      anySignature
        ? 'it holds data after its end-of-central-directory record'
        : 'it has no end-of-central-directory record (not a zip, or cut short)',
    );
  // Security: a comment holding a second, fake end record makes readers that scan differently see two archives.
  if (found.length > 1)
    throw new ArchiveRefused('it has more than one end-of-central-directory record; which one counts would depend on the reader');
  return found[0]!;
}

/** Extra fields as (id → data); malformed ones refused, and the two that would change what we read. */
function checkExtra(extra: Buffer, name: string): void {
  let at = 0;
  while (at < extra.length) {
    if (at + 4 > extra.length) throw new ArchiveRefused(`"${name}" has a malformed extra field`);
    const id = extra.readUInt16LE(at);
    const length = extra.readUInt16LE(at + 2);
    if (at + 4 + length > extra.length) throw new ArchiveRefused(`"${name}" has a malformed extra field`);
    // Security: zip64 sizes and offsets would override the ones every check below reads.
    if (id === EXTRA_ZIP64)
      throw new ArchiveRefused(`"${name}" has zip64 fields; zip64 archives are not read (a skill fits in a plain zip)`);
    // Security: a second (Unicode Path) name that some readers use instead of the header's: two names for one entry.
    if (id === EXTRA_UNICODE_PATH)
      throw new ArchiveRefused(
        `"${name}" carries a second, Unicode Path name some readers use instead; store names as UTF-8 with the UTF-8 flag`,
      );
    at += 4 + length;
  }
}

/** A name as text: UTF-8 when the flag says so, else ASCII only (its CP437 or UTF-8 reading would differ). */
function entryName(raw: Buffer, flags: number): string {
  if (flags & FLAG_UTF8) {
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(raw);
    } catch {
      throw new ArchiveRefused(`the name ${JSON.stringify(raw.toString('latin1'))} is flagged UTF-8 but is not`);
    }
  }
  // Security: without the UTF-8 flag a non-ASCII name is CP437 to some readers and UTF-8 to others.
  if (raw.some((b) => b >= 0x80))
    throw new ArchiveRefused(
      `the name ${JSON.stringify(raw.toString('latin1'))} is not ASCII and not flagged UTF-8; readers would disagree on it`,
    );
  return raw.toString('latin1');
}

/** What a Unix file type is, for the refusal message. */
const UNIX_TYPES = new Map<number, string>([
  [0o120000, 'a symbolic link'],
  [0o020000, 'a character device'],
  [0o060000, 'a block device'],
  [0o010000, 'a FIFO'],
  [0o140000, 'a socket'],
]);

function readCentral(zip: Buffer, at: number, end: number): { entry: Central; next: number } {
  if (at + CENTRAL_BYTES > end || zip.readUInt32LE(at) !== SIG_CENTRAL)
    throw new ArchiveRefused(`the central directory is malformed at byte ${at}`);
  const flags = zip.readUInt16LE(at + 8);
  const nameLength = zip.readUInt16LE(at + 28);
  const extraLength = zip.readUInt16LE(at + 30);
  const commentLength = zip.readUInt16LE(at + 32);
  const next = at + CENTRAL_BYTES + nameLength + extraLength + commentLength;
  if (next > end) throw new ArchiveRefused(`the central directory is malformed at byte ${at}`);
  const nameBytes = zip.subarray(at + CENTRAL_BYTES, at + CENTRAL_BYTES + nameLength);
  const name = entryName(nameBytes, flags);
  checkExtra(zip.subarray(at + CENTRAL_BYTES + nameLength, at + CENTRAL_BYTES + nameLength + extraLength), name);
  // Security: encrypted entries cannot be checked (bit 0; bits 6 and 13 are PKWARE's strong encryption).
  if (flags & (FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTION | FLAG_MASKED_HEADERS)) throw new ArchiveRefused(`"${name}" is encrypted`);
  // Security: an entry on another disk is data this file does not hold.
  if (zip.readUInt16LE(at + 34) !== 0) throw new ArchiveRefused(`"${name}" starts on another disk; multi-disk archives are not read`);
  const entry: Central = {
    name,
    nameBytes,
    flags,
    method: zip.readUInt16LE(at + 10),
    crc: zip.readUInt32LE(at + 16),
    packed: zip.readUInt32LE(at + 20),
    size: zip.readUInt32LE(at + 24),
    offset: zip.readUInt32LE(at + 42),
    mode: zip.readUInt32LE(at + 38) >>> 16,
  };
  if (entry.packed === 0xffffffff || entry.size === 0xffffffff || entry.offset === 0xffffffff)
    throw new ArchiveRefused(`"${name}" has zip64 sizes; zip64 archives are not read (a skill fits in a plain zip)`);
  return { entry, next };
}

/** Where the entry's bytes end (after its data descriptor, if any); its local header checked against the central one. */
function checkLocal(zip: Buffer, e: Central, limit: number): { dataAt: number; end: number } {
  const at = e.offset;
  if (at + LOCAL_BYTES > limit || zip.readUInt32LE(at) !== SIG_LOCAL)
    throw new ArchiveRefused(`"${e.name}" has no local header where the central directory says`);
  const flags = zip.readUInt16LE(at + 6);
  const nameLength = zip.readUInt16LE(at + 26);
  const extraLength = zip.readUInt16LE(at + 28);
  const dataAt = at + LOCAL_BYTES + nameLength + extraLength;
  if (dataAt + e.packed > limit) throw new ArchiveRefused(`"${e.name}" claims ${e.packed} bytes, more than the archive holds`);
  const disagree = (what: string): never => {
    // Security: a reader that streams local headers and one that reads the directory would see two different archives.
    throw new ArchiveRefused(`"${e.name}": its local header and its central-directory entry disagree on the ${what}`);
  };
  if (!zip.subarray(at + LOCAL_BYTES, at + LOCAL_BYTES + nameLength).equals(e.nameBytes)) disagree('name');
  if ((flags & (FLAG_ENCRYPTED | FLAG_DESCRIPTOR | FLAG_UTF8)) !== (e.flags & (FLAG_ENCRYPTED | FLAG_DESCRIPTOR | FLAG_UTF8)))
    disagree('flags');
  if (zip.readUInt16LE(at + 8) !== e.method) disagree('compression method');
  checkExtra(zip.subarray(at + LOCAL_BYTES + nameLength, dataAt), e.name);
  const crc = zip.readUInt32LE(at + 14);
  const packed = zip.readUInt32LE(at + 18);
  const size = zip.readUInt32LE(at + 22);
  let end = dataAt + e.packed;
  if (e.flags & FLAG_DESCRIPTOR) {
    // With a data descriptor the local fields may be zero; the directory's are the ones used, and
    // the descriptor after the data (with or without its optional signature) must repeat them.
    if ((crc !== 0 && crc !== e.crc) || (packed !== 0 && packed !== e.packed) || (size !== 0 && size !== e.size)) disagree('crc or sizes');
    const repeats = (p: number): boolean =>
      p + 12 <= limit && zip.readUInt32LE(p) === e.crc && zip.readUInt32LE(p + 4) === e.packed && zip.readUInt32LE(p + 8) === e.size;
    if (end + 16 <= limit && zip.readUInt32LE(end) === SIG_DESCRIPTOR && repeats(end + 4)) end += 16;
    else if (repeats(end)) end += 12;
    else disagree('crc or sizes (its data descriptor)');
  } else if (crc !== e.crc || packed !== e.packed || size !== e.size) disagree('crc or sizes');
  return { dataAt, end };
}

/** The entry's bytes, inflated at most to its declared size and checked against its CRC. */
function contents(zip: Buffer, e: Central, dataAt: number): Buffer {
  const packed = zip.subarray(dataAt, dataAt + e.packed);
  let bytes: Buffer;
  if (e.method === 0) {
    if (e.packed !== e.size) throw new ArchiveRefused(`"${e.name}" is stored with a packed size ${e.packed} unlike its size ${e.size}`);
    bytes = Buffer.from(packed);
  } else if (e.method === 8) {
    let result: { buffer: Buffer; engine: { bytesWritten: number } };
    try {
      // Security: maxOutputLength stops a bomb at the declared size instead of filling memory.
      result = inflateRawSync(packed, { maxOutputLength: Math.max(1, e.size), info: true }) as unknown as typeof result;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || error instanceof RangeError)
        throw new ArchiveRefused(`"${e.name}" inflates to more than the ${e.size} bytes it declares`);
      throw new ArchiveRefused(`"${e.name}" is not a valid deflate stream (${error instanceof Error ? error.message : String(error)})`);
    }
    // Security: bytes after the deflate stream's end inside the entry are hidden data; refused.
    if (result.engine.bytesWritten !== e.packed) throw new ArchiveRefused(`"${e.name}" holds data after its deflate stream`);
    bytes = result.buffer;
  } else throw new ArchiveRefused(`"${e.name}" uses compression method ${e.method}; only stored (0) and deflate (8) are read`);
  if (bytes.length !== e.size) throw new ArchiveRefused(`"${e.name}" unpacks to ${bytes.length} bytes, not the ${e.size} it declares`);
  // Security: the CRC ties the bytes to the directory; a mismatch is corruption or a spliced entry.
  if (crc32(bytes) !== e.crc) throw new ArchiveRefused(`"${e.name}" fails its CRC-32 check`);
  return bytes;
}

/**
 * Every entry of a zip archive, in central-directory order. Refused whole: zip64, multi-disk,
 * encryption, methods other than stored and deflate, a local header unlike its directory entry,
 * entries that overlap, leave gaps or follow prepended data, data after the end record, a link,
 * device, FIFO or socket, a name refused by the path rules or given twice, a bad CRC, more than
 * the limits.
 */
export function readZip(zip: Buffer, limits: ZipLimits): ArchiveEntry[] {
  const endAt = findEnd(zip);
  const disk = zip.readUInt16LE(endAt + 4);
  const cdDisk = zip.readUInt16LE(endAt + 6);
  const onDisk = zip.readUInt16LE(endAt + 8);
  const count = zip.readUInt16LE(endAt + 10);
  const cdSize = zip.readUInt32LE(endAt + 12);
  const cdAt = zip.readUInt32LE(endAt + 16);
  // Security: zip64 moves the real directory elsewhere; its 0xFFFF markers would be read as sizes.
  if (
    count === 0xffff ||
    onDisk === 0xffff ||
    cdSize === 0xffffffff ||
    cdAt === 0xffffffff ||
    (endAt >= 20 && zip.readUInt32LE(endAt - 20) === SIG_ZIP64_LOCATOR)
  )
    throw new ArchiveRefused('it is a zip64 archive, which this reader does not take (a skill fits in a plain zip)');
  if (disk !== 0 || cdDisk !== 0 || onDisk !== count)
    throw new ArchiveRefused('it is a multi-disk (split) archive, which this reader does not take');
  // Security: the entry count is capped before anything is allocated for it.
  if (count > limits.maxEntries) throw new ArchiveRefused(`it has ${count} entries, over the ${limits.maxEntries} a pull accepts`);
  // Security: the directory must end where the end record starts: bytes between them, or a
  // directory placed elsewhere (prepended data shifting offsets), are refused, not guessed at.
  if (cdAt + cdSize !== endAt)
    throw new ArchiveRefused('its central directory does not end where its end record starts (prepended or hidden data)');
  const central: Central[] = [];
  let at = cdAt;
  for (let i = 0; i < count; i++) {
    const { entry, next } = readCentral(zip, at, endAt);
    central.push(entry);
    at = next;
  }
  if (at !== endAt) throw new ArchiveRefused('its central directory holds more than its entries');
  let total = 0;
  for (const e of central) {
    total += e.size;
    // Security: the unpacked total is capped on the declared sizes before any inflate; each inflate is capped on its own.
    if (total > limits.maxBytes) throw new ArchiveRefused(`it unpacks to more than ${limits.maxBytes} bytes, over what a pull accepts`);
  }
  // Security: sorted by where they start, the entries must follow one another from byte 0 up to the
  // directory with nothing between: two entries sharing bytes (the overlap zip bomb, or two names
  // for one file), data prepended (a polyglot or self-extractor) or hidden in a gap are all refused.
  const placed = central.map((e) => ({ e, ...checkLocal(zip, e, cdAt) })).sort((a, b) => a.e.offset - b.e.offset);
  let cursor = 0;
  for (const p of placed) {
    if (p.e.offset < cursor)
      throw new ArchiveRefused(`"${p.e.name}" overlaps the entry before it; entries sharing bytes are refused (the overlap zip bomb)`);
    if (p.e.offset > cursor)
      throw new ArchiveRefused(
        cursor === 0 ? 'it has data before its first entry (prepended data)' : `there are bytes no entry accounts for before "${p.e.name}"`,
      );
    cursor = p.end;
  }
  if (cursor !== cdAt) throw new ArchiveRefused('there are bytes no entry accounts for before its central directory');
  const entries: ArchiveEntry[] = [];
  const seen = new Set<string>();
  const dataAt = new Map(placed.map((p) => [p.e, p.dataAt]));
  for (const e of central) {
    const type = e.mode & 0o170000;
    const folder = e.name.endsWith('/');
    // Security: links, devices, FIFOs and sockets are never materialised.
    const special = UNIX_TYPES.get(type);
    if (special) throw new ArchiveRefused(`"${e.name}" is ${special}; only regular files and folders are taken from an archive`);
    if ((type === 0o040000 && !folder) || (type === 0o100000 && folder))
      throw new ArchiveRefused(`"${e.name}": its Unix mode and its name disagree on whether it is a folder`);
    if (folder && e.size !== 0) throw new ArchiveRefused(`"${e.name}" is a folder holding ${e.size} bytes`);
    const bytes = contents(zip, e, dataAt.get(e)!);
    const path = folder ? e.name.slice(0, -1) : e.name;
    // Security: the same path rules as every source: no "..", no absolute path, no backslash, no NUL or control.
    const check = checkPathString(path);
    if (!check.ok) throw new ArchiveRefused(`the name ${JSON.stringify(e.name)} is refused: ${check.why}`);
    if (seen.has(path)) throw new ArchiveRefused(`"${e.name}" is in the archive twice; which copy counts would depend on the reader`);
    seen.add(path);
    entries.push({ path, kind: folder ? 'dir' : 'file', bytes: folder ? Buffer.alloc(0) : bytes });
  }
  return entries;
}
