/**
 * @module Reads a skill's SKILL.md the one way both processes accept: the file itself (not a link),
 * a regular file (not a FIFO or device), at most MAX_SKILL_MD_BYTES — checked on what was opened.
 * The front lists skills from it; the runner re-reads the declaration from it before every run.
 */
import { readBounded } from './bounded-read.js';
import { closeSync, constants, openSync } from 'node:fs';
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
    // Security: bounds the heap of both processes whatever a bundle ships as its SKILL.md.
    const read = readBounded(fd, MAX_SKILL_MD_BYTES);
    if (!read.ok && read.why === 'not-a-file') return { ok: false, why: 'SKILL.md is not a regular file' };
    if (!read.ok) return { ok: false, why: `SKILL.md is ${read.stat.size} bytes, over the ${MAX_SKILL_MD_BYTES}-byte limit` };
    return { ok: true, text: read.bytes.toString('utf8'), bytes: read.bytes, size: read.bytes.length, mtimeMs: read.stat.mtimeMs };
  } catch (error) {
    return { ok: false, why: `SKILL.md cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
  } finally {
    closeSync(fd);
  }
}
