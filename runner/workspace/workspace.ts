/**
 * @module A run's workspace (docs/architecture.md §8, "A run's workspace"): a fresh folder `work` inside the run's own
 * folder (runner/workspace/scratch.ts names it, so a crashed runner's successor removes it with the
 * rest), holding the input files the person approved, owned by the run's uid at the uid levels.
 * The script starts in it (bubblewrap binds it read-write at {@link WORKSPACE_MOUNT}); what it
 * creates or changes there is collected after the run (runner/workspace/outputs.ts), and the
 * whole run folder is removed before the result is returned. Its size is capped
 * (runner/workspace/capacity.ts): as root by a tmpfs mounted on it here, otherwise by a watcher.
 */
import {
  chmodSync,
  chownSync,
  closeSync,
  constants,
  fchownSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { joinBytes } from '../../shared/byte-names.js';
import { rm } from 'node:fs/promises';
import type { Inputs, WillRun } from '../../shared/protocol.js';
import type { InputFile } from '../../shared/run-io.js';
import { sha256Hex } from '../../shared/content-digest.js';

/** The workspace's name inside the run folder, and (for the other levels) the HOME beside it. */
export const WORKSPACE_NAME = 'work';
export const HOME_NAME = 'home';

export interface Workspace {
  /** Host path of the workspace folder. */
  dir: string;
  /** Identity of the folder as made, so a run that swapped it for another (or a link) is caught. */
  dev: number;
  ino: number;
  /** The uid the run's files belong to (the run's own, or the runner's). */
  uid: number;
  /** The inputs as written (path → sha256): one returned unchanged is not returned. */
  inputs: Map<string, { size: number; sha256: string }>;
}

/**
 * Makes the workspace and writes the inputs into it. The paths were checked (shared/run-io.ts:
 * path rules, no collisions, no file that is also a folder) before this is called.
 * Security: every folder and file is created fresh (mkdir fails on an existing entry, O_EXCL |
 * O_NOFOLLOW never reuses or follows one), so nothing planted under the run folder's name is
 * written through; everything is handed to the run's uid only once it holds exactly the approved bytes.
 */
export function makeWorkspace(
  runFolder: string,
  uid: number | undefined,
  files: readonly InputFile[],
  mount?: (dir: string) => void,
): Workspace {
  const dir = join(runFolder, WORKSPACE_NAME);
  const owner = uid ?? process.getuid!();
  mkdirSync(dir, { mode: 0o700 });
  // A root runner's size-capped tmpfs (runner/workspace/mount.ts) goes on before any input is written, so they count against it.
  mount?.(dir);
  const made = new Set<string>();
  const folder = (segments: string[]): string => {
    let at = dir;
    for (const segment of segments) {
      at = join(at, segment);
      if (made.has(at)) continue;
      mkdirSync(at, { mode: 0o700 });
      if (uid !== undefined) chownSync(at, uid, uid);
      made.add(at);
    }
    return at;
  };
  const inputs = new Map<string, { size: number; sha256: string }>();
  for (const file of files) {
    const segments = file.path.split('/');
    const name = segments.pop()!;
    const fd = openSync(
      join(folder(segments), name),
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    try {
      for (let at = 0; at < file.bytes.length; ) at += writeSync(fd, file.bytes, at, file.bytes.length - at);
      if (uid !== undefined) fchownSync(fd, uid, uid);
    } finally {
      closeSync(fd);
    }
    inputs.set(file.path, { size: file.bytes.length, sha256: sha256Hex(file.bytes) });
  }
  if (uid !== undefined) chownSync(dir, uid, uid);
  const stat = lstatSync(dir);
  return { dir, dev: stat.dev, ino: stat.ino, uid: owner, inputs };
}

/** Makes the private HOME of a run outside bubblewrap (the uid-sandbox level mounts a tmpfs over it). */
export function makeHome(runFolder: string, uid: number | undefined): string {
  const home = join(runFolder, HOME_NAME);
  mkdirSync(home, { mode: 0o700 });
  if (uid !== undefined) chownSync(home, uid, uid);
  return home;
}

/**
 * Lets the runner descend into every folder of `dir` again: a script running as the runner's own
 * uid may have taken the permissions off a folder it made (chmod 000), which would make the
 * removal fail. Security: lstat only — a link is never followed, so nothing outside is touched.
 */
function reopenFolders(dir: string): void {
  // Names as bytes (shared/byte-names.ts): a folder named with a byte that is not valid UTF-8 is reopened too.
  const stack: Buffer[] = [Buffer.from(dir)];
  while (stack.length > 0) {
    const at = stack.pop()!;
    try {
      if (!lstatSync(at).isDirectory()) continue;
      chmodSync(at, 0o700);
      for (const name of readdirSync(at, { encoding: 'buffer' })) stack.push(joinBytes(at, name));
    } catch {
      // gone already, or not ours to open: the removal below reports what is left
    }
  }
}

/**
 * {@link removeRunFolder} on the thread pool: the event loop stays free meanwhile (for the audit
 * log's fsync and anchor, which a run's answer waits for). Security: rm unlinks links too.
 */
export async function removeRunFolderAsync(dir: string): Promise<boolean> {
  try {
    await rm(dir, { recursive: true, force: true });
    return true;
  } catch {
    return removeRunFolder(dir);
  }
}

/**
 * Removes a run folder (its workspace and HOME). Returns false when something of it is still
 * there afterwards. Security: rmSync unlinks links instead of following them.
 */
export function removeRunFolder(dir: string): boolean {
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch {
    reopenFolders(dir);
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      return false;
    }
  }
  return true;
}

/**
 * The approved run with its inputs bound (shared/protocol.ts `willRun.inputs`), and its cwd shown
 * as what it now is: a fresh workspace, the skill read-only beside it.
 */
export function withInputs(willRun: WillRun, inputs: Inputs | undefined): WillRun {
  const bound: WillRun = { ...willRun, cwd: `a fresh workspace of this run (the skill ${willRun.cwd} is read-only in SKILL_DIR)` };
  if (inputs !== undefined && (inputs.files.length > 0 || inputs.stdin !== undefined)) bound.inputs = inputs;
  return bound;
}
