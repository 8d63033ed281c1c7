/**
 * @module Path rules (docs/architecture.md §5). Every path a client names is checked twice: first as a string,
 * then after resolution against the skill's real directory. Each check catches what the other
 * misses: the string check cannot see a symlink planted inside a skill, and the resolved check
 * would accept spellings (`a/../b`, `%2e%2e`) that should never be joined in the first place.
 * Pure functions except {@link resolveInside}, which asks the file system.
 */
import { realpath } from 'node:fs/promises';
import { sep } from 'node:path';
import { MAX_PATH_CHARS, MAX_SEGMENT_BYTES } from './limits.js';

export type PathCheck = { ok: true; segments: string[] } | { ok: false; why: string };

/** Characters no served name may hold: controls (incl. NUL) and DEL. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is what this is for
const CONTROL_CHARS = /[\u0000-\u001f\u007f]/;

/**
 * The string check: a relative path of plain segments. Runs before any file-system call.
 */
export function checkPathString(path: unknown): PathCheck {
  if (typeof path !== 'string') return { ok: false, why: 'the path must be a string' };
  if (path.length === 0) return { ok: false, why: 'the path is empty' };
  // Security: bounds the work of every later step; no real skill file needs a longer path.
  if (path.length > MAX_PATH_CHARS) return { ok: false, why: `the path is longer than ${MAX_PATH_CHARS} characters` };
  // Security: NUL truncates paths in C APIs; other controls spoof what a person reads.
  if (CONTROL_CHARS.test(path)) return { ok: false, why: 'the path holds a control character (NUL included)' };
  // Security: absolute paths would escape the skill before any join.
  if (path.startsWith('/')) return { ok: false, why: 'the path must be relative to the skill (no leading "/")' };
  // Security: a backslash is a separator on Windows and a traversal spelling (`..\\x`) elsewhere.
  if (path.includes('\\')) return { ok: false, why: 'the path must not hold a backslash; use "/"' };
  // Security: `%2e%2e` and friends decode to traversal in some layer we do not control.
  if (path.includes('%')) return { ok: false, why: 'the path must not hold "%" escapes; name the file as it is on disk' };
  const segments = path.split('/');
  for (const segment of segments) {
    // Security: an empty segment (`a//b`, trailing `/`) makes one file reachable by many names.
    if (segment === '') return { ok: false, why: 'the path has an empty segment ("//" or a trailing "/")' };
    // Security: the classic traversal, and `.` which aliases a directory.
    if (segment === '.' || segment === '..') return { ok: false, why: 'the path must not hold "." or ".." segments' };
    if (Buffer.byteLength(segment) > MAX_SEGMENT_BYTES)
      return { ok: false, why: `a path segment is longer than ${MAX_SEGMENT_BYTES} bytes` };
  }
  return { ok: true, segments };
}

/** Hidden entries (`.git`, `.env`, any dot-name) are never served, at any depth. */
export function isHiddenPath(segments: readonly string[]): boolean {
  return segments.some((segment) => segment.startsWith('.'));
}

/** True when `child` is `dir` itself or below it. Both must be real, absolute paths. */
export function isInside(dir: string, child: string): boolean {
  // Security: compare with a trailing separator so `/skills/foo-evil` is not inside `/skills/foo`.
  return child === dir || child.startsWith(dir.endsWith(sep) ? dir : dir + sep);
}

export type ResolveResult = { ok: true; real: string } | { ok: false; code: 'NOT_FOUND' | 'OUTSIDE_SKILL'; why: string };

/**
 * The resolution check: the realpath of `skillRealDir/relative` must stay inside the skill's
 * real directory. `skillRealDir` must itself be a realpath. The caller still opens the result and
 * checks what it opened (regular file), so a swap after this call cannot smuggle in a FIFO.
 */
export async function resolveInside(skillRealDir: string, segments: readonly string[]): Promise<ResolveResult> {
  let real: string;
  try {
    real = await realpath(skillRealDir + sep + segments.join(sep));
  } catch {
    return { ok: false, code: 'NOT_FOUND', why: 'no such file in this skill' };
  }
  // Security: a symlink inside the skill pointing at /etc/passwd or a neighbour skill.
  if (!isInside(skillRealDir, real) || real === skillRealDir) {
    return { ok: false, code: 'OUTSIDE_SKILL', why: 'the path resolves outside the skill (symlink escape)' };
  }
  return { ok: true, real };
}

/** Name rule of the SEP-2640 namespace: lowercase letters, digits, single hyphens, ≤ 64. */
export const PUBLISHABLE_NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/;

/**
 * Whether a directory name can be served at all (by the tools, under that name). Stricter names
 * are needed only for publication in `skill://`; this one only refuses what the tools cannot carry.
 */
export function usableSkillName(name: string): string | undefined {
  if (name.length === 0) return 'the name is empty';
  if (name.startsWith('.')) return 'hidden directories are not served';
  if (Buffer.byteLength(name) > MAX_SEGMENT_BYTES) return `the name is longer than ${MAX_SEGMENT_BYTES} bytes`;
  if (CONTROL_CHARS.test(name)) return 'the name holds a control character';
  if (name.includes('\\') || name.includes('%') || name.includes('/')) return 'the name holds "\\", "%" or "/"';
  if (name.includes('\uFFFD')) return 'the name is not valid UTF-8';
  return undefined;
}
