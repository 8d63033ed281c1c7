/**
 * @module Reads a skill's SKILL.md the one way both processes accept: the file itself (not a link),
 * a regular file (not a FIFO or device), at most MAX_SKILL_MD_BYTES — checked on what was opened.
 * The front lists skills from it; the runner re-reads the declaration from it before every run.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_SKILL_MD_BYTES } from './limits.js';

export type SkillMdRead = { ok: true; text: string; bytes: Buffer; size: number; mtimeMs: number } | { ok: false; why: string };

export function readSkillMdFile(realDir: string): SkillMdRead {
  let fd: number;
  try {
    // Security: O_NOFOLLOW, a SKILL.md swapped for a link after discovery is not followed;
    // O_NONBLOCK, one swapped for a FIFO cannot hang the (synchronous) open.
    fd = openSync(join(realDir, 'SKILL.md'), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    return { ok: false, why: `SKILL.md cannot be opened as a regular file (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) return { ok: false, why: 'SKILL.md is not a regular file' };
    // Security: bounds the heap of both processes whatever a bundle ships as its SKILL.md.
    if (info.size > MAX_SKILL_MD_BYTES)
      return { ok: false, why: `SKILL.md is ${info.size} bytes, over the ${MAX_SKILL_MD_BYTES}-byte limit` };
    const bytes = Buffer.allocUnsafe(info.size);
    let got = 0;
    while (got < bytes.length) {
      const read = readSync(fd, bytes, got, bytes.length - got, got);
      if (read === 0) break;
      got += read;
    }
    const read = bytes.subarray(0, got);
    return { ok: true, text: read.toString('utf8'), bytes: read, size: got, mtimeMs: info.mtimeMs };
  } catch (error) {
    return { ok: false, why: `SKILL.md cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
  } finally {
    closeSync(fd);
  }
}
