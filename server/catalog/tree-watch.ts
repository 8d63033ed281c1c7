/**
 * @module Watches one folder tree for changes: one non-recursive `fs.watch` per folder (on Linux,
 * one inotify watch each, which reports every change to the folder's entries, files included).
 *
 * Why not `fs.watch(root, {recursive: true})`: on Linux, Node 20 emulates it in JavaScript with a
 * watch per file *and* folder. Measured on 5,000 skills / 23,891 folders / 50,000 files
 * (bench/RESULTS.md): 73,891 inotify watches, +188 MB RSS and 1.9 s to set up, against 23,891
 * watches, +53 MB and 0.5 s here (chokidar 4: 73,891, +354 MB, 6.7 s). Inotify watches are
 * counted per user (`fs.inotify.max_user_watches`, 8,192 on older kernels), so the count matters.
 * On macOS and Windows the recursive mode is native (one FSEvents / ReadDirectoryChangesW stream)
 * and is used as is.
 *
 * Folders that appear are watched as they are seen; folders that go (deleted, renamed) are
 * unwatched, so a moved folder never reports under its old path.
 *
 * The initial walk can also catch up (`start(changedSince)`): a change made after the tree was
 * scanned but before its folder's watch was set up raises no event, so each folder and each visible
 * entry in it is `lstat`ed as its watch is set up, and one changed (ctime or mtime) since the scan
 * began is reported like an event. docs/live-catalog.md has the reasoning and the cost. Hidden entries are not served,
 * so their changes are ignored and hidden folders are not watched. Links are not followed: a
 * linked skill's target lies inside its root (shared/discover.ts), where it is watched anyway.
 */
import { lstatSync, readdirSync, statSync, watch, type Dirent, type FSWatcher, type Stats } from 'node:fs';
import { dirname, join, sep } from 'node:path';

/** How long one slice of the initial walk may hold the event loop. */
const SETUP_SLICE_MS = 4;
/**
 * File times come from the kernel's coarse clock (a tick, 1-10 ms, behind `Date.now()`), so a
 * change just after the scan began may carry a time a little before it.
 */
const CLOCK_SLACK_MS = 50;
/** On a file system that keeps whole seconds (ext3, HFS+; FAT keeps 2 s), the time is rounded down this far. */
const COARSE_SLACK_MS = 2000;

/** Whether `info` says the entry changed at or after `since` (ms since the epoch). */
function changedSince(info: { ctimeMs: number; mtimeMs: number }, since: number): boolean {
  const at = Math.max(info.ctimeMs, info.mtimeMs);
  return at >= since - (at % 1000 === 0 ? COARSE_SLACK_MS : CLOCK_SLACK_MS);
}

export class TreeWatcher {
  #watchers = new Map<string, FSWatcher>();
  #closed = false;

  /**
   * @param root a real path (no links in it): reported paths are under it
   * @param onPath called with every changed path (a file or folder, possibly gone by now)
   */
  constructor(
    private readonly root: string,
    private readonly onPath: (path: string) => void,
  ) {}

  /** Folders watched now. */
  get size(): number {
    return this.#watchers.size;
  }

