/**
 * @module What `skill-mcp pull` accepts from a server before anything touches the disk: skill
 * names, file paths, sizes and digests. Every name and path goes through the same rules as the
 * paths clients send us (shared/paths.ts, docs/architecture.md §5), because here the server is
 * the untrusted side and the paths become files on this machine. Pure functions.
 */
import { checkPathString, isHiddenPath, usableSkillName } from '../../shared/paths.js';
import { DIGEST } from '../../shared/pull-lock.js';

/** SEP-2640's interoperability limits (hosts must accept skills up to them): a skill above is refused. */
export const PULL_MAX_FILES = 512;
export const PULL_MAX_SKILL_BYTES = 16 * 1024 * 1024;
export { DIGEST } from '../../shared/pull-lock.js';

export type Checked<T> = { ok: true; value: T } | { ok: false; why: string };

/** A skill name, which becomes one folder under the target: a plain, visible, single segment. */
export function checkSkillName(name: unknown): Checked<string> {
  if (typeof name !== 'string') return { ok: false, why: 'the skill name is not a string' };
  const path = checkPathString(name);
  // Security: "..", "a/b", "/etc", "%2e%2e", NUL: a name must not place the skill outside the target.
  if (!path.ok) return { ok: false, why: `the skill name ${JSON.stringify(name)} is not usable: ${path.why}` };
  if (path.segments.length !== 1) return { ok: false, why: `the skill name ${JSON.stringify(name)} holds a "/"` };
  // Security: a dot-name could overwrite the lockfile or hide itself from the person.
  const unusable = usableSkillName(name);
  if (unusable) return { ok: false, why: `the skill name ${JSON.stringify(name)} is not usable: ${unusable}` };
  return { ok: true, value: name };
}

/** A file path inside a skill, as the server names it. */
export function checkFilePath(path: unknown): Checked<string> {
  const check = checkPathString(path);
  // Security: traversal, absolute paths, backslashes, escapes, controls: the file would land outside the skill.
  if (!check.ok) return { ok: false, why: `the file path ${JSON.stringify(path)} is refused: ${check.why}` };
  // Security: dotfiles (.git/hooks, .env) are never written, as they are never served.
  if (isHiddenPath(check.segments))
    return { ok: false, why: `the file path ${JSON.stringify(path)} is hidden (a dot-name); hidden files are never pulled` };
  return { ok: true, value: check.segments.join('/') };
}

/**
 * The relative path a URI names under a skill's base URI (`skill://name/`), each segment
 * percent-decoded once. An encoded "/" inside a segment is refused: it would make one file
 * reachable under two spellings.
 */
export function pathUnderBase(uri: string, base: string): Checked<string> {
  if (!uri.startsWith(base)) return { ok: false, why: `${JSON.stringify(uri)} is not inside the skill (${base})` };
  const segments: string[] = [];
  for (const raw of uri.slice(base.length).split('/')) {
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      return { ok: false, why: `${JSON.stringify(uri)} holds a malformed %-escape` };
    }
    if (segment.includes('/')) return { ok: false, why: `${JSON.stringify(uri)} holds an encoded "/"` };
    segments.push(segment);
  }
  return checkFilePath(segments.join('/'));
}

export interface PlannedFile {
  path: string;
  /** The URI to read it by. */
  uri: string;
  size: number;
  digest: string;
}

/**
 * The whole file list of one skill, before any byte is read: digests well-formed, sizes within
 * the caps, SKILL.md present, and no two paths that one disk would merge.
 */
export function checkFileList(files: readonly PlannedFile[]): string | undefined {
  if (files.length > PULL_MAX_FILES) return `it lists ${files.length} files, over the ${PULL_MAX_FILES} a pull accepts`;
  let total = 0;
  const seen = new Map<string, string>();
  for (const file of files) {
    if (!DIGEST.test(file.digest))
      return `"${file.path}" has no sha256 digest (${JSON.stringify(file.digest)}); nothing to check its bytes against`;
    if (!Number.isSafeInteger(file.size) || file.size < 0) return `"${file.path}" has no valid size`;
    total += file.size;
    // Security: caps are checked on the declared sizes before reading, and again on the bytes read.
    if (total > PULL_MAX_SKILL_BYTES)
      return `its files add up to more than ${PULL_MAX_SKILL_BYTES} bytes ("${file.path}" is ${file.size}), over what a pull accepts`;
    // Security: `A.md` and `a.md`, or NFC and NFD spellings, are one file on some disks: one would silently replace the other.
    const folded = file.path.normalize('NFC').toLowerCase();
    const clash = seen.get(folded);
    if (clash !== undefined) return `"${clash}" and "${file.path}" would be one file on a case-insensitive or normalizing disk`;
    seen.set(folded, file.path);
  }
  for (const file of files) {
    // Security: a file and a folder of one name: one of them could not be written, or a write would go through the other.
    for (let i = file.path.indexOf('/'); i >= 0; i = file.path.indexOf('/', i + 1)) {
      const folder = file.path.slice(0, i).normalize('NFC').toLowerCase();
      if (seen.has(folder)) return `"${seen.get(folder)}" is listed as a file and as the folder of "${file.path}"`;
    }
  }
  if (!files.some((f) => f.path === 'SKILL.md')) return 'it lists no SKILL.md';
  return undefined;
}
