/**
 * @module A skill root's listing, remembered between the runner's requests (issue 31). Finding a
 * skill by name (shared/discover.ts) needs the root's whole listing — its links, any of which may
 * name the skill, and its size, against the skill limit — and reading 5,000 entries cost ~6 ms of
 * every prepare and every run. Only the listing (entry names, and which are links) is remembered;
 * everything that decides what runs — realpaths, link targets, SKILL.md, the skill's own bytes —
 * is read again per request by the caller.
 *
 * The check that the listing is still the folder's is one `stat` of the folder (O(1) in its size):
 * adding, removing or renaming an entry updates the folder's mtime and ctime. Like git's "racily
 * clean" rule, a listing is trusted only when it cannot hide a change made in the same timestamp
 * tick as the last one it saw: it must have been read at least SETTLE_MS (longer than the coarsest
 * timestamp granularity we allow for: 2 s, FAT) after that folder state was first seen, by this
 * process's own clock. Until then (a folder edited moments ago) every request reads it again.
 * ctime is included because no user can set it (utimes moves it to now), so restoring an mtime by
 * hand after a change does not bring an old listing back.
 */
import { readdirSync, statSync, type BigIntStats } from 'node:fs';

export interface FolderEntry {
  name: string;
  /** The entry is a symbolic link (its target decides what it is). */
  link: boolean;
}

/** The non-hidden directories and links of one folder, in readdir order. */
export interface FolderListing {
  entries: readonly FolderEntry[];
  /** Index in `entries` of each link. */
  links: readonly number[];
  /** Index in `entries` of each name. */
  byName: ReadonlyMap<string, number>;
}

/** Longer than any filesystem's timestamp step we allow for (FAT's 2 s). */
export const SETTLE_MS = 2_000;

/** The folder state a listing is read under: identity, times to the nanosecond, size, links. Throws as statSync does. */
export function folderState(dir: string): string {
  const s: BigIntStats = statSync(dir, { bigint: true });
  return `${s.dev}:${s.ino}:${s.mtimeNs}:${s.ctimeNs}:${s.size}:${s.nlink}`;
}

/** Reads a folder's listing now (what candidates a skill root has). Throws as readdirSync does. */
export function readFolder(dir: string): FolderListing {
  const entries: FolderEntry[] = [];
  const links: number[] = [];
  const byName = new Map<string, number>();
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    // Hidden entries are never candidates; files are not skill folders.
    if (e.name.startsWith('.') || !(e.isDirectory() || e.isSymbolicLink())) continue;
    const link = e.isSymbolicLink();
    if (link) links.push(entries.length);
    byName.set(e.name, entries.length);
    entries.push({ name: e.name, link });
  }
  return { entries, links, byName };
}

interface Remembered {
  key: string;
  /** When this process first saw the folder in this state (its own monotonic clock, ms). */
  firstSeen: number;
  /** When the remembered listing's read began. */
  readAt: number;
  listing: FolderListing;
}

/** The listings of the folders a process keeps asking about (the runner's skill roots). One per process, made at startup. */
export class FolderListings {
  readonly #remembered = new Map<string, Remembered>();

  /** `now`, `state` and `list` are replaceable so a test can make a change that keeps the folder's times. */
  constructor(
    private readonly settleMs = SETTLE_MS,
    private readonly now: () => number = () => performance.now(),
    private readonly state: (dir: string) => string = folderState,
    private readonly list: (dir: string) => FolderListing = readFolder,
  ) {}

  /** `dir`'s listing as it is now; throws as readdirSync / statSync do. */
  read(dir: string): FolderListing {
    const before = this.state(dir);
    const seen = this.#remembered.get(dir);
    const at = this.now();
    // Security: trusted only when read long enough after this folder state was first seen that a
    // later change cannot carry the same times (the racily-clean rule above).
    if (seen?.key === before && seen.readAt - seen.firstSeen >= this.settleMs) return seen.listing;
    const firstSeen = seen?.key === before ? seen.firstSeen : at;
    const listing = this.list(dir);
    // Changed while it was read: not remembered (the next request reads it again).
    if (this.state(dir) === before) this.#remembered.set(dir, { key: before, firstSeen, readAt: at, listing });
    else this.#remembered.delete(dir);
    return listing;
  }
}