  /**
   * Watches every folder of the tree, a few ms at a time. Rejects with the system's error when a
   * folder cannot be watched (`ENOSPC`: the user's inotify watches are used up); nothing is left
   * watched then.
   *
   * @param changedSince when the tree's scan began (`Date.now()`): what changed since then and
   *   before its folder was watched is reported through `onPath` (the catch-up); omitted, nothing is.
   */
  async start(changedSince?: number): Promise<void> {
    const linux = process.platform === 'linux';
    // Elsewhere one recursive watch covers the tree at once; the walk is then only the catch-up.
    if (!linux) {
      this.#add(this.root, true);
      if (changedSince === undefined) return;
    }
    const stack = [this.root];
    while (stack.length > 0 && !this.#closed) {
      const until = performance.now() + SETUP_SLICE_MS;
      while (stack.length > 0 && performance.now() < until) {
        const dir = stack.pop()!;
        try {
          if (linux) this.#add(dir, false);
        } catch (error) {
          this.close();
          throw error;
        }
        // Listed after the watch is set up: an entry added from now on raises an event, one added before is listed here.
        const entries = visibleEntries(dir);
        if (changedSince !== undefined) this.#catchUp(dir, entries, changedSince);
        for (const entry of entries) if (entry.isDirectory()) stack.push(join(dir, entry.name));
      }
      if (stack.length > 0) await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /**
   * Reports `dir` and each of its entries that changed since `since` (the watch on `dir` is already
   * set up). Subfolders are looked at when the walk reaches them, as `dir`.
   */
  #catchUp(dir: string, entries: Dirent[], since: number): void {
    for (const path of [dir, ...entries.filter((e) => !e.isDirectory()).map((e) => join(dir, e.name))]) {
      let info: Stats | undefined;
      try {
        info = lstatSync(path, { throwIfNoEntry: false });
      } catch {
        info = undefined;
      }
      // Gone since it was listed: its folder changed, which its own event or the folder's time reports.
      if (info !== undefined && changedSince(info, since)) this.onPath(path);
    }
  }

  close(): void {
    this.#closed = true;
    for (const watcher of this.#watchers.values()) watcher.close();
    this.#watchers.clear();
  }

  #add(dir: string, recursive: boolean): void {
    if (this.#watchers.has(dir) || this.#closed) return;
    // persistent: false — watching never keeps the process alive after its transport ends.
    const watcher = watch(dir, { persistent: false, recursive }, (_event, filename) => this.#changed(dir, filename));
    watcher.on('error', () => {
      // The folder went away under its watch: forget it, and let the rescan see what is there now.
      this.#unwatch(dir);
      this.onPath(dir);
    });
    this.#watchers.set(dir, watcher);
  }

  #changed(dir: string, filename: string | Buffer | null): void {
    if (filename === null) {
      this.onPath(dir);
      return;
    }
    const name = filename.toString();
    // Hidden entries are never served (docs/architecture.md §3): an editor's .swp changes nothing.
    if (name.split(sep).some((segment) => segment.startsWith('.'))) return;
    const path = join(dir, name);
    this.onPath(path);
    if (process.platform === 'linux') this.#follow(path);
  }

  /** Keeps the watches in step with the folders: watch a new one (and what is already in it), drop a gone one. */
  #follow(path: string): void {
    let isDir = false;
    try {
      isDir = lstatSync(path, { throwIfNoEntry: false })?.isDirectory() === true;
    } catch {
      isDir = false;
    }
    if (!isDir) {
      if (this.#watchers.has(path)) this.#unwatch(path);
      return;
    }
    // Watched already, and so is everything under it.
    if (this.#watchers.has(path)) return;
    const stack = [path];
    while (stack.length > 0) {
      const dir = stack.pop()!;
      try {
        this.#add(dir, false);
      } catch {
        // Out of watches now: this folder's later changes are seen when its skill is rescanned for another reason.
        continue;
      }
      for (const child of subfolders(dir)) stack.push(child);
    }
  }

  /** Stops watching `dir` and every folder under it. */
  #unwatch(dir: string): void {
    const below = dir + sep;
    for (const [path, watcher] of this.#watchers) {
      if (path === dir || path.startsWith(below)) {
        watcher.close();
        this.#watchers.delete(path);
      }
    }
  }
}

/** The visible entries of `dir` (links are entries, not followed); none when it cannot be read. */
function visibleEntries(dir: string): Dirent[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).filter((e) => !e.name.startsWith('.'));
  } catch {
    return [];
  }
}

/** The visible, real (not linked) subfolders of `dir`; none when it cannot be read. */
function subfolders(dir: string): string[] {
  return visibleEntries(dir)
    .filter((e) => e.isDirectory())
    .map((e) => join(dir, e.name));
}

/**
 * Waits for a folder that does not exist yet (a configured root missing at start): watches its
 * nearest existing parent, non-recursively, and calls `check` at every change there. `check`
 * decides whether the folder is there now; if not, {@link retarget} moves the watch down to the
 * next parent that appeared (or up, if the watched one went).
 */
export class ParentWatcher {
  #watcher: FSWatcher | undefined;
  #at: string | undefined;
  #closed = false;

  constructor(
    private readonly target: string,
    private readonly check: () => void,
  ) {}

  /** The folder watched now (undefined when none could be). */
  get watching(): string | undefined {
    return this.#at;
  }

  retarget(): void {
    if (this.#closed) return;
    let at = dirname(this.target);
    while (!isDirectory(at) && dirname(at) !== at) at = dirname(at);
    if (at === this.#at && this.#watcher !== undefined) return;
    this.#watcher?.close();
    this.#watcher = undefined;
    this.#at = at;
    try {
      const watcher = watch(at, { persistent: false }, () => this.check());
      watcher.on('error', () => {
        // The parent itself went: look again from higher up.
        watcher.close();
        if (this.#watcher === watcher) this.#watcher = undefined;
        this.check();
      });
      this.#watcher = watcher;
      // What appeared between the look and the watch raised no event here: look once more.
      setImmediate(() => this.check()).unref();
    } catch {
      // Not watchable (permissions, out of watches): the caller's periodic check still finds the folder.
      this.#at = undefined;
    }
  }

  close(): void {
    this.#closed = true;
    this.#watcher?.close();
    this.#watcher = undefined;
  }
}

/** Whether `path` is a folder now (through links: a root may be reached through one). */
export function isDirectory(path: string): boolean {
  try {
    return statSync(path, { throwIfNoEntry: false })?.isDirectory() === true;
  } catch {
    return false;
  }
}
