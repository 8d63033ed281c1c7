/**
 * @module Puts one checked skill on disk at `DIR/<name>`: every file is written into a fresh temp
 * folder inside `DIR` (created exclusively, never through a link), and only a complete folder is
 * renamed into place. What is already at `DIR/<name>` is looked at first: a link is never
 * replaced or written through, and a folder pull did not write, or one changed since, is only
 * replaced with `--force`.
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { LockedSkill } from './lock.js';

/** Every regular file under `dir` with its digest; anything else (a link, a FIFO) is named in `other`. */
function snapshot(dir: string): { files: Map<string, string>; other: string[] } {
  const files = new Map<string, string>();
  const other: string[] = [];
  const walk = (rel: string): void => {
    for (const entry of readdirSync(join(dir, rel), { withFileTypes: true })) {
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) files.set(path, `sha256:${createHash('sha256').update(readFileSync(join(dir, path))).digest('hex')}`);
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

/** What is at `DIR/<name>` now. */
export function targetState(dir: string, name: string): TargetState {
  const target = join(dir, name);
  const stat = lstatSync(target, { throwIfNoEntry: false });
  if (!stat) return { kind: 'absent' };
  // Security: a link (a person's own checkout linked in, or a planted link to elsewhere) is never replaced or written through.
  if (stat.isSymbolicLink()) return { kind: 'refused', why: `${target} is a symbolic link; pull never replaces a link or writes through one (remove it, or pull into another folder)` };
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

/**
 * Writes `files` into a fresh temp folder in `dir`; commit() renames it to `DIR/<name>` (an
 * existing folder is moved aside first and removed after; if the final rename fails it is moved back).
 */
export function prepareSkill(dir: string, name: string, files: ReadonlyMap<string, Buffer>): Prepared {
  const temp = mkdtempSync(join(dir, '.skill-mcp-pull-'));
  const target = join(dir, name);
  try {
    chmodSync(temp, 0o755);
    for (const [path, bytes] of files) {
      const file = join(temp, ...path.split('/'));
      mkdirSync(dirname(file), { recursive: true, mode: 0o755 });
      // Security: 'wx' creates the file or fails; it never opens something already there, a link included.
      writeFileSync(file, bytes, { flag: 'wx', mode: 0o644 });
    }
  } catch (error) {
    rmSync(temp, { recursive: true, force: true });
    throw error;
  }
  return {
    commit() {
      let aside: string | undefined;
      try {
        if (lstatSync(target, { throwIfNoEntry: false })) {
          aside = join(dir, `.skill-mcp-old-${randomBytes(6).toString('hex')}`);
          renameSync(target, aside);
        }
        try {
          renameSync(temp, target);
        } catch (error) {
          if (aside) renameSync(aside, target);
          aside = undefined;
          throw error;
        }
      } finally {
        rmSync(temp, { recursive: true, force: true });
        if (aside) rmSync(aside, { recursive: true, force: true });
      }
    },
    discard() {
      rmSync(temp, { recursive: true, force: true });
    },
  };
}
