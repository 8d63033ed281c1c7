/**
 * @module `skill-mcp check --fix`: moves a SKILL.md frontmatter `mcp-host:` block into
 * `mcp-host.yaml` beside it, so SKILL.md holds only the Agent Skills fields. Everything else of
 * SKILL.md stays byte for byte; the sidecar holds the block's lines with their indentation taken
 * off. Before anything is written both results are parsed again and must mean exactly what the
 * block meant (the same declaration, the same other frontmatter); otherwise nothing changes.
 * Refused when a sidecar is already there (never merged, never overwritten).
 */
import { chownSync, closeSync, fstatSync, linkSync, lstatSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { SIDECAR_FILE } from '../../shared/declaration-source.js';
import type { DiscoveredSkill } from '../../shared/discover.js';
import { FrontmatterError, parseSkillMd, parseStrict, type Frontmatter, type ParsedSkillMd } from '../../shared/frontmatter.js';
import { readSkillMdFile } from '../../shared/skill-md.js';

export type FixOutcome = { kind: 'moved'; lines: [number, number] } | { kind: 'refused'; why: string } | { kind: 'nothing' };

/** The frontmatter's lines with their offsets in `text`: [start, end) of each line including its newline. */
function frontmatterLines(text: string): { start: number; end: number; line: string }[] | undefined {
  const lines: { start: number; end: number; line: string }[] = [];
  let offset = text.startsWith('\uFEFF') ? 1 : 0;
  let first = true;
  while (offset < text.length) {
    const nl = text.indexOf('\n', offset);
    const end = nl < 0 ? text.length : nl + 1;
    const line = text.slice(offset, end).replace(/\r?\n$/, '');
    if (first) {
      if (!/^---[ \t]*$/.test(line)) return undefined;
      first = false;
    } else if (/^---[ \t]*$/.test(line)) return lines;
    else lines.push({ start: offset, end, line });
    offset = end;
  }
  return undefined;
}

/** The block's own lines: its key line up to the next top-level key (comments and blank lines at its end stay in SKILL.md). */
function blockRange(lines: { line: string }[]): [number, number] | undefined {
  const first = lines.findIndex((l) => /^mcp-host[ \t]*:/.test(l.line));
  if (first < 0) return undefined;
  let last = first;
  for (let i = first + 1; i < lines.length; i++) {
    const line = lines[i]!.line;
    if (/^[^\s#]/.test(line)) break;
    if (/^\s+\S/.test(line) && !/^\s*#/.test(line)) last = i;
  }
  return [first, last + 1];
}

/** The sidecar's text: the block's value lines, de-indented. */
function sidecarText(blockLines: string[]): string | undefined {
  const [key, ...rest] = blockLines;
  // `mcp-host: {version: 1, ...}` on one line: a flow value is not moved by hand (it would need re-writing).
  if (!/^mcp-host[ \t]*:[ \t]*(#.*)?$/.test(key!)) return undefined;
  const indents = rest.filter((l) => l.trim() !== '').map((l) => /^[ ]*/.exec(l)![0].length);
  const cut = Math.min(...indents);
  if (!Number.isFinite(cut) || cut === 0) return undefined;
  // A comment less indented than the block (even at column 0) loses only its spaces.
  return `${rest.map((l) => (l.trim() === '' ? '' : l.slice(Math.min(cut, /^[ ]*/.exec(l)![0].length)))).join('\n')}\n`;
}

/** Writes `bytes` to a fresh temp file in `dir`, owned and moded like `like` (fd of SKILL.md). Returns its path. */
function writeTemp(dir: string, bytes: string, like: { mode: number; uid: number; gid: number }): string {
  const path = join(dir, `.mcp-host-fix-${randomBytes(6).toString('hex')}`);
  const fd = openSync(path, 'wx', like.mode & 0o777);
  try {
    writeSync(fd, bytes);
    // Run as root on someone's skill: the files stay theirs.
    if (process.getuid?.() === 0) chownSync(path, like.uid, like.gid);
  } finally {
    closeSync(fd);
  }
  return path;
}

function without(value: Frontmatter, key: string): Frontmatter {
  const copy = { ...value };
  delete copy[key];
  return copy;
}

/** Moves the skill's frontmatter block into its sidecar, or says why not. */
export function moveDeclaration(found: DiscoveredSkill, maxFrontmatterBytes: number): FixOutcome {
  const md = readSkillMdFile(found.realDir);
  if (!md.ok) return { kind: 'refused', why: md.why };
  const text = md.text;
  let parsed: ParsedSkillMd;
  try {
    parsed = parseSkillMd(text, maxFrontmatterBytes);
  } catch (error) {
    if (error instanceof FrontmatterError)
      return { kind: 'refused', why: `the frontmatter does not parse (${error.message}); fix it first` };
    throw error;
  }
  const lines = frontmatterLines(text);
  const range = lines ? blockRange(lines) : undefined;
  if (!lines || !range) return { kind: 'nothing' };
  if (parsed.declarationError !== undefined)
    return { kind: 'refused', why: `the mcp-host block does not parse (${parsed.declarationError}); fix it first` };
  if (lstatSync(join(found.realDir, SIDECAR_FILE), { throwIfNoEntry: false }))
    return { kind: 'refused', why: `${SIDECAR_FILE} already exists; merge by hand, then delete the block from SKILL.md` };
  const sidecar = sidecarText(lines.slice(range[0], range[1]).map((l) => l.line));
  if (sidecar === undefined)
    return { kind: 'refused', why: 'the block is not an indented mapping under "mcp-host:" (a one-line flow value?); move it by hand' };
  const start = lines[range[0]]!.start;
  const end = lines[range[1] - 1]!.end;
  const newText = text.slice(0, start) + text.slice(end);
  // Security: nothing is written unless both files read back to exactly what the block meant.
  try {
    const moved = parseStrict(sidecar, 0).value;
    const rest = parseSkillMd(newText, maxFrontmatterBytes);
    if (
      !isDeepStrictEqual(moved, parsed.frontmatter['mcp-host']) ||
      !isDeepStrictEqual(rest.frontmatter, without(parsed.frontmatter, 'mcp-host')) ||
      rest.body !== parsed.body
    ) {
      return {
        kind: 'refused',
        why: 'the moved block would not read back the same (comments or unusual indentation inside it?); move it by hand',
      };
    }
  } catch {
    return { kind: 'refused', why: 'the moved block would not parse on its own; move it by hand' };
  }

  const mdPath = join(found.realDir, 'SKILL.md');
  const fd = openSync(mdPath, 'r');
  const like = fstatSync(fd);
  closeSync(fd);
  const sideTemp = writeTemp(found.realDir, sidecar, like);
  try {
    // link, not rename: a sidecar that appeared meanwhile is never overwritten (EEXIST).
    linkSync(sideTemp, join(found.realDir, SIDECAR_FILE));
  } catch (error) {
    unlinkSync(sideTemp);
    return {
      kind: 'refused',
      why: `${SIDECAR_FILE} could not be created (${(error as NodeJS.ErrnoException).code ?? 'error'}); nothing changed`,
    };
  }
  unlinkSync(sideTemp);
  const mdTemp = writeTemp(found.realDir, newText, like);
  const again = readSkillMdFile(found.realDir);
  if (!again.ok || again.text !== text) {
    unlinkSync(mdTemp);
    unlinkSync(join(found.realDir, SIDECAR_FILE));
    return { kind: 'refused', why: 'SKILL.md changed while it was being fixed; nothing changed, run --fix again' };
  }
  renameSync(mdTemp, mdPath);
  const before = text.slice(0, start);
  const firstLine = before.split('\n').length;
  return { kind: 'moved', lines: [firstLine, firstLine + (range[1] - range[0]) - 1] };
}
