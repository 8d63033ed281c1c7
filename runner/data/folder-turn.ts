/**
 * @module A data folder's turn between processes (docs/isolation.md, "Data folders"): the runner's
 * own queue (runner/data/locks.ts) serialises its runs, but the operator's `skill-mcp data rm` and
 * `import`, and a second runner on the same state folder, are other processes. While a run (or a
 * clear) changes a folder, a file `<base>/.turns/<folder>` holds `<pid> <nonce>`, created with
 * O_EXCL, removed by its holder only. A holder that died (its pid gone), or a turn older than the
 * longest a run can hold it (SHARED_TURN_MS), is broken, so a killed runner never blocks a folder
 * for good. Nothing here waits: a caller that finds the turn taken says BUSY, or polls.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, openSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { breakLock, pidAlive, readHeld } from '../file-lock.js';
import { ensurePrivateDir, readNoFollow } from '../state.js';
import { SHARED_TURN_MS } from '../../shared/limits.js';

export type FolderTurn = { ok: true; give: () => void } | { ok: false; holder: number };

function turnPath(base: string, key: readonly string[]): string {
  // One name per folder (encodeURIComponent is one-to-one), as the usage records are named.
  return join(base, '.turns', encodeURIComponent(key.join('/')));
}

/**
 * Takes the folder's turn now, or says which live process holds it. Security: created O_EXCL |
 * O_NOFOLLOW in a folder of the runner's own (0700), so two processes never both hold it and no
 * link planted there is written through; given back only while it still holds this take's nonce.
 */
export function takeFolderTurn(base: string, key: readonly string[]): FolderTurn {
  const dir = join(base, '.turns');
  ensurePrivateDir(dir, 0o700);
  const path = turnPath(base, key);
  const content = `${process.pid} ${randomBytes(8).toString('hex')}`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
      try {
        writeSync(fd, content);
      } finally {
        closeSync(fd);
      }
      return {
        ok: true,
        give: () => {
          try {
            if (readNoFollow(path) === content) unlinkSync(path);
          } catch {
            // Gone already (broken as stale): nothing of ours to remove.
          }
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const held = readHeld(path);
    if (held === undefined) continue; // given back meanwhile
    // A turn being written this instant holds no pid yet: taken, not stale.
    if (held.content === '' && held.ageMs < SHARED_TURN_MS) return { ok: false, holder: 0 };
    const stale = held.ageMs > SHARED_TURN_MS || !Number.isSafeInteger(held.pid) || !pidAlive(held.pid);
    if (!stale) return { ok: false, holder: held.pid };
    breakLock(path, held.content, `${path}.stale-${randomBytes(4).toString('hex')}`);
  }
  return { ok: false, holder: 0 };
}
