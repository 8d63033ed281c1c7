/**
 * @module Keeps the catalog in step with its folders: watches each root (tree-watch.ts), gathers
 * changed paths until they settle (quiet for {@link QUIET_MS}, at most {@link MAX_WAIT_MS} after the
 * first), then asks the catalog to rescan what they touch. A root whose file system raises no
 * change events for changes made elsewhere (NFS, SMB, FUSE, 9p, virtiofs), or that cannot be
 * watched (the user's inotify watches used up), is rescanned every `SKILL_MCP_WATCH_POLL_SECONDS`
 * instead, and stderr says so. `SKILL_MCP_WATCH=off` scans once at start, as before.
 *
 * Three gaps are closed (docs/live-catalog.md): the watch is set up after the start-up scan, a few
 * ms at a time, so as each folder is watched, what changed in it since the scan began is reported
 * (tree-watch.ts's catch-up); a root missing at start is waited for (its nearest existing parent
 * is watched, and it is looked for every `SKILL_MCP_WATCH_POLL_SECONDS` as well): once it appears
 * it is scanned, announced and watched like the others; and a watched root that is deleted is
 * waited for again, one replaced by another folder of the same name watched anew.
 *
 * The operator's declarations folder (`SKILL_MCP_DECLARATIONS`) is watched too: a change there
 * rescans every skill (the catalog compares the folder's digest, so a change made before the
 * watch was set up is caught by the first update after it).
 */
import { statSync, statfsSync, watch, type FSWatcher } from 'node:fs';
import { relative, resolve, sep } from 'node:path';
import { rootLabel } from '../../shared/discover.js';
import { explainUnreadableRoot } from '../../shared/unreadable-root.js';
import type { Catalog } from './catalog.js';
import { ParentWatcher, TreeWatcher, isDirectory } from './tree-watch.js';

/** A change is handled once nothing more happened for this long... */
export const QUIET_MS = 250;
/** ...or this long after its first event, whichever comes first (a long burst is still seen). */
export const MAX_WAIT_MS = 1000;
export const DEFAULT_POLL_SECONDS = 30;

export interface WatchSettings {
  mode: 'on' | 'off' | 'poll';
  pollSeconds: number;
}

/** `SKILL_MCP_WATCH` (`on`, `off`, `poll`) and `SKILL_MCP_WATCH_POLL_SECONDS`; a bad value keeps the default and is reported. */
export function readWatchSettings(env: NodeJS.ProcessEnv): { settings: WatchSettings; errors: string[] } {
  const errors: string[] = [];
  let mode: WatchSettings['mode'] = 'on';
  const rawMode = env['SKILL_MCP_WATCH'];
  if (rawMode !== undefined && rawMode !== '') {
    if (rawMode === 'on' || rawMode === 'off' || rawMode === 'poll') mode = rawMode;
    else errors.push(`SKILL_MCP_WATCH=${JSON.stringify(rawMode)} is not one of on, off, poll; using on`);
  }
  let pollSeconds = DEFAULT_POLL_SECONDS;
  const rawPoll = env['SKILL_MCP_WATCH_POLL_SECONDS'];
  if (rawPoll !== undefined && rawPoll !== '') {
    const value = Number(rawPoll);
    if (Number.isSafeInteger(value) && value > 0) pollSeconds = value;
    else errors.push(`SKILL_MCP_WATCH_POLL_SECONDS=${JSON.stringify(rawPoll)} is not a positive integer; using ${DEFAULT_POLL_SECONDS}`);
  }
  return { settings: { mode, pollSeconds }, errors };
}

/**
 * `statfs` magic numbers of file systems where inotify sees only this machine's own writes (or
 * none): a change made on the server or host behind them raises no event here.
 */
const REMOTE_FILE_SYSTEMS = new Map<number, string>([
  [0x6969, 'NFS'],
  [0x517b, 'SMB'],
  [0xff534d42, 'CIFS'],
  [0xfe534d42, 'SMB2'],
  [0x65735546, 'FUSE'],
  [0x01021997, '9p'],
  [0x6a656a63, 'virtiofs'],
  [0x00c36400, 'Ceph'],
  [0x5346414f, 'AFS'],
]);

/** Why `root` must be polled, or undefined when its change events can be trusted. */
function remoteFileSystem(root: string): string | undefined {
  try {
    return REMOTE_FILE_SYSTEMS.get(statfsSync(root).type);
  } catch {
    return undefined;
  }
}

export interface LiveCatalog {
  /** Resolves once every root is watched, polled or waited for (stderr has said which). */
  ready: Promise<void>;
  close(): void;
}

const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** A folder's identity (device and inode), or undefined when it is not a folder any more. */
function folderId(path: string): string | undefined {
  try {
    const stat = statSync(path);
    return stat.isDirectory() ? `${stat.dev}:${stat.ino}` : undefined;
  } catch {
    return undefined;
  }
}

