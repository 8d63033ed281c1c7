/**
 * @module Whether the bin may use the V8 code cache that sits beside its bundle (docs/platform-notes.md,
 * "Start-up code cache"). A code cache is compiled code: V8 runs what it holds without looking at the
 * source again, and checks little more than the source's length and its own version. So the bin
 * trusts a cache exactly as far as it trusts the bundle, and this decides that from facts the loader
 * gathered (cli/boot.ts). Pure: no I/O here.
 */

/** The cache file: this line, the bundle's sha256 (32 bytes), then V8's data. */
export const CACHE_MAGIC = 'skill-mcp code cache 1\n';
const DIGEST_BYTES = 32;

export interface FileFacts {
  uid: number;
  mode: number;
  isFile: boolean;
}

export type CacheVerdict = { use: true; data: Buffer } | { use: false; why: string };

/**
 * `cache` is the whole cache file as read, `bundleDigest` the sha256 of the bundle's bytes as read.
 * Refuses:
 * - a planted cache: a file someone other than the bundle's owner could have written (another owner,
 *   or group/world write), which would run that person's code as whoever starts the server;
 * - a stale or foreign cache: one made for other bundle bytes (a rebuild, a hand edit of the bundle
 *   that kept its length), whose code would silently replace the bundle's;
 * - a file that is not a cache at all (truncated, another format).
 */
export function cacheVerdict(bundle: FileFacts, cacheFile: FileFacts, cache: Buffer, bundleDigest: Buffer): CacheVerdict {
  if (!cacheFile.isFile) return { use: false, why: 'it is not a regular file' };
  if (cacheFile.uid !== bundle.uid) return { use: false, why: `it is owned by uid ${cacheFile.uid}, the bundle by uid ${bundle.uid}` };
  if ((cacheFile.mode & 0o022) !== 0) return { use: false, why: `others may write it (mode ${(cacheFile.mode & 0o777).toString(8)})` };
  const headerLength = CACHE_MAGIC.length + DIGEST_BYTES;
  if (cache.length <= headerLength || cache.toString('latin1', 0, CACHE_MAGIC.length) !== CACHE_MAGIC)
    return { use: false, why: 'it is not a skill-mcp code cache' };
  if (!cache.subarray(CACHE_MAGIC.length, headerLength).equals(bundleDigest))
    return { use: false, why: 'it was made for another build of the bundle' };
  return { use: true, data: cache.subarray(headerLength) };
}

/** The file the loader writes when asked to make a cache: the header, then V8's data. */
export function cacheFileBytes(bundleDigest: Buffer, data: Buffer): Buffer {
  return Buffer.concat([Buffer.from(CACHE_MAGIC, 'latin1'), bundleDigest, data]);
}
