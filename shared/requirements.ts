/**
 * @module The declaration's `requirements` key: the packages a skill's scripts import, which the
 * operator installs ahead of time (`skill-mcp deps install`, runner/deps/). Parsed strictly,
 * like the rest of the declaration: a malformed value rejects the whole block, unknown keys are
 * ignored but named.
 *
 *     requirements:
 *       python: requirements.txt      # a file inside the skill, or a list of requirement lines
 *       node: package.json            # a package.json inside the skill, package-lock.json beside it
 *       source-builds: false          # pip may build sdists only when true (default: wheels only)
 *
 * A requirement line is a package name with optional extras, version specifiers, an environment
 * marker and `--hash=` options — nothing else. Pure: text in, a verdict out.
 */
import type { JsonValue } from './frontmatter.js';
import { checkPathString, isHiddenPath } from './paths.js';

/** At most this many requirement lines (a skill's direct dependencies, not a lockfile of the world). */
export const MAX_REQUIREMENT_LINES = 500;
/** One logical line (continuations joined), hashes included: 30 sha256 hashes fit. */
export const MAX_REQUIREMENT_LINE_CHARS = 4096;
/** A requirements file inside the skill. */
export const MAX_REQUIREMENTS_FILE_BYTES = 256 * 1024;

export interface PythonRequirements {
  /** Where the lines came from: a file of the skill (its path as declared) or the declaration. */
  from: { file: string } | { lines: true };
  /** For a list: the lines as declared (checked when the environment is resolved, like a file's). */
  lines?: string[];
}

export interface NodeRequirements {
  /** The package.json, and the package-lock.json beside it (paths inside the skill). */
  packageJson: string;
  lockfile: string;
}

export interface Requirements {
  python?: PythonRequirements;
  node?: NodeRequirements;
  /** pip may build source distributions (runs the package's build code): only when true. */
  sourceBuilds: boolean;
}

export type RequirementsParse =
  | { ok: true; value: Requirements | undefined; unknown: string[] }
  | { ok: false; why: string; unknown: string[] };

const KEYS = new Set(['python', 'node', 'source-builds']);

function isRecord(value: unknown): value is Record<string, JsonValue> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A path inside the skill under the path rules (string check, no hidden segment). */
function skillPath(value: string, at: string): { ok: true; path: string } | { ok: false; why: string } {
  const check = checkPathString(value);
  if (!check.ok) return { ok: false, why: `${at} ${JSON.stringify(value)}: ${check.why}` };
  if (isHiddenPath(check.segments)) return { ok: false, why: `${at} ${JSON.stringify(value)}: hidden files are never served` };
  return { ok: true, path: check.segments.join('/') };
}

/** Parses `mcp-host.requirements` (absent: no requirements). */
export function parseRequirements(block: JsonValue | undefined): RequirementsParse {
  const unknown: string[] = [];
  if (block === undefined || block === null) return { ok: true, value: undefined, unknown };
  if (!isRecord(block)) return { ok: false, why: 'mcp-host.requirements must be a mapping (python, node, source-builds)', unknown };
  for (const key of Object.keys(block)) if (!KEYS.has(key)) unknown.push(`mcp-host.requirements.${key}`);
  const value: Requirements = { sourceBuilds: false };
  const builds = block['source-builds'];
  if (builds !== undefined) {
    if (typeof builds !== 'boolean') return { ok: false, why: 'mcp-host.requirements.source-builds must be true or false', unknown };
    value.sourceBuilds = builds;
  }
  const python = block['python'];
  if (typeof python === 'string') {
    const path = skillPath(python, 'mcp-host.requirements.python');
    if (!path.ok) return { ok: false, why: path.why, unknown };
    value.python = { from: { file: path.path } };
  } else if (Array.isArray(python)) {
    if (!python.every((line): line is string => typeof line === 'string'))
      return { ok: false, why: 'mcp-host.requirements.python must be a file path or a list of requirement lines (strings)', unknown };
    const checked = parseRequirementLines(python.join('\n'));
    if (!checked.ok) return { ok: false, why: `mcp-host.requirements.python: ${checked.why}`, unknown };
    value.python = { from: { lines: true }, lines: checked.lines };
  } else if (python !== undefined) {
    return { ok: false, why: 'mcp-host.requirements.python must be a file path inside the skill or a list of requirement lines', unknown };
  }
  const node = block['node'];
  if (node !== undefined) {
    if (typeof node !== 'string')
      return { ok: false, why: 'mcp-host.requirements.node must be the path of a package.json inside the skill', unknown };
    const path = skillPath(node, 'mcp-host.requirements.node');
    if (!path.ok) return { ok: false, why: path.why, unknown };
    const slash = path.path.lastIndexOf('/');
    if (path.path.slice(slash + 1) !== 'package.json')
      return { ok: false, why: `mcp-host.requirements.node ${JSON.stringify(node)} must name a file called package.json`, unknown };
    value.node = { packageJson: path.path, lockfile: `${path.path.slice(0, slash + 1)}package-lock.json` };
  }
  if (!value.python && !value.node) return { ok: true, value: undefined, unknown };
  return { ok: true, value, unknown };
}

