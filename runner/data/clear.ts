/**
 * @module Emptying a data folder (docs/isolation.md, "Data folders"), for the person's
 * `skill_data_clear` through the runner. The runner opens nothing below the folder: `find` does the
 * walk and the removal, as root under setpriv as uid 65534 in the folder's group (no run's uid,
 * never root), otherwise as the runner's own user. `find` never follows a link (its default, -P):
 * a link, FIFO or socket a script planted is removed as an entry; its target is never touched.
 */
import { spawn } from 'node:child_process';

/** The uid every look inside a folder runs as, as root: no run's, never root. */
export const OUTSIDER_UID = 65534;
/** The most of find's output read: far past what the entry quota allows a folder to hold. */
const MAX_FIND_BYTES = 64 * 1024 * 1024;

/**
 * The command line of a look inside a folder of group `gid`. Security: as root, the root runner
 * must not walk a path a script chose — the walk runs as uid 65534 with the folder's group only,
 * no capability, no new privileges, so a planted link reaches nothing that uid could not.
 */
export function asFolderGroup(gid: number | undefined, argv: string[]): string[] {
  if (process.getuid?.() !== 0) return argv;
  if (gid === undefined || gid <= 0) throw new Error('a root runner clears only folders of a group of their own');
  return ['setpriv', `--reuid=${OUTSIDER_UID}`, `--regid=${gid}`, '--clear-groups', '--no-new-privs', '--', ...argv];
}

export interface Figures {
  bytes: number;
  entries: number;
}

/** Sums find's `%y %s\0` records: every entry, and the sizes of regular files. */
export function sumFound(out: string): Figures {
  const seen = { bytes: 0, entries: 0 };
  for (const record of out.split('\0')) {
    if (record === '') continue;
    const [type, size] = record.split(' ', 2);
    seen.entries++;
    if (type === 'f') seen.bytes += Number(size);
  }
  return seen;
}

function run(argv: string[]): Promise<{ out: string; status: number | null; failed?: string }> {
  return new Promise((resolve) => {
    const [command, ...args] = argv;
    const child = spawn(command!, args, { env: { PATH: '/usr/bin:/bin', LANG: 'C' }, stdio: ['ignore', 'pipe', 'ignore'] });
    const chunks: Buffer[] = [];
    let size = 0;
    child.stdout.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_FIND_BYTES) chunks.push(chunk);
      else child.kill('SIGKILL');
    });
    child.on('error', (error: NodeJS.ErrnoException) => resolve({ out: '', status: null, failed: error.code ?? 'spawn failed' }));
    child.on('close', (status) =>
      resolve({
        out: Buffer.concat(chunks).toString('utf8'),
        status,
        ...(size > MAX_FIND_BYTES ? { failed: 'too many entries' } : {}),
      }),
    );
  });
}

/**
 * Empties `dir` (its group `gid` as root): every entry below it removed without following a link,
 * then what is left measured the same way. Returns what was removed, what is left, and why not all
 * of it went (a folder a script made unreadable to the folder's group, say) — never a host path.
 */
export async function emptyFolder(
  dir: string,
  gid: number | undefined,
): Promise<{ removed: Figures; left: Figures; measured: boolean; note?: string }> {
  const removal = await run(asFolderGroup(gid, ['find', dir, '-mindepth', '1', '-depth', '-printf', '%y %s\\0', '-delete']));
  const after = await run(asFolderGroup(gid, ['find', dir, '-mindepth', '1', '-printf', '%y %s\\0']));
  const seen = sumFound(removal.out);
  const left = sumFound(after.out);
  const removed = { bytes: Math.max(0, seen.bytes - left.bytes), entries: Math.max(0, seen.entries - left.entries) };
  const measured = after.status === 0 && after.failed === undefined;
  const whole = removal.status === 0 && after.status === 0 && left.entries === 0 && removal.failed === undefined;
  return whole
    ? { removed, left, measured }
    : {
        removed,
        left,
        measured,
        note: `not everything could be removed (${removal.failed ?? after.failed ?? `${left.entries} entries left`}; a folder a run made unreadable to the folder's group stays): the operator can look with skill-mcp data du`,
      };
}
