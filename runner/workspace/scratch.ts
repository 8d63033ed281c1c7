/**
 * @module The scratch directory: the parent of each run's private HOME/TMPDIR. A run folder is
 * named `run-<runner pid>-<run id>` so that a runner starting after a crash can tell the folders
 * its dead predecessors left (a script's files, maybe large, maybe sensitive) from those of
 * another runner alive on the same scratch directory, and remove only the former.
 *
 * Where it lives by default (`--scratch-dir` unset): never a shared name in the temp folder. Root
 * uses `/run/skill-mcp-scratch` (only root can write in /run, and run uids can traverse it), an
 * ordinary user `<state dir>/scratch` (below their home); when that cannot be claimed, a fresh
 * `$TMPDIR/skill-mcp-scratch-<uid>-<random>`. The start-up log names any folder above it that
 * others may write to (module resolution from a run copy could reach it).
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { unmountAll } from './mount.js';

/**
 * A run's scratch folder, or (`-skill`) its private copy of the skill (runner/workspace/run-copy.ts),
 * or (`-helper`) a run helper's folder or the runner's copy of the helper bundle (runner/egress/helper-link.ts).
 */
const RUN_FOLDER = /^run-([1-9][0-9]{0,9})-([0-9a-f]{16})(?:-skill|-helper)?$/;

/** The folder name of one run of this runner. */
export function runFolderName(runId: string): string {
  return `run-${process.pid}-${runId}`;
}

/** True when no process has that pid (a pid that is ours is a predecessor's: we have no runs yet). */
function isDead(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    // EPERM: it exists under another uid, so it may be a live runner; keep its folders.
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

export interface StaleSweep {
  removed: number;
  /** Stale folders that could not be removed (a same-uid script may have made them unwritable). */
  failed: number;
}

/**
 * Removes the run folders left by runners that are gone. Only names matching the run-folder
 * pattern are touched, and only real directories.
 * Security: never follows a symlink — an entry that is one is left alone, and `rmSync` unlinks
 * links inside a folder rather than descending into them — so a script that planted a link to
 * somewhere else cannot make the next runner delete what it points to. The scratch directory is the
 * runner's own (0711/0700), so no run uid can swap an entry between the check and the removal.
 * `names`: the listing (by default read here; a test passes one that is already out of date).
 */
export function removeStaleRunFolders(scratchDir: string, names: readonly string[] = readdirSync(scratchDir)): StaleSweep {
  const sweep: StaleSweep = { removed: 0, failed: 0 };
  for (const name of names) {
    const match = RUN_FOLDER.exec(name);
    if (!match || !isDead(Number(match[1]))) continue;
    const path = join(scratchDir, name);
    try {
      if (!lstatSync(path).isDirectory()) continue;
      // A root runner's workspace tmpfs (mount.ts) comes off first: nothing of a dead runner stays mounted.
      if (unmountAll(path).left > 0) {
        sweep.failed += 1;
        continue;
      }
      rmSync(path, { recursive: true, force: true });
      sweep.removed += 1;
    } catch (error) {
      // Gone under us: another runner starting at the same moment swept it first (they share root's scratch).
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') sweep.failed += 1;
    }
  }
  return sweep;
}

/**
 * Sandboxes a dead runner left behind: bubblewrap processes whose command line binds one of that
 * runner's run folders here. A sandbox waiting at the go-ahead (runner/sandbox/go-ahead.ts) when its
 * runner died never starts its script and never ends by itself; an outer bubblewrap still alive
 * would hold its run. Both are found by bubblewrap's own argv, which the waiting child still
 * carries (it has not exec'd). Security: only a process whose argv[0] is a bubblewrap and that
 * binds (`--bind`, `--ro-bind`) a run folder of this scratch directory whose runner is gone — a name
 * only runners make, in a folder only their uid (or root) may write — with the uid it had when
 * found, for the caller's pidfd kill to check again.
 */
export function staleSandboxes(scratchDir: string): { pid: number; uid: number }[] {
  const found: { pid: number; uid: number }[] = [];
  const prefix = scratchDir.endsWith('/') ? scratchDir : `${scratchDir}/`;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let argv: string[];
    let status: string;
    try {
      argv = readFileSync(`/proc/${name}/cmdline`, 'latin1').split('\0');
      if (!/(^|\/)bwrap$/.test(argv[0] ?? '')) continue;
      status = readFileSync(`/proc/${name}/status`, 'latin1');
    } catch {
      continue; // exited while we looked
    }
    const stale = argv.some((arg, i) => {
      if (i === 0 || (argv[i - 1] !== '--bind' && argv[i - 1] !== '--ro-bind') || !arg.startsWith(prefix)) return false;
      const match = RUN_FOLDER.exec(arg.slice(prefix.length).split('/')[0]!);
      return match !== null && isDead(Number(match[1]));
    });
    const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
    if (stale && Number.isInteger(uid)) found.push({ pid: Number(name), uid });
  }
  return found;
}

