/**
 * @module A skill's data folder on disk (docs/isolation.md, "Data folders"): `<base>/<skill>/<who>`,
 * `who` being `anyone` for callers without an identity or `s-<tag>` per subject (shared/data.ts),
 * made and checked by the runner before every run, and its last measured usage beside it
 * (`<base>/.usage/`). O(1) per run: nothing below the folder is opened, chowned or walked here.
 *
 * Ownership as root (a fresh uid per run): the folder is root's, mode 2770, its group a gid of its
 * own for good (`<base>/.gids/<gid>` names the folder that holds it); each run of it gets that group
 * as its one supplementary group and umask 007, so what one run writes the next can change, and
 * setgid folders keep the group on everything below. Without root every run has the runner's uid.
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  fstatSync,
  ftruncateSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { SkillMcpError } from '../../shared/errors.js';
import { ensurePrivateDir, openPrivateFile, readNoFollow } from '../state.js';
import type { TurnTaker } from '../ledger/types.js';

/** Where data folders live, and (root) the gids they are given. */
export interface DataPlace {
  base: string;
  gids?: { first: number; last: number };
  /** With Redis: each folder's turn also taken there, so replicas sharing the base take turns too. */
  shared?: TurnTaker;
}

/** A run's data folder, made and checked: its host path and (root) its group. */
export interface OpenedData {
  dir: string;
  gid?: number;
}

/** A folder's last measured usage (runner/data/usage.ts), and whether it was over its quota then. */
export interface DataRecord {
  bytes: number;
  entries: number;
  full: boolean;
  /** The quota it was judged against (`skill-mcp data du` judges a new measurement by it). */
  quota?: { bytes: number; files: number };
}

const asRoot = (): boolean => process.getuid!() === 0;

/** The gids /etc/group names: never given to a data folder. */
function namedGroups(): Set<number> {
  try {
    return new Set(
      readFileSync('/etc/group', 'utf8')
        .split('\n')
        .map((line) => Number(line.split(':')[2])),
    );
  } catch {
    return new Set();
  }
}

/** Security: one gid per folder for good, claimed atomically (O_EXCL), so two folders never share a group. */
function claimGid(base: string, key: string, range: { first: number; last: number }): number {
  const dir = join(base, '.gids');
  ensurePrivateDir(dir, 0o700);
  const named = namedGroups();
  const size = range.last - range.first + 1;
  const start = createHash('sha256').update(key).digest().readUInt32BE(0) % size;
  for (let i = 0; i < size; i++) {
    const gid = range.first + ((start + i) % size);
    if (named.has(gid)) continue;
    try {
      const fd = openSync(join(dir, String(gid)), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
      writeSync(fd, key);
      closeSync(fd);
      return gid;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  throw new SkillMcpError('INTERNAL', 'every gid of SKILL_MCP_DATA_GID_RANGE is taken by a data folder; the operator may widen it');
}

/** The gid `key` claimed before, if `gid` is it. */
function claimedBy(base: string, gid: number, key: string): boolean {
  try {
    return readNoFollow(join(base, '.gids', String(gid))) === key;
  } catch {
    return false;
  }
}

/**
 * Makes (or checks) the folder of `key` below `place.base`. Security: the base and every folder on
 * the way are the runner's own and not a link (ensurePrivateDir), so nobody else can swap a name
 * under the path bubblewrap later binds; the folder itself is opened O_NOFOLLOW and must be a
 * folder of the runner's, and its mode and group are set on that descriptor.
 */
export function openDataFolder(place: DataPlace, key: readonly string[]): OpenedData {
  // Security: each part one plain name below the base (skill names are folder names, never hidden).
  if (key.some((part) => part === '' || part.startsWith('.') || part.includes('/') || part.includes('\0')))
    throw new SkillMcpError('INVALID_PATH', 'a data folder is named by plain names only');
  const root = asRoot();
  ensurePrivateDir(place.base, root ? 0o711 : 0o700);
  let dir = place.base;
  for (const segment of key.slice(0, -1)) {
    dir = join(dir, segment);
    ensurePrivateDir(dir, root ? 0o711 : 0o700);
  }
  dir = join(dir, key[key.length - 1]!);
  // Made once; every later run finds it (an lstat, no exception thrown on the way).
  if (lstatSync(dir, { throwIfNoEntry: false }) === undefined) mkdirSync(dir, { mode: 0o700 });
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    const st = fstatSync(fd);
    if (!st.isDirectory() || st.uid !== process.getuid!()) throw new SkillMcpError('INTERNAL', 'a data folder is not the runner’s own');
    if (!root || place.gids === undefined) {
      if ((st.mode & 0o7777) !== 0o700) fchmodSync(fd, 0o700);
      return { dir };
    }
    const name = key.join('/');
    const gid =
      st.gid >= place.gids.first && st.gid <= place.gids.last && claimedBy(place.base, st.gid, name)
        ? st.gid
        : claimGid(place.base, name, place.gids);
    if (st.gid !== gid) fchownSync(fd, 0, gid);
    // Security: setgid keeps the folder's group on all a run creates; no other bit for others.
    if ((st.mode & 0o7777) !== 0o2770) fchmodSync(fd, 0o2770);
    return { dir, gid };
  } finally {
    closeSync(fd);
  }
}

/** The record file of `key`: one name per folder (encodeURIComponent is one-to-one). */
function recordPath(base: string, key: readonly string[]): string {
  return join(base, '.usage', encodeURIComponent(key.join('/')));
}

/** The folder's last record, or undefined when none was kept (a first run, a record removed). */
export function readDataRecord(base: string, key: readonly string[]): DataRecord | undefined {
  try {
    const value = JSON.parse(readNoFollow(recordPath(base, key))) as DataRecord;
    return [value.bytes, value.entries].every(Number.isSafeInteger) && typeof value.full === 'boolean' ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Keeps the folder's record for the next run (and a restarted runner). */
export function writeDataRecord(base: string, key: readonly string[], record: DataRecord): void {
  ensurePrivateDir(join(base, '.usage'), 0o700);
  // Not O_TRUNC: on ext4 a truncation to zero followed by a write forces the blocks out at close
  // (auto_da_alloc), ~3 ms a run; written over in place and cut to its length instead (~0.1 ms).
  const fd = openPrivateFile(recordPath(base, key), constants.O_WRONLY | constants.O_CREAT);
  try {
    const bytes = Buffer.from(JSON.stringify(record));
    writeSync(fd, bytes, 0, bytes.length, 0);
    ftruncateSync(fd, bytes.length);
  } finally {
    closeSync(fd);
  }
}
