/**
 * @module Where a pulled skill came from, as `skill_list`, the SEP-2640 entry's `_meta` and the
 * run preview (`willRun.provenance`) show it: read from the `.skill-mcp-lock.json` that
 * `skill-mcp pull` wrote in the skill's root folder, and shown only while the skill's files are
 * still exactly the ones the lock records. A skill edited since shows `modified since pull` and no
 * pin, so a stale commit or digest never vouches for bytes it did not describe.
 *
 * Both processes use it: the front for what it serves, the runner for the bytes it would run.
 */
import { closeSync, fstatSync, lstatSync, openSync, readSync, constants } from 'node:fs';
import { basename, join } from 'node:path';
import { z } from 'zod';
import { LOCK_FILE, LockSchema, type Lock, type LockedSkill } from './pull-lock.js';

/** The key of the provenance in a SEP-2640 entry's `_meta`. */
export const PROVENANCE_META_KEY = 'io.github.skill-mcp/provenance';

/** A lockfile larger than this is not read (a real one is a few hundred bytes per skill). */
const MAX_LOCK_BYTES = 8 * 1024 * 1024;

export const provenanceSchema = z.strictObject({
  /** `git`, `index` (a discovery index), `mcp-http` (an MCP server by URL), `mcp-stdio` (a command). */
  source: z.enum(['git', 'index', 'mcp-http', 'mcp-stdio']),
  /** The repository, index or server URL as the lock records it (no credentials, query or fragment); for a command, its program name only. */
  from: z.string(),
  ref: z.string().optional(),
  path: z.string().optional(),
  /** The commit (git) the files came from; only while they still match. */
  commit: z.string().optional(),
  /** The digest the index published (index); only while the files still match. */
  digest: z.string().optional(),
  pulledAt: z.string(),
  /** `as-pulled`: every served file is the one the lock records; otherwise what differs. */
  state: z.enum(['as-pulled', 'modified since pull']),
  detail: z.string().optional(),
});
export type Provenance = z.infer<typeof provenanceSchema>;

/** The last parse of each lockfile, by its path, with the identity of the file it came from. */
const parsedLocks = new Map<string, { identity: string; lock: Lock | undefined }>();
const MAX_REMEMBERED_LOCKS = 64;

/** Reads a lock without following a link, within a size cap; undefined when there is none or it does not parse. */
export function readPullLock(rootDir: string): Lock | undefined {
  const path = join(rootDir, LOCK_FILE);
  // Most roots hold no lock, and every catalog entry asks: answer that without a throw.
  if (lstatSync(path, { throwIfNoEntry: false }) === undefined) return undefined;
  let fd: number | undefined;
  try {
    // Security: O_NOFOLLOW: a lockfile planted as a link to another file is not read.
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const stat = fstatSync(fd, { bigint: true });
    if (!stat.isFile() || stat.size > BigInt(MAX_LOCK_BYTES)) return undefined;
    // The same file as last time (pull replaces the lock by rename: a new inode, new times) is not
    // parsed again for every entry of every page; its identity is taken from the open fd.
    const identity = `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}`;
    const known = parsedLocks.get(path);
    if (known?.identity === identity) return known.lock;
    const bytes = Buffer.alloc(Number(stat.size));
    let got = 0;
    while (got < bytes.length) {
      const n = readSync(fd, bytes, got, bytes.length - got, got);
      if (n === 0) break;
      got += n;
    }
    const parsed = LockSchema.safeParse(JSON.parse(bytes.subarray(0, got).toString('utf8')));
    const lock = parsed.success ? parsed.data : undefined;
    if (parsedLocks.size >= MAX_REMEMBERED_LOCKS) parsedLocks.clear();
    parsedLocks.set(path, { identity, lock });
    return lock;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** How the served files differ from the lock's, or undefined when they are the same set with the same digests. */
function difference(locked: LockedSkill, served: ReadonlyMap<string, string>): string | undefined {
  for (const [path, digest] of Object.entries(locked.files)) {
    const now = served.get(path);
    if (now === undefined) return `"${path}" was deleted`;
    if (now !== digest) return `"${path}" was edited`;
  }
  for (const path of served.keys()) if (!(path in locked.files)) return `"${path}" was added`;
  return undefined;
}

/**
 * The provenance of skill `name` from `lock`, given every served file's digest (`sha256:<hex>`
 * by path); undefined when the lock has no entry for it.
 */
export function provenanceOf(lock: Lock, name: string, served: ReadonlyMap<string, string>): Provenance | undefined {
  const locked = lock.skills[name];
  if (!locked) return undefined;
  const s = locked.source;
  const base =
    'git' in s
      ? { source: 'git' as const, from: s.git, ref: s.ref, ...(s.path ? { path: s.path } : {}) }
      : 'index' in s
        ? { source: 'index' as const, from: s.index }
        : 'url' in s
          ? { source: 'mcp-http' as const, from: s.url }
          : // Security: a command line can carry tokens (env TOKEN=... cmd); only the program's name is shown.
            { source: 'mcp-stdio' as const, from: basename(s.command[0] ?? '') };
  const differs = difference(locked, served);
  if (differs !== undefined)
    return {
      ...base,
      pulledAt: locked.pulledAt,
      state: 'modified since pull',
      detail: `${differs} since the pull; the recorded pin no longer describes these files`,
    };
  return {
    ...base,
    ...(locked.commit ? { commit: locked.commit } : {}),
    ...(locked.digest ? { digest: locked.digest } : {}),
    pulledAt: locked.pulledAt,
    state: 'as-pulled',
  };
}
