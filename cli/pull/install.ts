/**
 * @module Puts one checked skill on disk at `DIR/<name>`: every file is written into a new snapshot
 * folder in `DIR/.skill-mcp-store/` (created exclusively, never through a link), read back and
 * checked, and only then does `DIR/<name>` become a link to it, in one rename (docs/pull-sources.md,
 * "Atomic with a live server"). What is already at `DIR/<name>` is looked at first: a link pull did
 * not make is never replaced or written through, and a folder pull did not write, or one changed
 * since, is only replaced with `--force`.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { LockedSkill } from './lock.js';

/** Every regular file under `dir` with its digest; anything else (a link, a FIFO) is named in `other`. */
function snapshot(dir: string): { files: Map<string, string>; other: string[] } {
  const files = new Map<string, string>();
  const other: string[] = [];
  const walk = (rel: string): void => {
    for (const entry of readdirSync(join(dir, rel), { withFileTypes: true })) {
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile())
        files.set(
          path,
          `sha256:${createHash('sha256')
            .update(readFileSync(join(dir, path)))
            .digest('hex')}`,
        );
      else other.push(path);
    }
  };
  walk('');
  return { files, other };
}

/** How `DIR/<name>` differs from what the lock says pull wrote there; undefined when it does not. */
export function localChange(target: string, locked: LockedSkill): string | undefined {
  const { files, other } = snapshot(target);
  if (other.length > 0) return `"${other[0]}" is not a regular file`;
  for (const [path, digest] of Object.entries(locked.files)) {
    const now = files.get(path);
    if (now === undefined) return `"${path}" was deleted`;
    if (now !== digest) return `"${path}" was edited`;
  }
  const added = [...files.keys()].find((p) => !(p in locked.files));
  return added === undefined ? undefined : `"${added}" was added`;
}

export type TargetState = { kind: 'absent' } | { kind: 'folder' } | { kind: 'refused'; why: string };

/** Where pull keeps each skill's snapshots: `DIR/.skill-mcp-store/<name>-<random>/<name>/`. Hidden, so nothing serves it as a skill. */
export const STORE = '.skill-mcp-store';
/** The snapshot folder names pull makes (mkdtemp's six characters after the name). */
const SNAPSHOT = /^[^/]+-[A-Za-z0-9]{6}$/;

/**
 * The snapshot `DIR/<name>` links to, when it is pull's own link: exactly
 * `.skill-mcp-store/<name>-XXXXXX/<name>`, every step a real folder (no link on the way).
 */
function ownSnapshot(dir: string, name: string, link: string): string | undefined {
  const parts = link.split('/');
  if (parts.length !== 3 || parts[0] !== STORE || !SNAPSHOT.test(parts[1]!) || !parts[1]!.startsWith(`${name}-`) || parts[2] !== name)
    return undefined;
  for (const at of [join(dir, STORE), join(dir, STORE, parts[1]!), join(dir, STORE, parts[1]!, name)]) {
    if (lstatSync(at, { throwIfNoEntry: false })?.isDirectory() !== true) return undefined;
  }
  return parts[1];
}

/** What is at `DIR/<name>` now. */
export function targetState(dir: string, name: string): TargetState {
  const target = join(dir, name);
  const stat = lstatSync(target, { throwIfNoEntry: false });
  if (!stat) return { kind: 'absent' };
  if (stat.isSymbolicLink()) {
    if (ownSnapshot(dir, name, readlinkSync(target)) !== undefined) return { kind: 'folder' };
    // Security: a link pull did not make (a person's own checkout linked in, or a planted link to elsewhere) is never replaced or written through.
    return {
      kind: 'refused',
      why: `${target} is a symbolic link pull did not make; pull never replaces such a link or writes through one (remove it, or pull into another folder)`,
    };
  }
  if (!stat.isDirectory()) return { kind: 'refused', why: `${target} exists and is not a folder` };
  return { kind: 'folder' };
}

/** A checked copy of one skill written beside the folder, not yet in place. */
export interface Prepared {
  /** Puts it in place as `DIR/<name>`. */
  commit(): void;
  /** Removes it; `DIR/<name>` stays as it was. */
  discard(): void;
}

