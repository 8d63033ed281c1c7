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
 * unwatched, so a moved folder never reports under its old path. Hidden entries are not served,
 * so their changes are ignored and hidden folders are not watched. Links are not followed: a
 * linked skill's target lies inside its root (shared/discover.ts), where it is watched anyway.
 */
import { lstatSync, readdirSync, watch, type FSWatcher } from 'node:fs';
import { join, sep } from 'node:path';

/** How long one slice of the initial walk may hold the event loop. */
const SETUP_SLICE_MS = 4;

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
   */
  async start(): Promise<void> {
    if (process.platform !== 'linux') {
      this.#add(this.root, true);
      return;
    }
    const stack = [this.root];
    while (stack.length > 0 && !this.#closed) {
      const until = performance.now() + SETUP_SLICE_MS;
      while (stack.length > 0 && performance.now() < until) {
        const dir = stack.pop()!;
        try {
          this.#add(dir, false);
        } catch (error) {
          this.close();
          throw error;
        }
        for (const child of subfolders(dir)) stack.push(child);
      }
      if (stack.length > 0) await new Promise((resolve) => setImmediate(resolve));
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

/** The visible, real (not linked) subfolders of `dir`; none when it cannot be read. */
function subfolders(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
      .map((e) => join(dir, e.name));
  } catch {
    return [];
  }
}
