/**
 * A zip writer for tests only: builds archives entry by entry, hostile ones included (links,
 * encryption, zip64 markers, lying local headers, shared bytes, data descriptors), and lets a test
 * rewrite any field after layout. Stored or deflated entries, no zip64.
 */
import { deflateRawSync } from 'node:zlib';
import { crc32 } from '../../cli/pull/zip.js';

export interface ZipEntry {
  name: string;
  body?: string | Buffer;
  /** 0 stored, 8 deflate (default). */
  method?: number;
  /** A Unix mode for the external attributes (made by Unix), e.g. 0o120777 for a symlink. */
  mode?: number;
  flags?: number;
  /** Write a data descriptor (flag bit 3), zeros in the local header; with its signature unless false. */
  descriptor?: boolean;
  descriptorSignature?: boolean;
  /** Laid out as a local entry but left out of the central directory (seen only by streaming readers). */
  unlisted?: boolean;
  /** Bytes appended to the entry's data (after the deflate stream), counted in its packed size. */
  trailing?: Buffer;
  /** Extra field bytes, in both headers. */
  extra?: Buffer;
  /** Overrides of what the central entry says (after layout). */
  central?: Partial<{
    name: string;
    crc: number;
    size: number;
    packed: number;
    offset: number;
    method: number;
    flags: number;
    disk: number;
  }>;
  /** Overrides of what the local header says. */
  local?: Partial<{ name: string; crc: number; size: number; packed: number; method: number; flags: number }>;
}

export interface ZipOptions {
  /** Bytes before the first entry. */
  prefix?: Buffer;
  /** Bytes after the end record (not counted in its comment). */
  suffix?: Buffer;
  comment?: Buffer;
  /** Overrides of the end record. */
  end?: Partial<{ disk: number; cdDisk: number; onDisk: number; count: number; cdSize: number; cdAt: number }>;
  /** Called with the laid-out local section and central entries, to reuse one entry's offset for another. */
  offsets?: (offsets: number[]) => number[];
}

interface Laid {
  e: ZipEntry;
  nameBytes: Buffer;
  crc: number;
  size: number;
  packed: number;
  method: number;
  flags: number;
}

const u16 = (n: number): Buffer => {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(n);
  return b;
};
const u32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
};

export function zip(entries: ZipEntry[], options: ZipOptions = {}): Buffer {
  const parts: Buffer[] = [options.prefix ?? Buffer.alloc(0)];
  let at = parts[0]!.length;
  const laid: Laid[] = [];
  let offsets: number[] = [];
  for (const e of entries) {
    const body = typeof e.body === 'string' ? Buffer.from(e.body) : (e.body ?? Buffer.alloc(0));
    const method = e.method ?? 8;
    const data = Buffer.concat([method === 8 ? deflateRawSync(body) : body, e.trailing ?? Buffer.alloc(0)]);
    const nameBytes = Buffer.from(e.name);
    const flags = (e.flags ?? (Buffer.byteLength(e.name) !== e.name.length ? 0x0800 : 0)) | (e.descriptor ? 0x0008 : 0);
    const l: Laid = { e, nameBytes, crc: crc32(body), size: body.length, packed: data.length, method, flags };
    laid.push(l);
    const lo = e.local ?? {};
    const zeroed = e.descriptor === true;
    const localName = lo.name !== undefined ? Buffer.from(lo.name) : nameBytes;
    const extra = e.extra ?? Buffer.alloc(0);
    const header = Buffer.concat([
      u32(0x04034b50),
      u16(20),
      u16(lo.flags ?? flags),
      u16(lo.method ?? method),
      u16(0),
      u16(0x21),
      u32(lo.crc ?? (zeroed ? 0 : l.crc)),
      u32(lo.packed ?? (zeroed ? 0 : l.packed)),
      u32(lo.size ?? (zeroed ? 0 : l.size)),
      u16(localName.length),
      u16(extra.length),
      localName,
      extra,
    ]);
    const descriptor = e.descriptor
      ? Buffer.concat([e.descriptorSignature === false ? Buffer.alloc(0) : u32(0x08074b50), u32(l.crc), u32(l.packed), u32(l.size)])
      : Buffer.alloc(0);
    offsets.push(at);
    parts.push(header, data, descriptor);
    at += header.length + data.length + descriptor.length;
  }
  if (options.offsets) offsets = options.offsets(offsets);
  const cdAt = at;
  const central: Buffer[] = laid.flatMap((l, i) => {
    if (l.e.unlisted) return [];
    const c = l.e.central ?? {};
    const name = c.name !== undefined ? Buffer.from(c.name) : l.nameBytes;
    const extra = l.e.extra ?? Buffer.alloc(0);
    const madeBy = l.e.mode !== undefined ? 0x0314 : 0x0014;
    return [
      Buffer.concat([
        u32(0x02014b50),
        u16(madeBy),
        u16(20),
        u16(c.flags ?? l.flags),
        u16(c.method ?? l.method),
        u16(0),
        u16(0x21),
        u32(c.crc ?? l.crc),
        u32(c.packed ?? l.packed),
        u32(c.size ?? l.size),
        u16(name.length),
        u16(extra.length),
        u16(0),
        u16(c.disk ?? 0),
        u16(0),
        u32(((l.e.mode ?? 0) << 16) >>> 0),
        u32(c.offset ?? offsets[i]!),
        name,
        extra,
      ]),
    ];
  });
  const cd = Buffer.concat(central);
  const listed = laid.filter((l) => !l.e.unlisted).length;
  const en = options.end ?? {};
  const comment = options.comment ?? Buffer.alloc(0);
  const end = Buffer.concat([
    u32(0x06054b50),
    u16(en.disk ?? 0),
    u16(en.cdDisk ?? 0),
    u16(en.onDisk ?? listed),
    u16(en.count ?? listed),
    u32(en.cdSize ?? cd.length),
    u32(en.cdAt ?? cdAt),
    u16(comment.length),
    comment,
  ]);
  return Buffer.concat([...parts, cd, end, options.suffix ?? Buffer.alloc(0)]);
}
