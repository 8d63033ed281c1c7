/**
 * @module The root runner's size-capped workspace (docs/isolation.md, "The workspace's size"): a
 * tmpfs of `SKILL_MCP_RUN_WORKSPACE_BYTES` and `SKILL_MCP_RUN_WORKSPACE_FILES` inodes mounted on
 * the run's host workspace folder before the inputs are written, so the kernel itself refuses a
 * write past the cap (ENOSPC) — in the run's sandbox (bubblewrap binds the folder, the mount with
 * it), and whatever the run forks. The runner reads the outputs from it after the run, then
 * unmounts it; nothing of a run is left mounted on the host, on any way out, and a runner starting
 * after a crash unmounts what its dead predecessor left (scratch.ts).
 *
 * Why mount(2) and umount2(2) through koffi (shared/libc.ts), not the mount binaries: no
 * process per run, the errno itself, no fstab or mtab in the way, the target used exactly as given
 * (util-linux canonicalises paths, following links), and UMOUNT_NOFOLLOW, which refuses to unmount
 * through a link put in the mount point's place.
 *
 * Options: `nosuid,nodev` (a set-uid file or a device node the run makes means nothing there), not
 * `noexec`: a script may run a helper it wrote (a shell script, a compiled tool), as it may in its
 * /tmp; noexec would not stop an interpreter from running code it wrote anyway.
 */
import { mkdirSync, readFileSync, realpathSync, rmdirSync } from 'node:fs';
import { sep } from 'node:path';
import { koffiWhy, loadLibc } from '../../shared/libc.js';
import type { WorkspaceCap } from './capacity.js';

const MS_NOSUID = 2;
const MS_NODEV = 4;
const MNT_DETACH = 2;
const UMOUNT_NOFOLLOW = 8;

interface Calls {
  mount(source: string, target: string, type: string, flags: number, data: string): number;
  umount2(target: string, flags: number): number;
  errno(): number;
}

let calls: Calls | { why: string } | undefined;

function load(): Calls | { why: string } {
  if (calls !== undefined) return calls;
  const loaded = loadLibc();
  if (!loaded.ok) {
    calls = { why: koffiWhy(loaded.error) };
    return calls;
  }
  const { libc } = loaded;
  try {
    const mount = libc.func('int mount(const char *, const char *, const char *, unsigned long, const char *)');
    const umount2 = libc.func('int umount2(const char *, int)');
    calls = { mount: (...a) => mount(...a), umount2: (...a) => umount2(...a), errno: () => libc.errno() };
  } catch (error) {
    calls = { why: koffiWhy(error) };
  }
  return calls;
}

/** An errno as the error a caller reports by code (`ENOSPC`, `EPERM`…): the runner's own, never a path. */
function failure(call: string, errno: number): NodeJS.ErrnoException {
  const names: Record<number, string> = {
    1: 'EPERM',
    2: 'ENOENT',
    12: 'ENOMEM',
    16: 'EBUSY',
    20: 'ENOTDIR',
    22: 'EINVAL',
    13: 'EACCES',
    19: 'ENODEV',
  };
  const error = new Error(`${call} failed (errno ${errno})`) as NodeJS.ErrnoException;
  error.code = names[errno] ?? `errno-${errno}`;
  error.errno = errno;
  return error;
}

/** The tmpfs options of a run's workspace: its caps (one inode more: the root folder takes one), owned by the run. */
export function tmpfsData(cap: WorkspaceCap, uid: number): string {
  return `size=${cap.bytes},nr_inodes=${cap.files + 1},mode=0700,uid=${uid},gid=${uid}`;
}

/** Mounts the workspace's tmpfs on `dir` (a fresh, empty folder the runner just made). Throws on failure. */
export function mountWorkspace(dir: string, cap: WorkspaceCap, uid: number): void {
  const c = load();
  if ('why' in c) throw Object.assign(new Error(c.why), { code: 'ENOSYS' });
  if (c.mount('skill-mcp-work', dir, 'tmpfs', MS_NOSUID | MS_NODEV, tmpfsData(cap, uid)) !== 0) throw failure('mount', c.errno());
}

/** Undoes the octal escapes of /proc/self/mountinfo (`\040` is a space). */
function unescapeField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(Number.parseInt(oct, 8)));
}

/** Every mount point of this process's namespace, as /proc/self/mountinfo lists them (in mount order). */
export function mountPoints(mountinfo: string = readMountinfo()): string[] {
  const points: string[] = [];
  for (const line of mountinfo.split('\n')) {
    const field = line.split(' ')[4];
    if (field !== undefined) points.push(unescapeField(field));
  }
  return points;
}

function readMountinfo(): string {
  try {
    return readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return '';
  }
}

/** The real path of `dir`, or undefined when it is gone. */
function real(dir: string): string | undefined {
  try {
    return realpathSync(dir);
  } catch {
    return undefined;
  }
}

/** The mount points at or below `dir` (its real path), the last mounted first (so stacked and nested ones come off in order). */
export function mountsAtOrBelow(dir: string, mountinfo?: string): string[] {
  const at = real(dir);
  if (at === undefined) return [];
  return mountPoints(mountinfo)
    .filter((p) => p === at || p.startsWith(at + sep))
    .reverse();
}

export interface Unmounted {
  /** Mounts taken off. */
  unmounted: number;
  /** Of those, how many were busy and were detached lazily (the kernel frees them once unused). */
  lazy: number;
  /** Mounts still there afterwards (never expected as root; the run folder's removal then fails and is audited). */
  left: number;
}

/**
 * Takes every mount at or below `dir` off: a plain unmount, and when that fails (busy: a process
 * of the run that survived its reaping still holds it) a lazy one. Security: UMOUNT_NOFOLLOW — a
 * link put where a mount point was is never followed to unmount something else.
 */
export function unmountAll(dir: string): Unmounted {
  const done: Unmounted = { unmounted: 0, lazy: 0, left: 0 };
  const points = mountsAtOrBelow(dir);
  if (points.length === 0) return done;
  const c = load();
  if ('why' in c) return { ...done, left: points.length };
  for (const point of points) {
    if (c.umount2(point, UMOUNT_NOFOLLOW) === 0) done.unmounted += 1;
    else if (c.umount2(point, UMOUNT_NOFOLLOW | MNT_DETACH) === 0) {
      done.unmounted += 1;
      done.lazy += 1;
    }
  }
  done.left = mountsAtOrBelow(dir).length;
  return done;
}

/**
 * Whether this runner can mount a workspace tmpfs (root, and allowed to mount here: a container
 * may take CAP_SYS_ADMIN away), tried once at start on `probeDir` (a fresh name in the scratch
 * directory, made and removed here), or why not.
 */
export function probeWorkspaceMount(probeDir: string): { ok: true } | { ok: false; why: string } {
  if (process.getuid?.() !== 0) return { ok: false, why: 'the runner is not root, so it cannot mount a tmpfs for the workspace' };
  try {
    mkdirSync(probeDir, { mode: 0o700 });
  } catch (error) {
    return {
      ok: false,
      why: `no probe folder could be made in the scratch directory (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    };
  }
  try {
    mountWorkspace(probeDir, { bytes: 1024 * 1024, files: 16 }, process.getuid!());
    const off = unmountAll(probeDir);
    return off.left === 0 ? { ok: true } : { ok: false, why: 'the probe tmpfs could not be unmounted' };
  } catch (error) {
    return { ok: false, why: `a tmpfs could not be mounted for the workspace (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
  } finally {
    try {
      rmdirSync(probeDir);
    } catch {
      // still mounted (reported above)
    }
  }
}