export function startLiveCatalog(
  catalog: Catalog,
  settings: WatchSettings,
  warn: (message: string) => void,
  /** Internal notes (SKILL_MCP_LOG_LEVEL=debug): how many folders are watched. */
  debug: (message: string) => void = () => undefined,
): LiveCatalog {
  const roots = catalog.roots;
  if (settings.mode === 'off' || roots.length === 0) {
    if (settings.mode === 'off') warn('SKILL_MCP_WATCH=off: the skill folders were scanned once; restart the server to see changes');
    return { ready: Promise.resolve(), close: () => undefined };
  }
  const pending = new Set<string>();
  let quiet: NodeJS.Timeout | undefined;
  let latest: NodeJS.Timeout | undefined;
  let closed = false;
  const flush = (): void => {
    clearTimeout(quiet);
    clearTimeout(latest);
    quiet = latest = undefined;
    const paths = [...pending];
    pending.clear();
    if (paths.length > 0 && !closed)
      void catalog
        .update({ paths })
        .then(rewatchReplacedRoots)
        .catch((error: unknown) => warn(`catalog update failed: ${errorText(error)}`));
  };
  const onPath = (path: string): void => {
    pending.add(path);
    clearTimeout(quiet);
    quiet = setTimeout(flush, QUIET_MS);
    latest ??= setTimeout(flush, MAX_WAIT_MS);
  };

  /** Each watched root's watcher (one per root) and the folder (device, inode) it watches. */
  const watchedRoots = new Map<number, { watcher: TreeWatcher; id: string | undefined }>();
  const waiting: (() => void)[] = [];
  const polled = new Set<number>();
  let timer: NodeJS.Timeout | undefined;
  const poll = (index: number, why: string): void => {
    polled.add(index);
    warn(`${rootLabel(roots[index]!)}: ${why}; rescanning it every ${settings.pollSeconds} s (SKILL_MCP_WATCH_POLL_SECONDS)`);
    if (timer !== undefined) return;
    let busy = false;
    timer = setInterval(() => {
      if (busy || closed) return;
      busy = true;
      void catalog
        .update({ roots: polled })
        .catch((error: unknown) => warn(`catalog rescan failed: ${errorText(error)}`))
        .finally(() => (busy = false));
    }, settings.pollSeconds * 1000);
    timer.unref();
  };

  /**
   * Watches root `index` at `real`, or polls it when it cannot be watched. `changedSince`: when the
   * scan of this root began; what changed since and before its folders were watched is caught up.
   * Resolves with the folders watched (0 when polled).
   */
  const watchRoot = async (index: number, real: string, changedSince: number): Promise<number> => {
    const remote = remoteFileSystem(real);
    if (remote) {
      poll(index, `on ${remote}, where changes made on other machines raise no change events`);
      return 0;
    }
    // Taken before the watch: a folder swapped in while it is set up then differs, and is watched anew.
    const id = folderId(real);
    const watcher = new TreeWatcher(real, onPath);
    try {
      await watcher.start(changedSince);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      poll(
        index,
        code === 'ENOSPC'
          ? 'cannot be watched: the inotify watches of this user are used up (raise fs.inotify.max_user_watches)'
          : `cannot be watched (${code ?? 'error'})`,
      );
      return 0;
    }
    if (closed) {
      watcher.close();
      return 0;
    }
    watchedRoots.set(index, { watcher, id });
    return watcher.size;
  };

  /**
   * A watched root that went away (deleted, renamed, or replaced by a new folder of the same name)
   * leaves its watches on a folder nobody looks at: after each update, such a root's watcher is
   * closed; a root that is gone is waited for again like one missing at start, and one replaced is
   * rescanned whole (the update only rescanned the paths whose events it heard) and watched anew.
   */
  function rewatchReplacedRoots(): void {
    for (const [index, { watcher, id }] of [...watchedRoots]) {
      const real = catalog.realRoots[index];
      const now = real === undefined ? undefined : folderId(real);
      if (closed || (now !== undefined && now === id)) continue;
      watchedRoots.delete(index);
      watcher.close();
      if (real === undefined || now === undefined) {
        warn(`${rootLabel(roots[index]!)}: gone; its skills are no longer served`);
        // Rediscovered first, so skill_list names the missing root at once.
        void catalog
          .update({ roots: [index] })
          .catch((error: unknown) => warn(`catalog rescan failed: ${errorText(error)}`))
          .finally(() => closed || waitFor(index));
      } else {
        void catalog
          .update({ roots: [index] })
          .then(() => watchRoot(index, real, Date.now()))
          .catch((error: unknown) => warn(`catalog rescan failed: ${errorText(error)}`));
      }
    }
  }

  /**
   * A root missing at start: its nearest existing parent is watched, and it is looked for every
   * poll interval too (a parent on a network mount raises no event). Once it is a folder it is
   * scanned (the update announces its skills) and watched from then on.
   */
  const waitFor = (index: number): void => {
    const label = rootLabel(roots[index]!);
    let found = false;
    let checking = false;
    const check = (): void => {
      if (closed || found || checking) return;
      if (!isDirectory(roots[index]!)) {
        parent.retarget();
        return;
      }
      checking = true;
      const since = Date.now();
      void catalog
        .update({ roots: [index] })
        .then(async () => {
          const real = catalog.realRoots[index];
          // Gone again before it could be scanned: keep waiting.
          if (real === undefined || closed) return;
          found = true;
          stop();
          const folders = await watchRoot(index, real, since);
          if (folders > 0) warn(`${label}: appeared; its skills are served, and its ${folders} folders watched for changes`);
        })
        .catch((error: unknown) => warn(`catalog rescan failed: ${errorText(error)}`))
        .finally(() => (checking = false));
    };
    const parent = new ParentWatcher(resolve(roots[index]!), check);
    const interval = setInterval(check, settings.pollSeconds * 1000);
    interval.unref();
    const stop = (): void => {
      parent.close();
      clearInterval(interval);
    };
    waiting.push(stop);
    parent.retarget();
    // A root this uid cannot reach is there; start-up has already said which folder stops it.
    const blocked = explainUnreadableRoot(roots[index]!) !== undefined;
    warn(
      blocked
        ? `${label}: cannot be read by this uid (said above); served as soon as it can be (looked for every ${settings.pollSeconds} s: SKILL_MCP_WATCH_POLL_SECONDS)`
        : `${label}: not there (yet); served as soon as it appears (its parent folder is watched, and it is looked for every ${settings.pollSeconds} s: SKILL_MCP_WATCH_POLL_SECONDS)`,
    );
    // It may have appeared between the scan and now.
    check();
  };

  /**
   * Linked skills whose real folder the root's own walk never reaches (it is under a hidden
   * folder, as `skill-mcp pull`'s `.skill-mcp-store/` snapshots are): each such folder gets a
   * watcher of its own, kept in step with the catalog, so an edit made there is seen too.
   */
  const linkedTargets = new Map<string, TreeWatcher>();
  const watchLinkedTargets = (): void => {
    if (closed || settings.mode !== 'on') return;
    const realRoots = catalog.realRoots.filter((r): r is string => r !== undefined);
    const wanted = new Set(
      catalog
        .skills()
        .map((r) => r.realDir)
        .filter((dir) =>
          realRoots.some((root) => {
            const rel = relative(root, dir);
            return rel !== '' && !rel.startsWith('..') && rel.split(sep).some((segment) => segment.startsWith('.'));
          }),
        ),
    );
    for (const [dir, watcher] of linkedTargets) {
      if (wanted.has(dir)) continue;
      watcher.close();
      linkedTargets.delete(dir);
    }
    for (const dir of wanted) {
      if (linkedTargets.has(dir)) continue;
      const watcher = new TreeWatcher(dir, onPath);
      linkedTargets.set(dir, watcher);
      // Caught up from now: the skill was (re)scanned in the update that made it wanted.
      watcher
        .start(Date.now())
        .catch((error: unknown) =>
          warn(`a linked skill's folder cannot be watched (${errorText(error)}); edits in it are seen at the next read`),
        );
    }
  };
  const unsubscribe = catalog.onChange(watchLinkedTargets);

  const ready = (async () => {
    let folders = 0;
    let watched = 0;
    for (const [index] of roots.entries()) {
      if (settings.mode === 'poll') {
        // A missing root is looked for at each rescan (discovery runs each time).
        poll(index, 'SKILL_MCP_WATCH=poll');
        continue;
      }
      const real = catalog.realRoots[index];
      if (real === undefined) {
        waitFor(index);
        continue;
      }
      const added = await watchRoot(index, real, catalog.scanStartedAt);
      if (closed) return;
      if (added > 0) watched++;
      folders += added;
    }
    if (watched > 0)
      debug(
        `watching ${watched === roots.length ? 'the skill folders' : `${watched} of ${roots.length} skill roots`} for changes (${folders} folders)`,
      );
    watchLinkedTargets();
  })();

  let declarations: FSWatcher | undefined;
  if (catalog.declarationsDir !== undefined) {
    const dir = catalog.declarationsDir;
    try {
      declarations = watch(dir, { persistent: false }, () => onPath(dir));
      declarations.on('error', (error) =>
        warn(
          `SKILL_MCP_DECLARATIONS: the folder can no longer be watched (${errorText(error)}); restart the server after changing declarations`,
        ),
      );
      onPath(dir);
    } catch (error) {
      warn(
        `SKILL_MCP_DECLARATIONS: the folder cannot be watched (${errorText(error)}); it is read again whenever a skill folder changes, or at a restart`,
      );
    }
  }

  return {
    ready,
    close() {
      closed = true;
      declarations?.close();
      clearTimeout(quiet);
      clearTimeout(latest);
      clearInterval(timer);
      for (const { watcher } of watchedRoots.values()) watcher.close();
      unsubscribe();
      for (const watcher of linkedTargets.values()) watcher.close();
      for (const stop of waiting) stop();
    },
  };
}
