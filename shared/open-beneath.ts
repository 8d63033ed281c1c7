/**
 * @module How a path below a skill's folder is opened without ever following a link
 * (docs/isolation.md, "Root reads"). Two ways, the same contract: given the open folder and the
 * resolved path's components, return a read-only descriptor of exactly that name, or throw a Node
 * style error whose `code` says why (ELOOP/ENOTDIR: a link on the way; EXDEV: the path would leave
 * the folder or cross a mount).
 *
 * - `openat2`: Linux 5.6+, through the koffi FFI (Node has no binding). One syscall; the kernel
 *   itself refuses every link, every `..` above the folder, absolute paths and mount crossings
 *   during the walk, so nothing swapped in anywhere on the way is followed.
 * - `per-component`: everywhere else (older kernel, a syscall filter that denies openat2, no
 *   koffi): each component opened with O_NOFOLLOW relative to the folder before it.
 *
 * The callers check what was opened after either (open-inside.ts: type, place, owner, link count).
 */
import { closeSync, constants, openSync } from 'node:fs';
import { getSystemErrorName } from 'node:util';
import { koffiWhy, loadLibc } from './libc.js';
import type { Libc } from './libc.js';

export interface BeneathOpener {
  readonly mechanism: 'openat2' | 'per-component';
  /** Opens the skill's folder (an absolute, resolved path), the root every later open stays below. */
  openRoot(realDir: string): number;
  /** Opens `segments` (plain names, no `.`/`..`) below `rootFd` for reading; the caller closes it. */
  open(rootFd: number, segments: readonly string[]): number;
}

const FILE_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY | constants.O_NOFOLLOW;
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/**
 * Each component opened relative to the descriptor of the folder before it, through
 * `/proc/self/fd/<dir fd>/<name>`. Security: O_NOFOLLOW on every component (a folder or file
 * swapped for a link fails with ELOOP or ENOTDIR), and no rename of a folder above can redirect
 * the walk, since each step starts from an open descriptor, not a path.
 */
export const perComponentOpener: BeneathOpener = {
  mechanism: 'per-component',
  openRoot: (realDir) => openSync(realDir, DIR_FLAGS),
  open(rootFd, segments) {
    let dirFd = rootFd;
    try {
      for (const [i, name] of segments.entries()) {
        const last = i === segments.length - 1;
        const fd = openSync(`/proc/self/fd/${dirFd}/${name}`, last ? FILE_FLAGS : DIR_FLAGS);
        if (dirFd !== rootFd) closeSync(dirFd);
        dirFd = fd;
      }
      return dirFd;
    } catch (error) {
      if (dirFd !== rootFd) closeSync(dirFd);
      throw error;
    }
  },
};

/** openat2's number in the generic table, which x86_64 and aarch64 both use for it. */
const SYS_OPENAT2: Partial<Record<string, number>> = { x64: 437, arm64: 437 };
/** Not in fs.constants; the same on x86_64 and aarch64 (asm-generic/fcntl.h). */
const O_PATH = 0o10000000;
const O_CLOEXEC = 0o2000000;
const AT_FDCWD = -100;

// RESOLVE_* from linux/openat2.h. Each one closes a way out of the skill's folder:
/** A `..` above the folder, an absolute path, or a link whose target lies outside: EXDEV. */
const RESOLVE_BENEATH = 0x08;
/** Any symbolic link anywhere on the path, even one that stays inside: ELOOP (the walk serves links as their targets, already resolved). */
const RESOLVE_NO_SYMLINKS = 0x04;
/** /proc "magic links" (/proc/self/fd/N, /proc/PID/root) that jump to any open file: ELOOP. Implied by NO_SYMLINKS; said twice on purpose. */
const RESOLVE_NO_MAGICLINKS = 0x02;
/** A mount point inside the skill (a FUSE mount its owner made, a bind mount of another folder): EXDEV. */
const RESOLVE_NO_XDEV = 0x01;
const RESOLVE = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;

