/**
 * @module An environment's manifest: every entry of its folder (path, type, permission bits, size,
 * sha256 or link target), written last, when the environment is whole. Before every preview and
 * run the runner walks the folder again and compares (runner/deps/verify.ts): an edited, added,
 * removed or re-permissioned file makes the environment `tampered`, and nothing runs with it.
 *
 * What it does not stop: whoever can write both the environment and its manifest (root, or the
 * runner's own user at the same-uid level) — they can as well change the runner itself.
 */
import { readBounded } from '../../shared/bounded-read.js';
import { createHash } from 'node:crypto';
import { closeSync, constants, lstatSync, openSync, readdirSync, readlinkSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { nameText, validName } from '../../shared/byte-names.js';
import type { DepsKind } from './spec.js';

export const MANIFEST_FILE = 'manifest.json';
/** More entries than any real environment has (a large ML stack is ~60 000): a bound on the walk. */
export const MAX_ENV_ENTRIES = 250_000;
export const MAX_MANIFEST_BYTES = 64 * 1024 * 1024;

export interface ManifestEntry {
  path: string;
  type: 'file' | 'dir' | 'link';
  /** Permission bits (0o7777). */
  mode: number;
  size?: number;
  sha256?: string;
  target?: string;
}

export interface Manifest {
  version: 1;
  /** The environment's address (runner/deps/spec.ts): the folder's name. */
  digest: string;
  kind: DepsKind;
  interpreter: string;
  builtAt: string;
  /** Where the packages came from, as printed at install (credentials redacted). */
  index: string[];
  /** The file beside the environment that records what was resolved (pip freeze, the lockfile). */
  resolved: string;
  sourceBuilds: boolean;
  entries: ManifestEntry[];
}

export interface StatEntry {
  path: string;
  abs: string;
  type: ManifestEntry['type'];
  mode: number;
  size: number;
  /** Device, inode, size, mtime and ctime in ns: what the verify cache keys on. */
  key: string;
  ctimeNs: bigint;
  target?: string;
}

/**
 * Every entry under `dir` but the top-level manifest, sorted by name bytes, never following a link.
 * Throws past {@link MAX_ENV_ENTRIES}, on a device, FIFO or socket, or on a name that is not valid
 * UTF-8 (an install makes none).
 */
export function walkEnv(dir: string): StatEntry[] {
  const out: StatEntry[] = [];
  const visit = (rel: string): void => {
    // Security: names read as bytes (shared/byte-names.ts). Read as UTF-8 text, a name that is not
    // valid UTF-8 would not open again, or would read as another entry's name (`bad\xff` beside a
    // real `bad\ufffd`): listed twice, the first never sealed. A manifest records names as text, so
    // such a name is refused, spelled escaped (no package installs one).
    const names = readdirSync(rel === '' ? dir : join(dir, rel), { encoding: 'buffer' });
    for (const bytes of names.sort(Buffer.compare)) {
      if (!validName(bytes))
        throw new Error(
          `${rel === '' ? '' : `${rel}/`}${nameText(bytes)} has a name that is not valid UTF-8, which a manifest cannot record`,
        );
      const name = bytes.toString('utf8');
      const path = rel === '' ? name : `${rel}/${name}`;
      if (path === MANIFEST_FILE) continue;
      const abs = join(dir, path);
      const st = lstatSync(abs, { bigint: true });
      const type = st.isFile() ? 'file' : st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'link' : undefined;
      if (type === undefined) throw new Error(`${path} is not a file, folder or link`);
      if (out.length >= MAX_ENV_ENTRIES) throw new Error(`more than ${MAX_ENV_ENTRIES} entries`);
      const entry: StatEntry = {
        path,
        abs,
        type,
        mode: Number(st.mode & 0o7777n),
        size: Number(st.size),
        key: `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`,
        ctimeNs: st.ctimeNs,
      };
      if (type === 'link') entry.target = readlinkSync(abs);
      out.push(entry);
      if (type === 'dir') visit(path);
    }
  };
  visit('');
  return out;
}

/** Whether a link's target stays inside the environment (relative, never above its own folder's root). */
export function linkStaysInside(path: string, target: string): boolean {
  if (target.startsWith('/')) return false;
  const joined = posix.normalize(posix.join(posix.dirname(path), target));
  return joined !== '..' && !joined.startsWith('../');
}

/** sha256 of a regular file opened without following links; the file must still be `expectKey`'s. */
export async function hashFile(abs: string): Promise<string> {
  const handle = await open(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const hash = createHash('sha256');
    const buffer = Buffer.allocUnsafe(1024 * 1024);
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
    }
    return hash.digest('hex');
  } finally {
    await handle.close();
  }
}

/** Reads the manifest of `dir`: a regular file, not a link, bounded. */
export function readManifest(dir: string): { ok: true; manifest: Manifest } | { ok: false; missing: boolean; why: string } {
  let fd: number;
  try {
    fd = openSync(join(dir, MANIFEST_FILE), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return {
      ok: false,
      missing: code === 'ENOENT',
      why: code === 'ENOENT' ? 'not installed' : `its manifest cannot be opened (${code ?? 'error'})`,
    };
  }
  try {
    const read = readBounded(fd, MAX_MANIFEST_BYTES);
    if (!read.ok) return { ok: false, missing: false, why: 'its manifest is not a regular file of a sane size' };
    const manifest = JSON.parse(read.bytes.toString('utf8')) as Manifest;
    if (manifest.version !== 1 || !Array.isArray(manifest.entries))
      return { ok: false, missing: false, why: 'its manifest is not one this runner reads' };
    return { ok: true, manifest };
  } catch {
    return { ok: false, missing: false, why: 'its manifest is not valid JSON' };
  } finally {
    closeSync(fd);
  }
}
