/**
 * @module Checks an environment against its manifest before a preview or a run: the same entries,
 * types, permission bits, sizes, link targets and file digests. Any difference refuses the run
 * (`tampered`) until the operator reinstalls.
 *
 * Cost: hashing every file each time is the honest check but costs what the files weigh (a pypdf
 * environment: see bench/deps-verify.mjs). So a file whose identity (device, inode, size, mtime,
 * ctime in ns) is what it was when this runner last hashed it is not hashed again — unless its
 * ctime is within {@link RACY_NS} of that hash (the racy-clean rule: a change in the same clock
 * tick as the hash would leave the identity unchanged). ctime cannot be set back by anyone but
 * root: every write, chmod or rename an unprivileged writer makes moves it. The walk itself (one
 * lstat per entry) runs every time, so added and removed files are always seen.
 */
import { hashFile, readManifest, walkEnv, type StatEntry } from './manifest.js';

/** A file changed less than this before it was hashed is hashed again next time. */
export const RACY_NS = 2_000_000_000n;
/** Files remembered at most (a large ML environment has ~60 000). */
const MAX_KNOWN_FILES = 500_000;

export type Verdict = { ok: true; hashed: number; cached: number } | { ok: false; state: 'missing' | 'tampered'; why: string };

interface Known {
  key: string;
  sha256: string;
  hashedAtNs: bigint;
}

/** One runner's memory of what it hashed (instance state; lost at restart, which only costs a rehash). */
export class EnvVerifier {
  readonly #known = new Map<string, Known>();

  async verify(dir: string, digest: string): Promise<Verdict> {
    const read = readManifest(dir);
    if (!read.ok)
      return read.missing ? { ok: false, state: 'missing', why: 'it is not installed' } : { ok: false, state: 'tampered', why: read.why };
    const { manifest } = read;
    if (manifest.digest !== digest) return { ok: false, state: 'tampered', why: 'its manifest names another environment' };
    let entries: StatEntry[];
    try {
      entries = walkEnv(dir);
    } catch (error) {
      return { ok: false, state: 'tampered', why: `its folder cannot be walked (${(error as Error).message})` };
    }
    const expected = new Map(manifest.entries.map((e) => [e.path, e]));
    let hashed = 0;
    let cached = 0;
    for (const entry of entries) {
      const want = expected.get(entry.path);
      if (!want) return { ok: false, state: 'tampered', why: `${entry.path} was added after the install` };
      expected.delete(entry.path);
      if (want.type !== entry.type) return { ok: false, state: 'tampered', why: `${entry.path} is now a ${entry.type}` };
      if (want.mode !== entry.mode) return { ok: false, state: 'tampered', why: `${entry.path} changed permissions` };
      if (entry.type === 'link' && want.target !== entry.target)
        return { ok: false, state: 'tampered', why: `${entry.path} points elsewhere` };
      if (entry.type !== 'file') continue;
      if (want.size !== entry.size) return { ok: false, state: 'tampered', why: `${entry.path} changed size` };
      const known = this.#known.get(entry.abs);
      if (known && known.key === entry.key && known.sha256 === want.sha256 && entry.ctimeNs + RACY_NS < known.hashedAtNs) {
        cached += 1;
        continue;
      }
      const hashedAtNs = BigInt(Date.now()) * 1_000_000n;
      let sha256: string;
      try {
        sha256 = await hashFile(entry.abs);
      } catch {
        return { ok: false, state: 'tampered', why: `${entry.path} cannot be read` };
      }
      hashed += 1;
      if (sha256 !== want.sha256) {
        this.#known.delete(entry.abs);
        return { ok: false, state: 'tampered', why: `${entry.path} was changed after the install` };
      }
      // Bounded: a runner serving many environments forgets and rehashes, it never grows without end.
      if (this.#known.size >= MAX_KNOWN_FILES) this.#known.clear();
      this.#known.set(entry.abs, { key: entry.key, sha256, hashedAtNs });
    }
    const gone = [...expected.keys()][0];
    if (gone !== undefined) return { ok: false, state: 'tampered', why: `${gone} was removed after the install` };
    return { ok: true, hashed, cached };
  }
}
