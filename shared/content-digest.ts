/**
 * @module What an approval binds about a skill's code (docs/architecture.md §7): the sha256 of each
 * served file — the same per-file digest `skills/get` publishes — and one digest over all of them.
 * Both processes compute it with these functions, so the front can tell when its runner serves
 * other bytes than it shows, and a person can recompute it with coreutils:
 *
 *   cd <skill> && printf '%s\n' <served paths> | LC_ALL=C sort | xargs -d '\n' sha256sum -- | sha256sum
 *
 * i.e. sha256 over the lines `<hex digest>  <path>\n`, one per served file, sorted by the UTF-8
 * bytes of the path (`LC_ALL=C sort`). Paths are the manifest's `/`-separated relative paths; the
 * path rules refuse control characters, so a line can never hold a newline of its own.
 */
import { createHash } from 'node:crypto';
import { read } from 'node:fs';
import { promisify } from 'node:util';

const readAsync = promisify(read);

/** The sha256 of some bytes, as lowercase hex. Here, not in run-io.ts, so the walker's bundle needs no zod. */
export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export interface FileDigestLine {
  /** `/`-separated path inside the skill, as the manifest names it. */
  path: string;
  /** Lowercase hex sha256 of the file's bytes. */
  sha256: string;
}

/** The skill's content digest: sha256 over sorted `<sha256>  <path>\n` lines (sha256sum's format). */
export function combineFileDigests(files: readonly FileDigestLine[]): string {
  const sorted = [...files].sort((a, b) => Buffer.compare(Buffer.from(a.path, 'utf8'), Buffer.from(b.path, 'utf8')));
  const hash = createHash('sha256');
  for (const file of sorted) hash.update(`${file.sha256}  ${file.path}\n`, 'utf8');
  return hash.digest('hex');
}

/** How a preview shows a digest to a person: enough to compare by eye, not the whole string. */
export function shortDigest(hex: string): string {
  return `sha256:${hex.slice(0, 12)}`;
}

/**
 * Hashes an open file from offset 0 to its end through `scratch`, handing each chunk to `sink`
 * too (the runner writes its copy from the very bytes it hashes). Stops with `over` once more than
 * `maxBytes` were read, so a file that grows while it is read cannot blow a cap. Each chunk is read
 * off the event loop (the thread pool) and the sink awaited before the next read: a process
 * hashing a 64 MiB skill still answers its other requests (a cancel) between two chunks.
 */
export async function hashOpenFileAsync(
  fd: number,
  scratch: Buffer,
  maxBytes: number,
  sink?: (chunk: Buffer) => Promise<void>,
): Promise<{ sha256: string; size: number } | { over: true }> {
  const hash = createHash('sha256');
  let size = 0;
  for (;;) {
    const { bytesRead: got } = await readAsync(fd, scratch, 0, scratch.length, size);
    if (got === 0) break;
    size += got;
    if (size > maxBytes) return { over: true };
    const chunk = scratch.subarray(0, got);
    hash.update(chunk);
    if (sink) await sink(chunk);
  }
  return { sha256: hash.digest('hex'), size };
}
