/**
 * @module Why a configured skill folder cannot be read, said so someone can fix it: which uid
 * tried, and which folder on the way stopped it. The usual case: started as root with
 * `SKILLS_DIR=~/my-skills`, the front reads as uid 61183, and `/root` (0700) lets it no further.
 * What the model sees names places relative to the root's folder name ("my-skills/.." is the
 * folder above it: docs/architecture.md §9); the absolute path, mode and owner go to the host's
 * stderr only.
 *
 * Why the front does not keep descriptors of its roots opened while still root: every path check
 * it makes (docs/architecture.md §5) resolves with realpath(3), which walks the absolute path from
 * `/` again and needs search permission on each folder above the root, descriptor or not; Node
 * has no openat/O_PATH walk to replace that with.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';

export interface UnreadableRoot {
  /** For problems (the model reads them): no absolute host path. */
  forModel: string;
  /** For stderr (the owner reads it): the absolute folder, its mode and owner. */
  forHost: string;
}

function allowed(path: string, mode: number): boolean {
  try {
    accessSync(path, mode);
    return true;
  } catch {
    return false;
  }
}

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return true;
  }
}

function describeFolder(path: string): string {
  try {
    const info = statSync(path);
    return `mode ${(info.mode & 0o7777).toString(8).padStart(4, '0')}, owner uid ${info.uid}`;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? 'cannot be inspected';
  }
}

/**
 * Explains why `root` cannot be read by this process (its uid, the first folder on the way it may
 * not search, or the root itself); undefined when the path is readable or simply missing. `label`:
 * how the model knows this root (its configured folder name).
 */
export function explainUnreadableRoot(root: string, label = basename(resolve(root)) || 'root'): UnreadableRoot | undefined {
  const path = resolve(root);
  const uid = process.getuid?.() ?? -1;
  const who = `uid ${uid}, the uid this server reads files as (started as root it reads as SKILL_MCP_FRONT_UID, default 61183)`;
  const above: string[] = [];
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    above.unshift(dir);
    if (dirname(dir) === dir) break;
  }
  for (const [index, dir] of above.entries()) {
    if (allowed(dir, constants.X_OK)) continue;
    const levels = above.length - index;
    const relative = `${label}${'/..'.repeat(levels)}`;
    return {
      forModel: `the configured root "${label}" cannot be read by ${who}: the folder ${levels === 1 ? 'just above it' : `${levels} levels above it`} ("${relative}") does not let that uid through. Move the skills to a folder that uid can reach, or give it search permission on that folder (setfacl -m u:${uid}:x, or chmod o+x); the server's stderr names the folder`,
      forHost: `the skills folder ${path} cannot be read by uid ${uid}: ${dir} (${describeFolder(dir)}) does not let uid ${uid} through. Move the skills somewhere uid ${uid} can reach (then chmod -R a+rX them), or let it through: setfacl -m u:${uid}:x ${dir}`,
    };
  }
  if (!allowed(path, constants.F_OK)) return undefined;
  // A file is not unreadable, it is the wrong thing: settings.ts rootProblems says so.
  if (!isFolder(path)) return undefined;
  if (allowed(path, constants.R_OK | constants.X_OK)) return undefined;
  return {
    forModel: `the configured root "${label}" cannot be read by ${who}: the folder itself does not let that uid list it. Make it readable (chmod -R a+rX) or move the skills; the server's stderr says more`,
    forHost: `the skills folder ${path} (${describeFolder(path)}) cannot be listed by uid ${uid}: chmod -R a+rX ${path}, or move the skills somewhere uid ${uid} can read`,
  };
}
