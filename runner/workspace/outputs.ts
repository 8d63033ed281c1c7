/**
 * @module What a run leaves in its workspace (docs/architecture.md §8, "A run's workspace"): every regular file it
 * created or changed, read back by the runner after the run's processes are gone, up to an output
 * budget; everything else found is listed with the reason it was not read. Nothing is dropped
 * silently: a file past the budget, a link, a FIFO, a device or a socket, and an entry whose name
 * (or whose folder's name) is not valid UTF-8 — shown escaped, `drop\xfe.txt` — is listed with
 * `omitted`, and a walk that stopped early says so in `note`.
 *
 * Security: this code runs as the runner (often root) over a tree the run wrote. It never follows
 * a symbolic link (lstat, O_NOFOLLOW), never opens what is not a regular file (lstat first, then
 * O_NONBLOCK and an fstat of what was opened, which must be the same inode), reads at most the
 * budget in all (a file's apparent size is checked before a byte is read, so a sparse 10 GiB file
 * costs nothing), walks a bounded number of entries, and reads only files the run itself owns with
 * a single link on the workspace's own file system: a hard link to a file outside the workspace
 * (one the run could not read, linked where `fs.protected_hardlinks` is off) has a second link and
 * is not read. The run is over when this runs (its pid namespace is gone, or its uid was reaped),
 * so the tree no longer changes under the walk. At `same-uid` a process the script detached may
 * outlive it and race the walk; that level has no sandbox at all (the script holds the runner's own
 * rights), so the walk's checks there guard against mistakes, not against the script.
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync } from 'node:fs';
import type { Stats } from 'node:fs';
import { joinBytes, nameText, openDirBytes, validName } from '../../shared/byte-names.js';
import type { Collected, OutputFile } from './walk-types.js';
import { MAX_WALK_ENTRIES } from './walk-types.js';
import type { Workspace } from './workspace.js';

export type { Collected, OutputFile } from './walk-types.js';
export { MAX_WALK_ENTRIES };
/** Lowercase hex sha256 (here rather than shared/run-io.ts, whose schemas the walker's bundle would carry). */
const sha256Hex = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** A transform of a file's bytes (runner/secrets/redact.ts's `Redactor`): `push` each chunk, then `end` once. */
export interface StreamFilter {
  push(chunk: Buffer): Uint8Array[];
  end(cut: boolean): Uint8Array[];
  readonly heldBack: number;
}

/**
 * A run's redaction as the walk uses it (runner/secrets/redact.ts `RunRedaction`): a filter per
 * file's bytes, and the names the run chose (file and folder names) redacted as text.
 */
export interface OutputRedaction {
  stream(): StreamFilter | undefined;
  text(text: string): string;
}

/** Bytes read per step when a file goes through a filter (no whole raw copy of it is held). */
const READ_CHUNK_BYTES = 64 * 1024;

/** Folder depth walked at most (a path is at most 1024 characters anyway). */
const MAX_DEPTH = 64;

export const NOT_REGULAR = 'not a regular file';
/** Why an entry whose own name is not valid UTF-8 was not read (its path shows the name escaped: shared/byte-names.ts). */
export const NOT_UTF8_NAME = 'its name is not valid UTF-8 (shown with each such byte as \\xHH and a backslash as \\\\), so it was not read';
/** Why a folder whose own name is not valid UTF-8 is listed: what it holds follows it. */
export const NOT_UTF8_FOLDER =
  'a folder whose name is not valid UTF-8 (shown with each such byte as \\xHH and a backslash as \\\\); what it holds is listed under it, not read';
/** Why an entry inside such a folder was not read. */
export const IN_NOT_UTF8_FOLDER = 'in a folder whose name is not valid UTF-8, so it was not read';

/** Reads exactly what fstat said the file holds (the run is over: it does not grow). */
function readWhole(fd: number, size: number): Buffer {
  const buf = Buffer.alloc(size);
  let at = 0;
  while (at < size) {
    const n = readSync(fd, buf, at, size - at, at);
    if (n === 0) break;
    at += n;
  }
  return at === size ? buf : buf.subarray(0, at);
}

