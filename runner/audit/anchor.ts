/**
 * @module The audit log's anchor, `audit.head` in the state directory: the `seq` and sha256 of the
 * last line the runner wrote, and which log it belongs to. The hash chain shows an edited, inserted
 * or deleted line *between* two lines, but not lines deleted from the end or a log rolled back to an
 * older copy; comparing the log's tail with the anchor does. The anchor is rewritten atomically
 * (temp file, fsync, rename, fsync of the directory) after every write, so it never holds a
 * half-written value. Someone who can write the state directory can rewrite the anchor too: it
 * catches tampering with the log alone, and rollbacks; it is not a signature.
 */
import { closeSync, constants, fsync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';

export const ANCHOR_FILE = 'audit.head';

export interface AuditAnchor {
  v: 1;
  /** Absolute path of the log this anchor belongs to (so a copy elsewhere is not judged by it). */
  log: string;
  seq: number;
  /** sha256 (hex) of the last line written, without its newline. */
  sha256: string;
}

/** One line of a log as the anchor check needs it (line numbers 1-based). */
export interface TailEntry {
  line: number;
  seq: number;
  sha256: string;
}

export type AnchorCheck =
  | { state: 'matched' }
  /** The anchored line is intact and followed by `extra` lines (a stop between log and anchor write). */
  | { state: 'ahead'; extra: number }
  /** The log ends before the anchored seq: lines were deleted from its end (or an older copy restored). */
  | { state: 'truncated'; lastLine: number; lastSeq: number; anchorSeq: number }
  /** The line carrying the anchored seq is not the line the runner wrote: a rewritten or older log. */
  | { state: 'replaced'; line: number; anchorSeq: number }
  /** The anchored seq is outside the lines given (the runner reads only the log's tail). */
  | { state: 'unknown' };

/** Compares a log's last lines with its anchor. `entries` are in file order, ending with the last line. */
export function checkAnchor(entries: readonly TailEntry[], anchor: AuditAnchor): AnchorCheck {
  const last = entries[entries.length - 1];
  if (last === undefined || last.seq < anchor.seq) {
    return { state: 'truncated', lastLine: last?.line ?? 0, lastSeq: last?.seq ?? 0, anchorSeq: anchor.seq };
  }
  const anchored = entries.find((e) => e.seq === anchor.seq);
  if (anchored === undefined) return { state: 'unknown' };
  if (anchored.sha256 !== anchor.sha256) return { state: 'replaced', line: anchored.line, anchorSeq: anchor.seq };
  return last.seq === anchor.seq ? { state: 'matched' } : { state: 'ahead', extra: last.seq - anchor.seq };
}

/** Says in one line what a failed check means, naming the place (for the CLI and the start line). */
export function describeMismatch(check: AnchorCheck): string | undefined {
  if (check.state === 'truncated') {
    return check.lastLine === 0
      ? `the log is empty but the runner last wrote seq ${check.anchorSeq}: it was truncated or replaced`
      : `the log ends at line ${check.lastLine} (seq ${check.lastSeq}) but the runner last wrote seq ${check.anchorSeq}: lines after line ${check.lastLine} were deleted or the log was rolled back`;
  }
  if (check.state === 'replaced')
    return `line ${check.line} (seq ${check.anchorSeq}) is not the line the runner wrote there: the log was rolled back to another copy or rewritten`;
  return undefined;
}

/** Reads an anchor; undefined when there is none, an error string when it cannot be believed. */
export function readAnchor(path: string): AuditAnchor | undefined | { unreadable: string } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    return { unreadable: (error as NodeJS.ErrnoException).code ?? 'read failed' };
  }
  try {
    const a = JSON.parse(text) as Partial<AuditAnchor>;
    if (
      a.v === 1 &&
      typeof a.log === 'string' &&
      Number.isSafeInteger(a.seq) &&
      typeof a.sha256 === 'string' &&
      /^[0-9a-f]{64}$/.test(a.sha256)
    )
      return a as AuditAnchor;
  } catch {
    // fall through
  }
  return { unreadable: 'not an anchor' };
}

/** An anchor written to its temp file and fsynced, not yet in place (see {@link stageAnchor}). */
export interface StagedAnchor {
  tmp: string;
}

/** `fsync(fd)` on the thread pool, then the fd closed (also when the fsync failed). */
function syncThenClose(fd: number): Promise<void> {
  return new Promise((resolve, reject) => {
    fsync(fd, (error) => {
      try {
        closeSync(fd);
      } catch {
        // the fsync's outcome is what counts
      }
      if (error) reject(error);
      else resolve();
    });
  });
}

/**
 * Writes `anchor` to the runner's temp file and fsyncs it, without publishing it: the log calls it
 * once the lines it names are on disk (runner/audit/log.ts), and {@link publishAnchor} renames it
 * into place. The create and the write of its few bytes are synchronous (microseconds, like the
 * lock file's); only the fsync goes to the thread pool.
 * Security: the temp file is created O_EXCL|O_NOFOLLOW in the runner's own 0700 directory (one
 * name per process, so two runners anchoring at once never share one), so a planted link cannot
 * redirect the write; one left by a crash is removed and the create retried.
 */
export function stageAnchor(path: string, anchor: AuditAnchor): Promise<StagedAnchor> {
  const tmp = `${path}.${process.pid}.tmp`;
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  let fd: number;
  try {
    try {
      fd = openSync(tmp, flags, 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      unlinkSync(tmp); // left by a crash (or a failed write) between create and rename
      fd = openSync(tmp, flags, 0o600);
    }
    try {
      const bytes = Buffer.from(`${JSON.stringify(anchor)}\n`);
      for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  } catch (error) {
    return Promise.reject(error);
  }
  return syncThenClose(fd).then(() => ({ tmp }));
}

/**
 * Renames a staged anchor into place (under the log's lock when given) and fsyncs the folder.
 * `onVisible` is called right after the rename: a reader sees the new anchor from there on, and
 * the folder's fsync only makes the rename survive a power cut — a crash before it leaves the
 * previous anchor, the log one batch ahead of it, as a crash between the log's fsync and the
 * rename always did (recorded at the next start).
 */
export async function publishAnchor(
  path: string,
  anchor: AuditAnchor,
  staged: StagedAnchor,
  locked?: <T>(fn: () => T) => Promise<T>,
  onVisible?: () => void,
): Promise<void> {
  const { tmp } = staged;
  if (locked) {
    // Security: runners sharing one log anchor after their own fsyncs, in either order. Under the
    // log's lock an anchor is replaced only by one further along the same log, so it never points
    // back at an earlier line (lines cut from the end would then pass for "appended since").
    const moved = await locked(() => {
      const current = readAnchor(path);
      if (current !== undefined && !('unreadable' in current) && current.log === anchor.log && current.seq >= anchor.seq) {
        unlinkSync(tmp);
        return false;
      }
      renameSync(tmp, path);
      return true;
    });
    if (!moved) return;
  } else {
    renameSync(tmp, path);
  }
  onVisible?.();
  // The rename itself survives a power cut: the folder's fsync, the one pool trip here.
  await syncThenClose(openSync(dirname(path), constants.O_RDONLY | constants.O_DIRECTORY));
}

export function anchorPathIn(stateDir: string): string {
  return join(stateDir, ANCHOR_FILE);
}
