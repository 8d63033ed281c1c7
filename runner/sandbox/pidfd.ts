/**
 * @module Killing a process found by a /proc scan without the pid-reuse race: open a pidfd first
 * (it names that one process, whatever happens to the number), check the process it names is still
 * the run uid's, then signal through the pidfd. Through koffi (pidfd_open, pidfd_send_signal: Linux
 * 5.3+); undefined when either is missing, and the caller falls back to `kill -1` as the uid.
 * Also how a run holds its sandbox's pid 1 from the moment bubblewrap names it (`holdChild`).
 */
import { readFileSync } from 'node:fs';
import { loadLibc } from '../../shared/libc.js';

const PIDFD_OPEN = 434;
const PIDFD_SEND_SIGNAL = 424;
const SIGKILL = 9;

export interface PidfdKiller {
  /** SIGKILLs `pid` if it is (still) a process of `uid`; whether it was signalled. */
  kill(pid: number, uid: number): boolean;
}

function uidsOf(pid: number): number[] {
  try {
    const match = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? match.slice(1).map(Number) : [];
  } catch {
    return [];
  }
}

interface Pidfds {
  /** pidfd_open(pid): the fd, or below 0. */
  open(pid: number): number;
  /** pidfd_send_signal(fd, sig): 0, or below 0. */
  signal(fd: number, sig: number): number;
  close(fd: number): void;
}

let pidfds: Pidfds | null | undefined;

/** pidfd_open and pidfd_send_signal through koffi, or null where either is missing. */
function loadPidfds(): Pidfds | null {
  if (pidfds !== undefined) return pidfds;
  pidfds = null;
  if (process.platform !== 'linux' || !['x64', 'arm64'].includes(process.arch)) return pidfds;
  const loaded = loadLibc();
  if (!loaded.ok) return pidfds;
  try {
    const syscall = loaded.libc.func('long syscall(long, ...)');
    const close = loaded.libc.func('int close(int)');
    pidfds = {
      open: (pid) => syscall(PIDFD_OPEN, 'int', pid, 'unsigned int', 0),
      signal: (fd, sig) => syscall(PIDFD_SEND_SIGNAL, 'int', fd, 'int', sig, 'void *', null, 'unsigned int', 0),
      close: (fd) => void close(fd),
    };
  } catch {
    // no syscall() to bind: the callers' fallbacks
  }
  return pidfds;
}

export function loadPidfdKiller(): PidfdKiller | undefined {
  const fds = loadPidfds();
  if (!fds) return undefined;
  return {
    kill(pid: number, uid: number): boolean {
      const fd = fds.open(pid);
      if (fd < 0) return false;
      try {
        // Security: the status read names the pidfd's process only if that process is still alive
        // after it (a live process keeps its number), checked by signal 0 through the pidfd.
        if (!uidsOf(pid).includes(uid)) return false;
        if (fds.signal(fd, 0) !== 0) return false;
        return fds.signal(fd, SIGKILL) === 0;
      } finally {
        fds.close(fd);
      }
    },
  };
}

/** One process held so it can be killed later by what it is, not by a number that may be reused. */
export interface HeldProcess {
  /** SIGKILL, if it still runs (through the pidfd; without one, only while its parent is still `parent`). */
  kill(): void;
  /** Lets go of the pidfd. */
  release(): void;
}

/**
 * Holds `pid` if it is a child of `parent` (read from /proc/PID/stat by `parentOf`). Security: the
 * pidfd is opened first and the parent checked after, so a number reused before the open fails the
 * check, and one reused after it is not the pidfd's process. Where there are no pidfds, the parent is
 * checked again at the kill, and a process whose parent has changed since is left alone.
 */
export function holdChild(pid: number, parent: number, parentOf: (pid: number) => number | undefined): HeldProcess | undefined {
  const fds = loadPidfds();
  if (!fds) {
    if (parentOf(pid) !== parent) return undefined;
    return {
      kill() {
        if (parentOf(pid) !== parent) return;
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone already
        }
      },
      release: () => undefined,
    };
  }
  const fd = fds.open(pid);
  if (fd < 0) return undefined;
  if (parentOf(pid) !== parent) {
    fds.close(fd);
    return undefined;
  }
  let open = true;
  return {
    kill() {
      if (open) fds.signal(fd, SIGKILL);
    },
    release() {
      if (!open) return;
      open = false;
      fds.close(fd);
    },
  };
}