/**
 * Security: O_CLOEXEC because the raw syscall does not add it as Node's own opens do: a root
 * runner's descriptor on a skill file must never be inherited by the script it then spawns.
 * O_NONBLOCK and O_NOCTTY: a FIFO or terminal planted in the skill never blocks or attaches (the
 * caller refuses anything but a regular file after the open).
 */
const OPEN2_FILE_FLAGS = FILE_FLAGS | O_CLOEXEC;
/** The root is a handle on the folder only (O_PATH: no read of it), never a link to one. */
const OPEN2_ROOT_FLAGS = O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW;

type Syscall = (...args: unknown[]) => number;

function errnoError(errno: number, path: string): NodeJS.ErrnoException {
  const code = getSystemErrorName(-errno);
  return Object.assign(new Error(`${code}: openat2 refused or failed, '${path}'`), { errno: -errno, code, syscall: 'openat2' });
}

/** One openat2 call; the fd, or minus errno. */
function callOpenat2(syscall: Syscall, libc: Libc, nr: number, dirFd: number, path: string, flags: number, resolve: number): number {
  // struct open_how { u64 flags; u64 mode; u64 resolve; } in native byte order.
  const how = new BigUint64Array([BigInt(flags), 0n, BigInt(resolve)]);
  const fd = syscall(nr, 'int', dirFd, 'const char *', path, 'void *', how, 'size_t', how.byteLength);
  return fd >= 0 ? fd : -libc.errno();
}

/**
 * The openat2 opener, or why this process cannot have it. Probes once with the very flags the
 * reads use: ENOSYS (a kernel before 5.6) or EPERM (a seccomp profile that denies it) mean the
 * per-component way is used instead; after a good probe, every failure is an answer (a refusal),
 * never a reason to fall back.
 */
export function loadOpenat2(): BeneathOpener | { why: string } {
  const nr = SYS_OPENAT2[process.arch];
  if (process.platform !== 'linux' || nr === undefined)
    return { why: `openat2 is Linux on x86_64 or aarch64 only (this is ${process.platform}/${process.arch})` };
  const loaded = loadLibc();
  if (!loaded.ok) return { why: koffiWhy(loaded.error) };
  const { libc } = loaded;
  let syscall: Syscall;
  try {
    syscall = libc.func('long syscall(long, ...)');
  } catch (error) {
    return { why: koffiWhy(error) };
  }
  const probe = callOpenat2(syscall, libc, nr, AT_FDCWD, '.', O_PATH | O_CLOEXEC | constants.O_DIRECTORY, RESOLVE);
  if (probe < 0) {
    const code = getSystemErrorName(probe);
    return {
      why: `openat2 is not usable here (${code}${code === 'ENOSYS' ? ': Linux before 5.6' : code === 'EPERM' ? ': a syscall filter denies it' : ''})`,
    };
  }
  closeSync(probe);
  return {
    mechanism: 'openat2',
    openRoot: (realDir) => openSync(realDir, OPEN2_ROOT_FLAGS),
    open(rootFd, segments) {
      const path = segments.join('/');
      // Security: a NUL would end the C string early and open a shorter name (the string checks
      // refuse it long before; this is the FFI boundary's own guard).
      if (path.includes('\0') || segments.length === 0)
        throw Object.assign(new Error(`EINVAL: not a path below the folder, '${path}'`), { code: 'EINVAL' });
      const fd = callOpenat2(syscall, libc, nr, rootFd, path, OPEN2_FILE_FLAGS, RESOLVE);
      if (fd < 0) throw errnoError(-fd, path);
      return fd;
    },
  };
}

/** What this process uses for root reads, and why not openat2 when it does not. */
export interface RootReads {
  opener: BeneathOpener;
  fallbackWhy?: string;
}

// The one module-level cache: a fact about this kernel and install, found at the first read and
// the same for the life of the process (the probe is one syscall and a koffi load).
let found: RootReads | undefined;

/** The opener every skill read uses unless told otherwise: openat2 where it works, else per component. */
export function rootReads(): RootReads {
  if (found === undefined) {
    const loaded = loadOpenat2();
    found = 'why' in loaded ? { opener: perComponentOpener, fallbackWhy: loaded.why } : { opener: loaded };
  }
  return found;
}
