/**
 * @module The front's warm-start digest index (issue 31; docs/warm-start.md; SKILL_MCP_DIGEST_INDEX,
 * by default in a standalone front's own state folder: server/start.ts). Publishing a catalog means
 * a sha256 of every served file (catalog.ts): 200 MB at 5,000 skills, ~1.5 s of hashing after
 * every start. The index remembers, per file, the identity and times it was hashed under — dev,
 * ino, size, mtime and ctime in ns — and the digest; a file the walk finds in that same state is
 * not opened again (digest.ts). It also remembers each SKILL.md's parse by the hash of its bytes
 * (skill.ts), for the build that made it.
 *
 * Racily clean, as git: a file changed twice within one timestamp tick keeps its size and times,
 * so a digest taken in that tick would be wrong for ever. An entry is trusted only when its hash
 * began ≥ SETTLE_MS after that exact file state was first seen (wall clock, remembered across
 * starts): a change after that point cannot carry the same times, whatever the filesystem's own
 * clock says, as long as it runs at the normal rate. A state seen for the first time is hashed and
 * remembered unsettled; the next start hashes it once more and from then on reuses it. ctime is
 * in the key because no user can set it: restoring size and mtime after an edit (touch -d) still
 * changes ctime, so the edit is seen.
 *
 * Security: the index only saves work for what `skills/list` publishes; a read that finds other
 * bytes than listed forgets the entry (catalog.ts confirmFresh). The runner never reads it
 * (it re-reads and hashes the skill it runs), nor does the front's check of the runner's content
 * (tools/content-check.ts), which hashes the disk afresh. The file must be a regular file owned by
 * the front's own uid with no access for group or others (0600), or it is refused — not read, not
 * overwritten — and said so on stderr; it is written to a temporary file in the same folder, then
 * renamed.
 */
import { closeSync, constants, fstatSync, openSync, readSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileState } from '../../shared/file-state.js';

/** Longer than any filesystem's timestamp step we allow for (FAT's 2 s). */
export const SETTLE_MS = 2_000;
/** An index larger than this is not read (a 50,000-file catalog's is ~12 MB). */
const MAX_INDEX_BYTES = 256 * 1024 * 1024;
/** 2: the parsed SKILL.md table beside the digests. */
const VERSION = 2;

/** The index's key of a served file: the skill's real folder and the path inside it. */
export function indexKey(realDir: string, rel: string): string {
  return `${realDir}\0${rel}`;
}

interface Remembered {
  state: string;
  /** Wall clock (ms) when this state was first seen by any start. */
  firstSeen: number;
  /** Wall clock (ms) when the remembered hash began. */
  hashedAt: number;
  hex: string;
}

type Stored = [key: string, state: string, firstSeen: number, hashedAt: number, hex: string];

interface Loaded {
  digests: Map<string, Remembered>;
  /** What parsing a SKILL.md gave (JSON text), by the hash of its bytes (skill.ts); only when made by this build. */
  parsed: Map<string, string>;
  /** Whether the file holds exactly `digests` and `parsed` (this version and build, no row dropped). */
  exact: boolean;
}

export class DigestIndex {
  /** From the file read at start. */
  readonly #previous: Map<string, Remembered>;
  /** What this process saw and hashed: what the next save writes (files gone are forgotten). */
  readonly #current = new Map<string, Remembered>();
  readonly #parsedBefore: Map<string, string>;
  readonly #parsed = new Map<string, string>();
  /** {@link buildTag}, taken once per process (at load). */
  readonly #build = buildTag();
  /**
   * Whether the file on disk may differ from what a save would write now, beyond the sizes
   * {@link save} compares: set by anything that adds or changes an entry, or forgets one.
   */
  #dirty: boolean;
  /** How many digests and parses the file on disk holds (when not dirty). */
  #onDisk: { digests: number; parsed: number };

  private constructor(
    private readonly path: string | undefined,
    previous: Loaded,
    private readonly now: () => number,
    private readonly warn: (message: string) => void = () => undefined,
  ) {
    this.#previous = previous.digests;
    this.#parsedBefore = previous.parsed;
    this.#dirty = !previous.exact;
    this.#onDisk = { digests: previous.digests.size, parsed: previous.parsed.size };
  }

