/**
 * @module The one place koffi and libc.so.6 are loaded (Node has no binding for the few syscalls
 * we need: openat2, SO_PEERCRED, mount, keyctl, pidfds). koffi is an optional dependency with a
 * prebuilt addon, kept external to the bundles and found from the bundle's own place; loaded at the
 * first ask and kept for the life of the process, as a handle or as the error it failed with. Each
 * caller keeps its own fallback: this module only says whether libc is there.
 * (runner/sandbox/launch.ts, a standalone bundle, loads koffi on its own.)
 */
import { createRequire } from 'node:module';
import { constants as osConstants } from 'node:os';

export interface Libc {
  /** A libc function by its C prototype (koffi's syntax); throws when it cannot be bound. */
  func(signature: string): (...args: unknown[]) => number;
  /** The errno the last call through koffi left. */
  errno(): number;
}

export type LibcLoad = { ok: true; libc: Libc } | { ok: false; error: unknown };

interface Koffi {
  load(name: string): { func(signature: string): (...args: unknown[]) => number };
  errno(): number;
}

// A fact about this install, the same for the life of the process: found once.
let loaded: LibcLoad | undefined;

/** libc through koffi, or the error loading either threw. */
export function loadLibc(): LibcLoad {
  if (loaded !== undefined) return loaded;
  try {
    const koffi = createRequire(import.meta.url)('koffi') as Koffi;
    const lib = koffi.load('libc.so.6');
    loaded = { ok: true, libc: { func: (signature) => lib.func(signature), errno: () => koffi.errno() } };
  } catch (error) {
    loaded = { ok: false, error };
  }
  return loaded;
}

/** Why koffi or a function through it is not there, as callers report it: the error's first line. */
export function koffiWhy(error: unknown): string {
  return `koffi could not be loaded (${(error as Error).message.split('\n')[0]})`;
}

const errnoNames = new Map<number, string>(Object.entries(osConstants.errno).map(([name, n]) => [n, name]));

/** An errno a libc call left, by name (`EPERM`), for messages. */
export function errnoName(errno: number): string {
  return errnoNames.get(errno) ?? `errno ${errno}`;
}
