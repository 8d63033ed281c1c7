/**
 * @module Watching a run's workspace against its cap (runner/workspace/capacity.ts) while the run
 * lasts, and measuring it once more after.
 *
 * With a tmpfs (root, mount.ts) the kernel keeps the cap; the watcher only notices that it was
 * reached (statfs: no free block or inode left), so the result says so even when the script then
 * deleted what it wrote. Without one (a runner that is not root) the watcher is the cap: every
 * {@link WATCH_INTERVAL_MS} it walks the workspace, summing real usage (st_blocks × 512, a file
 * with several names once) and counting every entry, and the first look over either cap stops the
 * run through its kill path. That is approximate: the run can go past the cap by what it writes
 * between two looks (docs/isolation.md, "The workspace's size"), each file itself held to the cap by
 * RLIMIT_FSIZE.
 *
 * Security: the walk runs as the runner over a tree the run is writing. It never follows a link
 * (lstat only; a folder is opened only once lstat showed it a folder, and the workspace root only
 * while it is still the folder the runner made), reads no file's contents, and looks at no more
 * than the file cap + 1 entries, in slices that give the event loop back between them. Whatever it
 * cannot measure — a folder the run made unreadable, a path too long to name, the workspace folder
 * moved or swapped — counts as over: a run cannot hide its usage from the watcher. Names are read
 * and paths built as bytes (shared/byte-names.ts): read as UTF-8 text, a folder named with a byte
 * that is not valid UTF-8 would not open again, and what it held went uncounted.
 */
import { lstatSync, statfsSync } from 'node:fs';
import type { Stats } from 'node:fs';
import { type ByteDir, joinBytes, openDirBytes } from '../../shared/byte-names.js';
import { WATCH_INTERVAL_MS } from './capacity.js';
import type { WorkspaceCap, WorkspaceMode, WorkspaceUsage } from './capacity.js';

/** Entries examined before the walk gives the event loop back. */
const SLICE = 512;

/** The workspace as the runner made it: its path and identity. */
export interface WatchedDir {
  dir: string;
  dev: number;
  ino: number;
}

const code = (error: unknown): string => (error as NodeJS.ErrnoException).code ?? 'error';
const yieldLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Walks the workspace once and sums what it holds. Over the byte cap means at it or past it (one
 * file held to the cap by RLIMIT_FSIZE has reached it: its next write fails); over the file cap,
 * past it. `whole`: go on summing past the byte cap (the last look, for the record); the walk
 * stops past the file cap either way. `slice` entries at a time (tests pass a small one).
 */
