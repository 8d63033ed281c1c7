/**
 * @module Killing a process found by a /proc scan without the pid-reuse race: open a pidfd first
 * (it names that one process, whatever happens to the number), check the process it names is still
 * the run uid's, then signal through the pidfd. Through koffi (pidfd_open, pidfd_send_signal: Linux
 * 5.3+); undefined when either is missing, and the caller falls back to `kill -1` as the uid.
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

export function loadPidfdKiller(): PidfdKiller | undefined {
  if (process.platform !== 'linux' || !['x64', 'arm64'].includes(process.arch)) return undefined;
  let syscall: (...args: unknown[]) => number;
  let close: (fd: number) => number;
  const loaded = loadLibc();
  if (!loaded.ok) return undefined;
  try {
    syscall = loaded.libc.func('long syscall(long, ...)');
    close = loaded.libc.func('int close(int)');
  } catch {
    return undefined;
  }
  return {
    kill(pid: number, uid: number): boolean {
      const fd = syscall(PIDFD_OPEN, 'int', pid, 'unsigned int', 0);
      if (fd < 0) return false;
      try {
        // Security: the status read names the pidfd's process only if that process is still alive
        // after it (a live process keeps its number), checked by signal 0 through the pidfd.
        if (!uidsOf(pid).includes(uid)) return false;
        if (syscall(PIDFD_SEND_SIGNAL, 'int', fd, 'int', 0, 'void *', null, 'unsigned int', 0) !== 0) return false;
        return syscall(PIDFD_SEND_SIGNAL, 'int', fd, 'int', SIGKILL, 'void *', null, 'unsigned int', 0) === 0;
      } finally {
        close(fd);
      }
    },
  };
}