  /** Whether digests are remembered at all (without, a digest costs no extra fstat). */
  get enabled(): boolean {
    return this.path !== undefined;
  }

  /** No index: every file is hashed. */
  static none(): DigestIndex {
    return new DigestIndex(undefined, empty(), Date.now);
  }

  /**
   * Opens the index at `path` (absent: an empty one, written on the first save). A file that is
   * not a regular 0600 file of this uid is refused: `warn` says why, and nothing is read or written.
   */
  static load(path: string, warn: (message: string) => void, now: () => number = Date.now): DigestIndex {
    let fd: number;
    try {
      fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return new DigestIndex(path, empty(), now, warn);
      warn(`SKILL_MCP_DIGEST_INDEX: ${path} cannot be opened (${code ?? 'error'}); every file is hashed and the index is not written`);
      return DigestIndex.none();
    }
    try {
      const s = fstatSync(fd);
      const why = refusal(s);
      if (why !== undefined) {
        warn(`SKILL_MCP_DIGEST_INDEX: ${path} ${why}; it is neither read nor overwritten, and every file is hashed`);
        return DigestIndex.none();
      }
      const bytes = Buffer.allocUnsafe(s.size);
      let got = 0;
      while (got < bytes.length) {
        const n = readSync(fd, bytes, got, bytes.length - got, got);
        if (n === 0) break;
        got += n;
      }
      return new DigestIndex(path, parse(bytes.subarray(0, got).toString('utf8'), buildTag()), now, warn);
    } catch {
      warn(`SKILL_MCP_DIGEST_INDEX: ${path} cannot be read as an index; every file is hashed and it is rewritten`);
      return new DigestIndex(path, empty(), now, warn);
    } finally {
      closeSync(fd);
    }
  }

  /** The remembered digest of `key` when the file is still in `state` and the entry settled; else undefined. */
  lookup(key: string, state: string): string | undefined {
    const seen = this.#current.get(key) ?? this.#previous.get(key);
    if (seen?.state !== state || seen.hashedAt - seen.firstSeen < SETTLE_MS) return undefined;
    this.#current.set(key, seen);
    return seen.hex;
  }

  /**
   * Drops what is remembered of `key`: a read found bytes whose digest is not the one published
   * (catalog.ts confirmFresh), so neither this start nor the next may serve it again. The file is
   * hashed afresh and its new digest starts unsettled.
   */
  forget(key: string): void {
    this.#current.delete(key);
    this.#previous.delete(key);
    this.#dirty = true;
  }

  /**
   * What parsing a SKILL.md whose bytes hash to `key` gave, as remembered by a start of this very
   * build (a pure function of the text: no file state is involved), or undefined.
   */
  parsedSkillMd(key: string): string | undefined {
    const json = this.#parsed.get(key) ?? this.#parsedBefore.get(key);
    if (json !== undefined) this.#parsed.set(key, json);
    return json;
  }