/** Where a default scratch directory was put, and what was passed over on the way. */
export interface ScratchChoice {
  dir: string;
  /** Candidates refused (someone else's, a link, not a directory), each with why: for the start-up log. */
  refused: string[];
  /** The first folder above `dir` that others may write to (a planted node_modules there is found by require()), if any. */
  sharedAncestor?: string;
}

/**
 * Takes `path` as the runner's private directory: made if missing (never through a link), then
 * opened without following links and checked to be a directory the runner owns, its mode set.
 * Security: a folder another local user made first under this name (or a link they planted) is
 * refused, not reused — it could be swapped or read under us — and the caller tries another name.
 */
export function claimPrivateDir(path: string, mode: number): { ok: true } | { ok: false; why: string } {
  try {
    mkdirSync(path, { mode });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EEXIST') return { ok: false, why: `cannot be made (${code ?? 'error'})` };
  }
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (error) {
    return { ok: false, why: `is a link or not a directory (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  try {
    const st = fstatSync(fd);
    if (st.uid !== process.getuid!()) return { ok: false, why: `belongs to uid ${st.uid}, not to the runner` };
    if ((st.mode & 0o7777) !== mode) fchmodSync(fd, mode);
    return { ok: true };
  } finally {
    closeSync(fd);
  }
}

/**
 * The first folder above `dir` (its real path) that a user other than root or the runner owns or
 * may write to, or undefined. Node's require() looks for `node_modules` in every folder above a
 * script, so a run copy below such a folder can load what another user planted there.
 */
export function sharedAncestor(dir: string): string | undefined {
  let at = dirname(realpathSync(dir));
  for (;;) {
    const st = statSync(at);
    if ((st.uid !== 0 && st.uid !== process.getuid!()) || (st.mode & 0o022) !== 0) return at;
    const up = dirname(at);
    if (up === at) return undefined;
    at = up;
  }
}

/**
 * Picks the default scratch directory: the first of `candidates` the runner can claim, else a
 * fresh `skill-mcp-scratch-<uid>-<random>` under `fallbackParent` (made new, so another user's
 * folder is never taken; a name already there is skipped). Never fails because someone else
 * created a folder first.
 */
export function chooseScratchDir(candidates: readonly string[], fallbackParent: string, mode: number): ScratchChoice {
  const refused: string[] = [];
  const chosen = (dir: string): ScratchChoice => {
    const shared = sharedAncestor(dir);
    return { dir, refused, ...(shared !== undefined ? { sharedAncestor: shared } : {}) };
  };
  for (const candidate of candidates) {
    const claim = claimPrivateDir(candidate, mode);
    if (claim.ok) return chosen(candidate);
    refused.push(`${candidate} ${claim.why}`);
  }
  for (let attempt = 0; attempt < 16; attempt++) {
    const dir = join(fallbackParent, `skill-mcp-scratch-${process.getuid!()}-${randomBytes(4).toString('hex')}`);
    try {
      mkdirSync(dir, { mode });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw error;
    }
    const claim = claimPrivateDir(dir, mode);
    if (claim.ok) return chosen(dir);
    refused.push(`${dir} ${claim.why}`);
  }
  throw new Error(`no private scratch directory could be made under ${fallbackParent}`);
}
