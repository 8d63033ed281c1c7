/**
 * A tar writer for tests only: builds archives entry by entry, hostile ones included (links,
 * devices, traversal, lying sizes), in POSIX ustar with optional pax headers.
 */
import { gzipSync } from 'node:zlib';

export interface TarEntry {
  name: string;
  /** '0' file (default), '5' folder, '1' hard link, '2' symlink, '3'/'4' devices, '6' FIFO, 'x' pax, 'L' GNU long name. */
  type?: string;
  body?: string | Buffer;
  linkname?: string;
  /** Claimed size, when it should differ from the body's. */
  size?: number;
  /** pax records for the next entry: written as an 'x' entry before this one. */
  pax?: Record<string, string>;
}

function header(name: string, type: string, size: number, linkname = ''): Buffer {
  const h = Buffer.alloc(512);
  h.write(name, 0, 100, 'utf8');
  h.write('0000644\0', 100);
  h.write('0000000\0', 108);
  h.write('0000000\0', 116);
  h.write(`${size.toString(8).padStart(11, '0')}\0`, 124);
  h.write('00000000000\0', 136);
  h.write(type, 156);
  h.write(linkname, 157, 100, 'utf8');
  h.write('ustar\x0000', 257, 'latin1');
  h.fill(0x20, 148, 156);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
  return h;
}

const pad = (b: Buffer): Buffer => Buffer.concat([b, Buffer.alloc((512 - (b.length % 512)) % 512)]);

function paxBody(records: Record<string, string>): Buffer {
  return Buffer.from(
    Object.entries(records)
      .map(([k, v]) => {
        const rest = ` ${k}=${v}\n`;
        let len = Buffer.byteLength(rest) + 1;
        while (String(len).length + Buffer.byteLength(rest) !== len) len = String(len).length + Buffer.byteLength(rest);
        return `${len}${rest}`;
      })
      .join(''),
  );
}

export function tar(entries: TarEntry[], trailer: Buffer = Buffer.alloc(1024)): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    if (e.pax) {
      const body = paxBody(e.pax);
      parts.push(header('PaxHeader', 'x', body.length), pad(body));
    }
    const body = typeof e.body === 'string' ? Buffer.from(e.body) : (e.body ?? Buffer.alloc(0));
    parts.push(header(e.name, e.type ?? '0', e.size ?? body.length, e.linkname), pad(body));
  }
  parts.push(trailer);
  return Buffer.concat(parts);
}

export const tgz = (entries: TarEntry[]): Buffer => gzipSync(tar(entries));
