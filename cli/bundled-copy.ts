/**
 * @module The bundled skills for a front started as root. The front drops to an unprivileged uid
 * (61183 by default) before it reads anything, and a package cloned or installed under a 0700
 * home (`/root`) is out of that uid's reach: the quick start would serve no skill at all. The
 * bundled skills are the package's own files, so the launcher — still root — copies them into the
 * instance's private folder, readable by everyone and writable by root alone, and both processes
 * serve that copy (through `SKILLS_DIR`, so front and runner agree on the roots). Only for the
 * unconfigured default: a folder the owner configured is never copied, it gets the explanation
 * of which folder stops the uid (shared/unreadable-root.ts).
 */
import { chmodSync, copyFileSync, lstatSync, mkdirSync, readdirSync, statSync, type Stats } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** Whether `uid`/`gid` may search every folder down to `path` and list `path` (mode bits; ACLs are not read). */
export function reachableBy(path: string, uid: number, gid: number): boolean {
  const folders: string[] = [];
  for (let dir = resolve(path); ; dir = dirname(dir)) {
    folders.unshift(dir);
    if (dirname(dir) === dir) break;
  }
  return folders.every((dir, index) => {
    let info: Stats;
    try {
      info = statSync(dir);
    } catch {
      return false;
    }
    const need = index === folders.length - 1 ? 0o5 : 0o1;
    const bits = info.uid === uid ? (info.mode >> 6) & 7 : info.gid === gid ? (info.mode >> 3) & 7 : info.mode & 7;
    return (bits & need) === need;
  });
}

/**
 * Copies `from` into `to` (made here): folders 0755, files 0644 (0755 when executable by their
 * owner), owned by the caller. Security: links and anything but regular files and folders are
 * skipped, so the copy holds nothing a link could point out of the package at.
 */
export function copyBundled(from: string, to: string): number {
  let files = 0;
  const walk = (src: string, dst: string): void => {
    mkdirSync(dst, { mode: 0o755 });
    chmodSync(dst, 0o755);
    for (const name of readdirSync(src)) {
      const info = lstatSync(join(src, name));
      if (info.isDirectory()) walk(join(src, name), join(dst, name));
      else if (info.isFile()) {
        copyFileSync(join(src, name), join(dst, name));
        chmodSync(join(dst, name), info.mode & 0o100 ? 0o755 : 0o644);
        files++;
      }
    }
  };
  walk(from, to);
  return files;
}