export type LinesParse = { ok: true; lines: string[]; hashed: boolean } | { ok: false; why: string };

const NAME = '[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?';
const VERSION = '[A-Za-z0-9._*+!-]+';
const OP = '(?:===|==|!=|<=|>=|~=|<|>)';
const SPEC = `${OP}\\s*${VERSION}(?:\\s*,\\s*${OP}\\s*${VERSION})*`;
// Marker text: names, quoted values, comparison operators, parentheses. No "/", ":" or "@" — so no URL or path.
const MARKER = `[A-Za-z0-9_.'" <>=!~()-]+`;
const HASH = '--hash=(?:sha256|sha384|sha512):[0-9a-f]{32,128}';
/**
 * Security: the whole grammar a line may have. Options other than `--hash` (`-e`, `-r`, `-c`,
 * `--index-url`, `--extra-index-url`, `--find-links`, `--trusted-host`, `--no-binary`…) would let
 * the skill's author choose the index, read other files or switch source builds on; `name @ URL`,
 * URLs and local paths would fetch from anywhere the author likes. The index is the operator's.
 */
const LINE = new RegExp(
  `^(${NAME})(?:\\s*\\[\\s*${NAME}(?:\\s*,\\s*${NAME})*\\s*\\])?\\s*(?:\\(\\s*${SPEC}\\s*\\)|${SPEC})?\\s*(?:;\\s*${MARKER})?((?:\\s+${HASH})*)$`,
);

/**
 * Checks requirement text (a file's or a list's lines): comments (`#`) and blank lines dropped,
 * `\` continuations joined, every remaining line against the grammar above. The lines returned
 * are what pip is given (runner/deps/), so what was checked is what is installed.
 */
export function parseRequirementLines(text: string): LinesParse {
  if (text.includes('\0')) return { ok: false, why: 'the requirements hold a NUL byte' };
  const logical: { text: string; at: number }[] = [];
  let pending = '';
  let startedAt = 0;
  const raw = text.split(/\r?\n/);
  for (let i = 0; i < raw.length; i++) {
    let line = raw[i]!;
    // A comment starts at "#" at the line's start or after whitespace (pip's rule).
    const hash = line.search(/(^|\s)#/);
    if (hash >= 0) line = line.slice(0, hash);
    if (pending === '') startedAt = i + 1;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    const joined = (pending + line).trim().replace(/\s+/g, ' ');
    pending = '';
    if (joined !== '') logical.push({ text: joined, at: startedAt });
  }
  if (pending.trim() !== '') logical.push({ text: pending.trim().replace(/\s+/g, ' '), at: startedAt });
  if (logical.length > MAX_REQUIREMENT_LINES)
    return { ok: false, why: `${logical.length} requirement lines; at most ${MAX_REQUIREMENT_LINES}` };
  let hashed = 0;
  for (const { text: line, at } of logical) {
    if (line.length > MAX_REQUIREMENT_LINE_CHARS)
      return { ok: false, why: `line ${at} is longer than ${MAX_REQUIREMENT_LINE_CHARS} characters` };
    if (line.startsWith('-'))
      return {
        ok: false,
        why: `line ${at} is a pip option (${JSON.stringify(line.split(' ')[0])}); only requirements with --hash= are accepted — the index and its settings are the operator's`,
      };
    if (/:\/\/|@/.test(line) || /^[.~/]/.test(line))
      return { ok: false, why: `line ${at} names a URL or a local path; only package names from the operator's index are accepted` };
    const match = LINE.exec(line);
    if (!match)
      return {
        ok: false,
        why: `line ${at} ${JSON.stringify(line.slice(0, 80))} is not a requirement (name, [extras], version specifiers, ; marker, --hash=)`,
      };
    if ((match[2] ?? '').trim() !== '') hashed += 1;
  }
  return { ok: true, lines: logical.map((l) => l.text), hashed: hashed > 0 };
}
