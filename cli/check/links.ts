/**
 * @module Relative links in SKILL.md that lead nowhere. A model follows a skill's links with
 * skill_file, which serves only the skill's manifest: a link to a missing file, to a hidden file
 * or out of the skill is a dead end. Links inside code are not links. Pure.
 */
import { posix } from 'node:path';
import type { Hit } from './finding.js';
import { inlineLinks, type InlineTarget } from './inline-links.js';
import { LineIndex, maskMarkdownCode } from './text.js';

/**
 * `[id]: target` reference definitions (anchored at a line start: one try per line). Not a
 * footnote's `[^1]: text`: its text is prose, not a link target.
 */
const DEFINITION = /^ {0,3}\[(?!\^)[^\]\n]+\]:[ \t]*(<[^>\n]*>|\S+)/gm;
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;

export interface LinkTarget {
  /** As written (angle brackets removed). */
  raw: string;
  /** Offset of the target in the text. */
  offset: number;
}

/** Every relative link target in `markdown`, outside code, from `from` on. */
export function relativeLinks(markdown: string, from = 0): LinkTarget[] {
  const masked = maskMarkdownCode(markdown);
  const out: LinkTarget[] = [];
  const found: InlineTarget[] = inlineLinks(masked);
  for (const match of masked.matchAll(DEFINITION)) found.push({ written: match[1]!, offset: match.index + match[0].indexOf(match[1]!) });
  for (const { written, offset: at } of found) {
    const angled = written.startsWith('<');
    const offset = at + (angled ? 1 : 0);
    if (offset < from) continue;
    const raw = angled ? written.slice(1, -1) : written;
    // Absolute URLs (https:, mailto:), in-page anchors and absolute paths are not skill files.
    if (raw === '' || SCHEME.test(raw) || raw.startsWith('#') || raw.startsWith('/')) continue;
    out.push({ raw, offset });
  }
  return out.sort((a, b) => a.offset - b.offset);
}

/** The skill path a relative link names, or why it cannot name one. */
export function linkPath(raw: string): { path: string } | { outside: true } {
  let target = raw.replace(/[?#].*$/, '');
  try {
    target = decodeURIComponent(target);
  } catch {
    // Not valid percent-encoding: taken as written.
  }
  const normal = posix.normalize(target).replace(/\/+$/, '');
  if (normal === '..' || normal.startsWith('../')) return { outside: true };
  return { path: normal === '.' ? '' : normal };
}

/**
 * Dead links of a SKILL.md (`text`, whose body starts at `bodyOffset`), given the skill's served
 * files and a way to ask whether a path exists at all (to say "missing" or "not served"). A link
 * to a folder is fine when the folder holds a served file.
 */
export function findDeadLinks(text: string, bodyOffset: number, servedFiles: readonly string[], exists: (path: string) => boolean): Hit[] {
  const lines = new LineIndex(text);
  const served = new Set(servedFiles);
  const hits: Hit[] = [];
  for (const link of relativeLinks(text, bodyOffset)) {
    const target = linkPath(link.raw);
    let why: string | undefined;
    if ('outside' in target) why = 'it leads out of the skill, and a client can only read files inside it';
    else if (target.path === '' || served.has(target.path) || servedFiles.some((f) => f.startsWith(`${target.path}/`))) why = undefined;
    else if (target.path.split('/').some((s) => s.startsWith('.'))) why = 'it names a hidden file, which is never served';
    else if (exists(target.path)) why = 'it exists but is not served (the server problems for that path say why)';
    else why = 'no such file exists in the skill';
    if (why) hits.push({ ruleId: 'link/missing-target', message: `the link to "${link.raw}" is dead: ${why}`, ...lines.at(link.offset) });
  }
  return hits;
}