export async function measureWorkspace(ws: WatchedDir, cap: WorkspaceCap, whole = false, slice: number = SLICE): Promise<WorkspaceUsage> {
  let root: Stats;
  try {
    root = lstatSync(ws.dir);
  } catch (error) {
    return { bytes: 0, files: 0, over: 'unmeasurable', why: `the workspace folder is gone (${code(error)}): the run moved or removed it` };
  }
  // Security: the run folder is the run's at the uid levels: it could have put a link or another folder in its place.
  if (!root.isDirectory() || root.dev !== ws.dev || root.ino !== ws.ino)
    return { bytes: 0, files: 0, over: 'unmeasurable', why: 'the run replaced its workspace folder with something else' };
  let bytes = 0;
  let files = 0;
  let since = 0;
  const linked = new Set<number>();
  const stack: Buffer[] = [Buffer.from(ws.dir)];
  while (stack.length > 0) {
    const dir = stack.pop()!;
    let handle: ByteDir;
    try {
      handle = openDirBytes(dir);
    } catch (error) {
      if (code(error) === 'ENOENT') continue; // removed since it was listed
      return { bytes, files, over: 'unmeasurable', why: `a folder in it cannot be read (${code(error)}), so its size cannot be checked` };
    }
    try {
      for (let name = handle.next(); name !== null; name = handle.next()) {
        files += 1;
        if (files > cap.files) return { bytes, files, over: 'files', why: `more than ${cap.files} files and folders` };
        const path = joinBytes(dir, name);
        let st: Stats;
        try {
          st = lstatSync(path);
        } catch (error) {
          if (code(error) === 'ENOENT') continue;
          return {
            bytes,
            files,
            over: 'unmeasurable',
            why: `an entry in it cannot be examined (${code(error)}), so its size cannot be checked`,
          };
        }
        // Real usage, once per file however many names it has (a sparse file counts its blocks only).
        if (st.nlink < 2 || st.isDirectory() || !linked.has(st.ino)) {
          if (st.nlink > 1 && !st.isDirectory()) linked.add(st.ino);
          bytes += st.blocks * 512;
        }
        if (!whole && bytes >= cap.bytes) return { bytes, files, over: 'bytes', why: `at least ${bytes} bytes in use` };
        if (st.isDirectory()) stack.push(path);
        since += 1;
        if (since >= slice) {
          since = 0;
          await yieldLoop();
        }
      }
    } catch (error) {
      if (code(error) !== 'ENOENT')
        return { bytes, files, over: 'unmeasurable', why: `a folder in it cannot be read (${code(error)}), so its size cannot be checked` };
    } finally {
      try {
        handle.close();
      } catch {
        // closed already
      }
    }
  }
  return bytes >= cap.bytes ? { bytes, files, over: 'bytes', why: `${bytes} bytes in use` } : { bytes, files };
}

/** A tmpfs workspace's usage from statfs: full when no block or no inode is left. */
export function tmpfsUsage(dir: string, cap: WorkspaceCap): WorkspaceUsage {
  const st = statfsSync(dir);
  const bytes = (st.blocks - st.bfree) * st.bsize;
  const files = Math.max(0, st.files - st.ffree - 1);
  if (st.bfree === 0) return { bytes, files, over: 'bytes', why: `${bytes} bytes in use` };
  if (st.ffree === 0) return { bytes, files, over: 'files', why: `${cap.files} files and folders` };
  return { bytes, files };
}

export interface WorkspaceWatch {
  /** Stops looking (the run is over) and looks once more, in whole: its figures, with the first look's verdict when one was over. */
  finish(): Promise<WorkspaceUsage>;
}

/**
 * Looks at the workspace every {@link WATCH_INTERVAL_MS} until `finish`. In `watch` mode the first
 * look over a cap calls `onOver` once (the caller kills the run); in `tmpfs` mode reaching the cap
 * is only remembered.
 */
export function watchWorkspace(
  ws: WatchedDir,
  mode: WorkspaceMode,
  cap: WorkspaceCap,
  onOver: (usage: WorkspaceUsage) => void,
): WorkspaceWatch {
  let first: WorkspaceUsage | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let wake: (() => void) | undefined;
  const look = async (whole = false): Promise<WorkspaceUsage> => {
    if (mode === 'tmpfs') {
      try {
        return tmpfsUsage(ws.dir, cap);
      } catch {
        return { bytes: 0, files: 0 }; // the mount is the cap; a failed statfs hides nothing
      }
    }
    return measureWorkspace(ws, cap, whole);
  };
  const loop = (async (): Promise<void> => {
    while (!stopped && first === undefined) {
      const usage = await look();
      if (usage.over !== undefined && !stopped) {
        first = usage;
        if (mode === 'watch') onOver(usage);
        return;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = setTimeout(resolve, WATCH_INTERVAL_MS);
      });
    }
  })();
  return {
    async finish(): Promise<WorkspaceUsage> {
      stopped = true;
      if (timer) clearTimeout(timer);
      wake?.();
      await loop;
      const last = await look(true);
      return first?.over !== undefined
        ? { bytes: last.bytes, files: last.files, over: first.over, ...(first.why !== undefined ? { why: first.why } : {}) }
        : last;
    },
  };
}
