/**
 * System V IPC a run uid leaves behind, at the `uid` level (no ipc namespace): the runner removes
 * every segment, queue and semaphore set of the uid after the run. The parser is tested on the
 * kernel's own table format; the removal on real objects made by another uid (root only).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ipcIdsOf, removeIpcOf } from '../../runner/sandbox/sysv-ipc.js';
import { isRoot } from './harness.js';

const SHM = `       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap
 1234567890         7   600               1048576  100   0      0   61200 61200 61200 61200          0          0 1700000000                     0                     0
          0         8   600               1048576  101   0      0   1000  1000  61200 61200          0          0 1700000000                     0                     0
          0         9   600               1048576  102   0      0   1000  1000  1000  1000           0          0 1700000000                     0                     0
`;

describe('SysV IPC left by a run uid', () => {
  it('finds the objects the uid owns or created, and no other', () => {
    expect(ipcIdsOf(SHM, 'shm', 61200)).toEqual([7, 8]);
    expect(ipcIdsOf(SHM, 'shm', 4242)).toEqual([]);
    expect(ipcIdsOf('garbage', 'shm', 61200)).toEqual([]);
  });

  it.skipIf(!isRoot)(
    "a 1 MiB segment and a message queue made by uid 61190 are removed, another uid's are kept (root only: needs other uids)",
    async () => {
      const make = (uid: number, flag: string): number =>
        Number(
          /(\d+)\s*$/.exec(
            execFileSync(
              'setpriv',
              [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', 'ipcmk', flag, ...(flag === '-M' ? ['1048576'] : [])],
              { encoding: 'utf8' },
            ).trim(),
          )![1],
        );
      const shm = make(61190, '-M');
      const queue = make(61190, '-Q');
      const kept = make(61191, '-M');
      try {
        expect(await removeIpcOf(61190, '/usr/bin/ipcrm')).toBe(2);
        const table = readFileSync('/proc/sysvipc/shm', 'utf8');
        expect(ipcIdsOf(table, 'shm', 61190)).toEqual([]);
        expect(ipcIdsOf(readFileSync('/proc/sysvipc/msg', 'utf8'), 'msg', 61190)).toEqual([]);
        expect(ipcIdsOf(table, 'shm', 61191)).toContain(kept);
        expect(shm).not.toBe(kept);
        expect(queue).toBeGreaterThanOrEqual(0);
      } finally {
        execFileSync('ipcrm', ['-m', String(kept)]);
      }
    },
  );
});