/** The store folder, made if missing; refused when it is anything but a real folder. */
function storeOf(dir: string): string {
  const store = join(dir, STORE);
  const stat = lstatSync(store, { throwIfNoEntry: false });
  if (!stat) mkdirSync(store, { mode: 0o755 });
  // Security: a store that is a link would put every snapshot (and the next pull's writes) elsewhere.
  else if (!stat.isDirectory() || stat.isSymbolicLink()) throw new Error(`${store} is not a folder; move it away and pull again`);
  return store;
}

const digestOf = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/**
 * Writes `files` as a new snapshot beside the skill's current one, reads every file back and
 * checks it, and returns how to put it in place. commit() makes `DIR/<name>` a link to it in one
 * rename (a link over a link: a reader sees the old snapshot or the new one, never a mix), then
 * removes the snapshots older than the one just replaced (that one stays until the next pull, so a
 * read already under way in it finishes). A `DIR/<name>` that is still a real folder (written by an
 * older pull, or replaced with --force) is moved aside and removed instead, with a moment where
 * the name is missing.
 */
export function prepareSkill(dir: string, name: string, files: ReadonlyMap<string, Buffer>): Prepared {
  const snapshotDir = mkdtempSync(join(storeOf(dir), `${name}-`));
  const root = join(snapshotDir, name);
  try {
    chmodSync(snapshotDir, 0o755);
    mkdirSync(root, { mode: 0o755 });
    for (const [path, bytes] of files) {
      const file = join(root, ...path.split('/'));
      mkdirSync(dirname(file), { recursive: true, mode: 0o755 });
      // Security: 'wx' creates the file or fails; it never opens something already there, a link included.
      writeFileSync(file, bytes, { flag: 'wx', mode: 0o644 });
    }
    // What lands in place is what was checked: every file read back from the disk.
    for (const [path, bytes] of files) {
      if (digestOf(readFileSync(join(root, ...path.split('/')))) !== digestOf(bytes))
        throw new Error(`"${path}" reads back differently from what was written`);
    }
  } catch (error) {
    rmSync(snapshotDir, { recursive: true, force: true });
    throw error;
  }
  const target = join(dir, name);
  const snapshot = basename(snapshotDir);
  return {
    commit() {
      const before = lstatSync(target, { throwIfNoEntry: false });
      const previous = before?.isSymbolicLink() ? ownSnapshot(dir, name, readlinkSync(target)) : undefined;
      const link = join(dir, `.skill-mcp-link-${randomBytes(6).toString('hex')}`);
      symlinkSync(`${STORE}/${snapshot}/${name}`, link);
      let aside: string | undefined;
      try {
        if (before?.isDirectory()) {
          aside = join(dir, `.skill-mcp-old-${randomBytes(6).toString('hex')}`);
          renameSync(target, aside);
        }
        try {
          renameSync(link, target);
        } catch (error) {
          if (aside) renameSync(aside, target);
          aside = undefined;
          throw error;
        }
      } catch (error) {
        rmSync(link, { force: true });
        rmSync(snapshotDir, { recursive: true, force: true });
        throw error;
      } finally {
        if (aside) rmSync(aside, { recursive: true, force: true });
      }
      pruneSnapshots(dir, name, new Set([snapshot, ...(previous ? [previous] : [])]));
    },
    discard() {
      rmSync(snapshotDir, { recursive: true, force: true });
    },
  };
}

/** Removes this skill's snapshots other than `keep` (pull's own folders only: `<name>-XXXXXX/<name>`). */
function pruneSnapshots(dir: string, name: string, keep: ReadonlySet<string>): void {
  const store = join(dir, STORE);
  for (const entry of readdirSync(store, { withFileTypes: true })) {
    if (!entry.isDirectory() || keep.has(entry.name) || !SNAPSHOT.test(entry.name) || !entry.name.startsWith(`${name}-`)) continue;
    const inner = readdirSync(join(store, entry.name));
    // "a-b-XXXXXX" also starts with "a-": the folder inside says whose snapshot it is.
    if (inner.length === 1 && inner[0] === name) rmSync(join(store, entry.name), { recursive: true, force: true });
  }
}
