/**
 * @module A skill's content as an approval binds it: the files the front serves (the shared walk:
 * no hidden entries, links only while they stay inside, no special files), each read through the
 * checked open and hashed, and their combined digest (shared/content-digest.ts). The runner also
 * hands a `copy` sink here so the bytes it writes into a run's private folder are the very bytes it
 * hashed; the front calls it without one to compare its view with its runner's.
 */
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, readSync, writeSync } from 'node:fs';
import type { HashWorker } from './hash-worker.js';
import type { ErrorCode } from './errors.js';
import { isSkillMcpError } from './errors.js';
import { combineFileDigests, hashOpenFileAsync } from './content-digest.js';
import type { BeneathOpener } from './open-beneath.js';
import { openInsideSkill } from './open-inside.js';
import { walkSkill } from './skill-walk.js';

/**
 * The most a run's copy of a skill may hold. Security: a run copies the skill, so a skill (or a
 * file growing while it is read) must not be able to fill the runner's disk or stall it hashing.
 */
export const MAX_RUN_CONTENT_BYTES = 64 * 1024 * 1024;
/**
 * Read and hashed this much at a time, each read off the event loop: small enough that hashing one
 * chunk (well under a millisecond) never holds up the process's other requests, large enough that
 * a 64 MiB skill is a few hundred reads.
 */
const CHUNK_BYTES = 256 * 1024;

export interface ContentFile {
  path: string;
  sha256: string;
  size: number;
}

export interface SkillContent {
  /** Sorted by path as the walk sorts them. */
  files: ContentFile[];
  /** {@link combineFileDigests} of `files`. */
  digest: string;
  bytes: number;
}

export type ContentResult = { ok: true; content: SkillContent } | { ok: false; code: ErrorCode; why: string };

/**
 * Where a copy of each file goes: `open` before its bytes (with its mode), then chunks (each
 * awaited before the next read), then `close`. With `fd`, a hashing thread writes the bytes there
 * itself instead.
 */
export interface ContentSink {
  open(path: string, mode: number): { fd?: number; write(chunk: Buffer): Promise<void>; close(): void };
}

export interface ContentLimits {
  maxFiles: number;
  maxDirs: number;
  maxBytes: number;
  /** The process's hashing thread (the runner's: its event loop stays free for its other requests). */
  hasher?: HashWorker;
  /** How files are opened below the skill (tests name one); this process's way when absent. */
  opener?: BeneathOpener;
}

function tooLarge(holds: string, max: number): ContentResult {
  return {
    ok: false,
    code: 'TOO_LARGE',
    why: `the skill holds ${holds} bytes of served files; a run copies and hashes all of them, and takes at most ${max} (move large data out of the skill)`,
  };
}

/**
 * Files up to this size are read, hashed and copied on the calling thread: one read of a few KiB
 * and its hash take microseconds, less than a trip to the hashing thread and back (bench/run-floor.mjs).
 */
const SMALL_FILE_BYTES = 64 * 1024;

/**
 * The whole of a small file, read from offset 0 to its end in one bounded span: its bytes, `over`
 * when it already holds more than `room`, or undefined when it is larger than a small file (read
 * it the usual way; nothing was written). Security: at most SMALL_FILE_BYTES + 1 bytes are read
 * here however the file grows meanwhile, so a growing file cannot hold the event loop.
 */
function readSmallFile(fd: number, scratch: Buffer, room: number): { bytes: Buffer } | { over: true } | undefined {
  const limit = Math.min(SMALL_FILE_BYTES + 1, scratch.length);
  let size = 0;
  for (;;) {
    const got = readSync(fd, scratch, size, limit - size, size);
    if (got === 0) break;
    size += got;
    if (size >= limit) return undefined;
  }
  if (size > room) return { over: true };
  return { bytes: Buffer.from(scratch.subarray(0, size)) };
}

/** Writes all of `bytes` to `fd`. */
function writeAll(fd: number, bytes: Buffer): void {
  for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at);
}

/** Walks, reads and hashes every served file of the skill at `realDir`, copying each into `sink` when given. */
export async function readSkillContent(name: string, realDir: string, limits: ContentLimits, sink?: ContentSink): Promise<ContentResult> {
  const walk = await walkSkill(name, realDir, name, limits);
  // Security: a walk that stopped at a limit would approve (and run) part of the skill only.
  if (walk.limited)
    return {
      ok: false,
      code: 'TOO_LARGE',
      why: `the skill has more than ${limits.maxFiles} files or ${limits.maxDirs} folders; a run needs all of its files (raise SKILL_MCP_MAX_FILES / SKILL_MCP_MAX_DIRS on both processes)`,
    };
  const listed = walk.files.reduce((sum, f) => sum + f.size, 0);
  if (listed > limits.maxBytes) return tooLarge(String(listed), limits.maxBytes);
  const scratch = Buffer.allocUnsafe(CHUNK_BYTES);
  const files: ContentFile[] = [];
  let bytes = 0;
  for (const file of walk.files) {
    let opened: { fd: number };
    try {
      // Security: the same checked open as every read — a link swapped in after the walk, leaving
      // the skill, or a FIFO, is refused rather than copied or followed.
      opened = openInsideSkill(realDir, file.path, limits.opener);
    } catch (error) {
      if (!isSkillMcpError(error)) throw error;
      return { ok: false, code: error.code, why: `${file.path}: ${error.message}` };
    }
    try {
      const out = sink?.open(file.path, fstatSync(opened.fd).mode);
      try {
        const room = limits.maxBytes - bytes;
        const small = readSmallFile(opened.fd, scratch, room);
        if (small && 'bytes' in small && out) await (out.fd !== undefined ? writeAll(out.fd, small.bytes) : out.write(small.bytes));
        const hashed = small
          ? 'over' in small
            ? small
            : { sha256: createHash('sha256').update(small.bytes).digest('hex'), size: small.bytes.length }
          : limits.hasher && (out === undefined || out.fd !== undefined)
            ? await limits.hasher.hash(opened.fd, room, out?.fd)
            : await hashOpenFileAsync(opened.fd, scratch, room, out ? (chunk) => out.write(chunk) : undefined);
        // Security: files that grew after the walk still cannot take the copy past its cap.
        if ('over' in hashed) return tooLarge(`more than ${limits.maxBytes}`, limits.maxBytes);
        files.push({ path: file.path, sha256: hashed.sha256, size: hashed.size });
        bytes += hashed.size;
      } finally {
        out?.close();
      }
    } finally {
      closeSync(opened.fd);
    }
  }
  return { ok: true, content: { files, digest: combineFileDigests(files), bytes } };
}
