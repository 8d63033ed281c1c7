/**
 * @module System V IPC a run uid leaves behind. Shared memory segments, message queues and
 * semaphore sets outlive the process that made them; without an ipc namespace (the `uid` level)
 * the next run given the same uid could read them. A root runner removes every object owned by
 * the run's uid once the run is over. The namespace levels need none of this: their objects go
 * with the namespace.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';

export type IpcKind = 'shm' | 'msg' | 'sem';
const IPCRM_FLAG: Record<IpcKind, string> = { shm: '-m', msg: '-q', sem: '-s' };
const ID_COLUMN: Record<IpcKind, string> = { shm: 'shmid', msg: 'msqid', sem: 'semid' };

/** Ids of the objects owned (or created) by `uid` in one `/proc/sysvipc/<kind>` table. */
export function ipcIdsOf(table: string, kind: IpcKind, uid: number): number[] {
  const [header, ...rows] = table.split('\n');
  const columns = (header ?? '').trim().split(/\s+/);
  const idAt = columns.indexOf(ID_COLUMN[kind]);
  const owners = ['uid', 'cuid'].map((name) => columns.indexOf(name)).filter((i) => i >= 0);
  if (idAt < 0 || owners.length === 0) return [];
  const ids: number[] = [];
  for (const row of rows) {
    const cells = row.trim().split(/\s+/);
    if (cells.length <= idAt) continue;
    if (owners.some((i) => Number(cells[i]) === uid)) ids.push(Number(cells[idAt]));
  }
  return ids;
}

/** Removes every SysV IPC object of `uid`; returns how many were removed. */
export async function removeIpcOf(uid: number, ipcrm: string): Promise<number> {
  let removed = 0;
  for (const kind of ['shm', 'msg', 'sem'] as const) {
    let table: string;
    try {
      table = readFileSync(`/proc/sysvipc/${kind}`, 'utf8');
    } catch {
      continue; // no SysV IPC on this kernel
    }
    for (const id of ipcIdsOf(table, kind, uid)) {
      const ok = await new Promise<boolean>((resolve) =>
        execFile(ipcrm, [IPCRM_FLAG[kind], String(id)], { timeout: 2000 }, (error) => resolve(!error)),
      );
      if (ok) removed += 1;
    }
  }
  return removed;
}