  /** Remembers what parsing the SKILL.md whose bytes hash to `key` gave, as JSON text (a snapshot: later changes to the object are not saved). */
  rememberParsedSkillMd(key: string, json: string): void {
    if (this.path === undefined) return;
    if ((this.#parsed.get(key) ?? this.#parsedBefore.get(key)) !== json) this.#dirty = true;
    this.#parsed.set(key, json);
  }

  /** When a hash of `key` in `state` starts: the time, and since when that state has been seen. */
  begin(key: string, state: string): { firstSeen: number; hashedAt: number } {
    const hashedAt = this.now();
    const seen = this.#current.get(key) ?? this.#previous.get(key);
    return { firstSeen: seen?.state === state ? seen.firstSeen : hashedAt, hashedAt };
  }

  /** Remembers a digest taken of `key` in `state` (begun as {@link begin} said). */
  record(key: string, state: string, started: { firstSeen: number; hashedAt: number }, hex: string): void {
    if (this.path === undefined) return;
    this.#current.set(key, { state, ...started, hex });
    this.#dirty = true;
  }

  /**
   * Writes what this process saw (0600, through a temporary file and a rename) — unless the file
   * already holds exactly that: nothing was hashed, recorded or forgotten since it was read or
   * written, and every entry it holds was seen (looked up) again. Then what is in memory is the
   * very set of entries on disk (each taken over unchanged), and rewriting ~1 MB per 500 skills
   * on every unchanged start would only cost time (~10 ms at 553 skills).
   */
  save(): void {
    if (this.path === undefined) return;
    if (!this.#dirty && this.#current.size === this.#onDisk.digests && this.#parsed.size === this.#onDisk.parsed) return;
    const rows: Stored[] = [...this.#current].map(([key, r]) => [key, r.state, r.firstSeen, r.hashedAt, r.hex]);
    const tmp = join(dirname(this.path), `.${process.pid}-${Date.now()}.digest-index.tmp`);
    let fd: number | undefined;
    try {
      fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
      const text = Buffer.from(JSON.stringify({ version: VERSION, build: this.#build, rows, parsed: [...this.#parsed] }));
      for (let at = 0; at < text.length; ) at += writeSync(fd, text, at);
      closeSync(fd);
      fd = undefined;
      renameSync(tmp, this.path);
      this.#dirty = false;
      this.#onDisk = { digests: this.#current.size, parsed: this.#parsed.size };
    } catch (error) {
      if (fd !== undefined) closeSync(fd);
      try {
        unlinkSync(tmp);
      } catch {}
      this.warn(
        `SKILL_MCP_DIGEST_INDEX: ${this.path} cannot be written (${(error as NodeJS.ErrnoException).code ?? 'error'}); the next start hashes every file again`,
      );
    }
  }
}

/** Why an index file may not be trusted, or undefined when it may. */
function refusal(s: { isFile(): boolean; uid: number; mode: number; size: number }): string | undefined {
  if (!s.isFile()) return 'is not a regular file';
  // Security: another user's index could make this front publish digests of its choosing.
  if (s.uid !== process.getuid?.()) return `is owned by uid ${s.uid}, not this server's uid ${process.getuid?.()}`;
  if ((s.mode & 0o077) !== 0) return `has mode ${(s.mode & 0o777).toString(8)}; it must be 0600 (no access for group or others)`;
  if (s.size > MAX_INDEX_BYTES) return `is ${s.size} bytes, over ${MAX_INDEX_BYTES}`;
  return undefined;
}

const empty = (): Loaded => ({ digests: new Map(), parsed: new Map(), exact: false });

/**
 * Which build of the server is running: the state (shared/file-state.ts) of the Node binary and of
 * the program file it runs. A parse remembered by another build is not reused — an upgrade of the
 * YAML parser or of our rules must not be hidden by what an older one made of the same text.
 */
function buildTag(): string {
  const state = (path: string | undefined): string => {
    try {
      return path === undefined ? '-' : fileState(statSync(path, { bigint: true }));
    } catch {
      return '-';
    }
  };
  return `${state(process.execPath)}|${state(process.argv[1])}`;
}

function parse(text: string, build: string): Loaded {
  const value = JSON.parse(text) as { version?: unknown; build?: unknown; rows?: unknown; parsed?: unknown };
  const out = empty();
  if (value.version !== VERSION || !Array.isArray(value.rows)) return out;
  for (const row of value.rows as unknown[]) {
    if (!Array.isArray(row) || row.length !== 5) continue;
    const [key, state, firstSeen, hashedAt, hex] = row as unknown[];
    if (
      typeof key !== 'string' ||
      typeof state !== 'string' ||
      typeof firstSeen !== 'number' ||
      typeof hashedAt !== 'number' ||
      typeof hex !== 'string' ||
      !HEX64.test(hex)
    )
      continue;
    out.digests.set(key, { state, firstSeen, hashedAt, hex });
  }
  if (value.build === build && Array.isArray(value.parsed)) {
    for (const row of value.parsed as unknown[])
      if (Array.isArray(row) && row.length === 2 && typeof row[0] === 'string' && typeof row[1] === 'string')
        out.parsed.set(row[0], row[1]);
  }
  // A row left out (malformed, a key twice) or parses of another build: the next save rewrites the file.
  out.exact =
    value.build === build &&
    Array.isArray(value.parsed) &&
    out.digests.size === value.rows.length &&
    out.parsed.size === value.parsed.length;
  return out;
}
const HEX64 = /^[0-9a-f]{64}$/;