/**
 * Reads `size` bytes through `filter` a chunk at a time: only the filter's output is kept, and the
 * raw bytes' digest (to tell an input returned unchanged) is taken on the way.
 */
function readFiltered(fd: number, size: number, filter: StreamFilter): { bytes: Buffer; rawSha256: string } {
  const pieces: Uint8Array[] = [];
  const hash = createHash('sha256');
  let at = 0;
  while (at < size) {
    // A fresh buffer each step: the filter's output may be views of it.
    const chunk = Buffer.allocUnsafe(Math.min(READ_CHUNK_BYTES, size - at));
    const n = readSync(fd, chunk, 0, chunk.length, at);
    if (n === 0) break;
    at += n;
    hash.update(chunk.subarray(0, n));
    pieces.push(...filter.push(chunk.subarray(0, n)));
  }
  pieces.push(...filter.end(false));
  return { bytes: Buffer.concat(pieces), rawSha256: hash.digest('hex') };
}

/** `bytes`: what is returned (redacted when the run redacts); `rawSha256`: the digest of what is on disk. */
type Opened = { ok: true; bytes: Buffer; rawSha256: string } | { ok: false; omitted: string };

/** Opens one entry that lstat showed as a regular file and reads it, if it is still that file. */
function readRegular(path: Buffer, seen: Stats, ws: Workspace, filter: StreamFilter | undefined): Opened {
  // Security: a second name may sit outside the workspace; a file of another owner was not made by the run.
  if (seen.nlink !== 1) return { ok: false, omitted: 'a hard link (it has other names, maybe outside the workspace), so it was not read' };
  if (seen.uid !== ws.uid) return { ok: false, omitted: 'not owned by the run, so it was not read' };
  if (seen.dev !== ws.dev) return { ok: false, omitted: 'on another file system than the workspace, so it was not read' };
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    return { ok: false, omitted: `could not be opened (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  try {
    const st = fstatSync(fd);
    // Security: what was opened must be the very inode lstat saw (no swap to a FIFO or device).
    if (!st.isFile() || st.ino !== seen.ino || st.dev !== seen.dev) return { ok: false, omitted: NOT_REGULAR };
    const size = Math.min(st.size, seen.size);
    if (filter) return { ok: true, ...readFiltered(fd, size, filter) };
    const bytes = readWhole(fd, size);
    return { ok: true, bytes, rawSha256: sha256Hex(bytes) };
  } finally {
    closeSync(fd);
  }
}

/**
 * Walks the workspace after the run and gives back every file it created or changed, in path
 * order per folder, carrying bytes up to `budgetBytes` in all. With `redact`, every file's bytes
 * and every path are redacted, and the sizes, digests and budget are those of the bytes returned.
 */
export function collectOutputs(
  ws: Workspace,
  budgetBytes: number,
  maxEntries: number = MAX_WALK_ENTRIES,
  redact?: OutputRedaction,
): Collected {
  const files: OutputFile[] = [];
  // Security: a file name is the run's own text: a value it holds must not come back in a path.
  const shown = (relPath: string): string => (redact ? redact.text(relPath) : relPath);
  let root: Stats;
  try {
    root = lstatSync(ws.dir);
  } catch {
    return { files, bytes: 0, note: 'the run removed its workspace folder; there is nothing to return' };
  }
  // Security: the run folder is the run's (at the uid levels): it could have swapped `work` for a link.
  if (!root.isDirectory() || root.ino !== ws.ino || root.dev !== ws.dev)
    return { files, bytes: 0, note: 'the run replaced its workspace folder with something else; nothing was read from it' };
  let left = budgetBytes;
  let walked = 0;
  let stopped: string | undefined;
  // Security: names are read and paths built as bytes (shared/byte-names.ts). Read as UTF-8 text a
  // name that is not valid UTF-8 would not open again (lstat ENOENT: the entry, or a whole folder
  // with what it holds, would vanish from the list) and could read as another entry's name.
  // `readable`: every name on the way here is valid UTF-8 (the path shown is the real one).
  type Folder = { dir: Buffer; rel: string; depth: number; readable: boolean };
  const stack: Folder[] = [{ dir: Buffer.from(ws.dir), rel: '', depth: 0, readable: true }];
  while (stack.length > 0 && stopped === undefined) {
    const { dir, rel, depth, readable } = stack.pop()!;
    const names: Buffer[] = [];
    try {
      const handle = openDirBytes(dir);
      try {
        for (let name = handle.next(); name !== null; name = handle.next()) {
          if (walked >= maxEntries) {
            stopped = `the workspace holds more than ${maxEntries} entries; the walk stopped there and the rest was not examined`;
            break;
          }
          walked += 1;
          names.push(name);
        }
      } finally {
        handle.close();
      }
    } catch (error) {
      files.push({
        path: shown(rel || '.'),
        size: 0,
        omitted: `a folder that could not be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      });
      continue;
    }
    names.sort(Buffer.compare);
    const folders: Folder[] = [];
    for (const name of names) {
      const path = joinBytes(dir, name);
      const valid = validName(name);
      const relPath = rel === '' ? nameText(name) : `${rel}/${nameText(name)}`;
      let st: Stats;
      try {
        st = lstatSync(path);
      } catch (error) {
        // The run is over: an entry listed and gone cannot happen, but it is said rather than skipped.
        files.push({
          path: shown(relPath),
          size: 0,
          omitted: `could not be examined (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
        });
        continue;
      }
      if (st.isDirectory()) {
        if (!valid) files.push({ path: shown(relPath), size: 0, omitted: NOT_UTF8_FOLDER });
        if (depth + 1 >= MAX_DEPTH)
          files.push({ path: shown(relPath), size: 0, omitted: `a folder deeper than ${MAX_DEPTH} levels; not walked` });
        else folders.push({ dir: path, rel: relPath, depth: depth + 1, readable: readable && valid });
        continue;
      }
      // Security: a path shown escaped is not the file's name: its bytes never come back under it.
      if (!valid || !readable) {
        files.push({ path: shown(relPath), size: st.isFile() ? st.size : 0, omitted: valid ? IN_NOT_UTF8_FOLDER : NOT_UTF8_NAME });
        continue;
      }
      if (st.isSymbolicLink()) {
        files.push({ path: shown(relPath), size: st.size, omitted: 'a symbolic link; links are never followed' });
        continue;
      }
      if (!st.isFile()) {
        files.push({ path: shown(relPath), size: 0, omitted: NOT_REGULAR });
        continue;
      }
      const input = ws.inputs.get(relPath);
      // An input of another size has changed; one of the same size is read to compare (inputs are bounded).
      const mayBeInput = input !== undefined && input.size === st.size;
      if (!mayBeInput && st.size > left) {
        files.push({
          path: shown(relPath),
          size: st.size,
          omitted: `past the output budget (${left} of ${budgetBytes} bytes were left; SKILL_MCP_RUN_OUTPUT_FILES_BYTES), so it was not read`,
        });
        continue;
      }
      const read = readRegular(path, st, ws, redact?.stream());
      if (!read.ok) {
        files.push({ path: shown(relPath), size: st.size, omitted: read.omitted });
        continue;
      }
      if (input !== undefined && input.sha256 === read.rawSha256) continue; // an input returned unchanged
      // Security: the digest is of the bytes returned: one of raw bytes that are only a value would let it be guessed offline.
      const sha256 = redact ? sha256Hex(read.bytes) : read.rawSha256;
      if (read.bytes.length > left) {
        files.push({
          path: shown(relPath),
          size: read.bytes.length,
          sha256,
          omitted: `past the output budget (${left} of ${budgetBytes} bytes were left; SKILL_MCP_RUN_OUTPUT_FILES_BYTES)`,
        });
        continue;
      }
      left -= read.bytes.length;
      files.push({ path: shown(relPath), size: read.bytes.length, sha256, bytes: read.bytes });
    }
    // Reversed onto the stack, so folders are walked in name order.
    for (const folder of folders.reverse()) stack.push(folder);
  }
  return { files, bytes: budgetBytes - left, ...(stopped !== undefined ? { note: stopped } : {}) };
}
