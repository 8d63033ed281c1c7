/**
 * @module Reads a `SKILL.md`: splits the YAML frontmatter from the body and parses it strictly
 * (YAML 1.2 core schema; no anchors, aliases, explicit tags, duplicate or non-string keys; only
 * values JSON carries exactly). Both processes use it: the front to list skills, the runner to
 * re-read a declaration before every run.
 *
 * When the document fails only inside its `mcp-host:` block, the rest is still read and the
 * failure is returned as `declarationError`: a broken declaration costs a skill its scripts, not
 * its instructions (docs/architecture.md §4).
 */
import { isMap, isScalar, parseDocument, visit } from 'yaml';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type Frontmatter = { [key: string]: JsonValue };

export interface ParsedSkillMd {
  frontmatter: Frontmatter;
  /** Everything after the closing `---` line, byte for byte. */
  body: string;
  /** The text started with a UTF-8 byte-order mark (strict hosts refuse such files). */
  bom: boolean;
  /** Set when the `mcp-host:` block itself could not be parsed; it is then absent from `frontmatter`. */
  declarationError?: string;
}

export class FrontmatterError extends Error {
  override readonly name = 'FrontmatterError';
}

const OPEN = /^---[ \t]*\r?\n/;
const CLOSE = /^---[ \t]*(\r?\n|$)/m;
const DECLARATION_KEY = 'mcp-host';

/** Splits `text` into frontmatter source and body. Throws {@link FrontmatterError}. */
function split(text: string, maxBytes: number): { yaml: string; body: string; bom: boolean } {
  const bom = text.startsWith('\uFEFF');
  const rest = bom ? text.slice(1) : text;
  const open = OPEN.exec(rest);
  if (!open) throw new FrontmatterError('SKILL.md does not start with a "---" frontmatter line');
  const after = rest.slice(open[0].length);
  // An empty frontmatter closes on the very next line.
  const close = after.startsWith('---') ? /^---[ \t]*(\r?\n|$)/.exec(after) : CLOSE.exec(after);
  if (!close) throw new FrontmatterError('the frontmatter has no closing "---" line');
  const yaml = after.slice(0, close.index);
  if (Buffer.byteLength(yaml) > maxBytes) {
    throw new FrontmatterError(`the frontmatter is larger than ${maxBytes} bytes`);
  }
  return { yaml, body: after.slice(close.index + close[0].length), bom };
}

function position(offset: number | undefined, yaml: string, lineOffset: number): string {
  if (offset === undefined) return '';
  const before = yaml.slice(0, offset);
  const line = before.split('\n').length + lineOffset;
  const col = offset - before.lastIndexOf('\n');
  return ` (line ${line}, column ${col})`;
}

/**
 * Parses YAML text strictly and returns the JSON value, or throws with a located message.
 * `lineOffset` is added to line numbers: 1 in a SKILL.md (its opening "---" line), 0 in a file of
 * YAML alone (a declaration file, shared/declaration-source.ts).
 */
export function parseStrict(yaml: string, lineOffset = 1): { value: Frontmatter; errorOffset?: number } {
  const doc = parseDocument(yaml, { schema: 'core', version: '1.2', uniqueKeys: true, strict: true, prettyErrors: false });
  const first = doc.errors[0];
  if (first) {
    throw new FrontmatterError(`${first.message.split('\n')[0]}${position(first.pos[0], yaml, lineOffset)}`);
  }
  let refusal: { why: string; offset?: number } | undefined;
  visit(doc, {
    Alias(_key, node) {
      refusal ??= { why: 'aliases (*name) are not allowed', offset: node.range?.[0] };
      return visit.BREAK;
    },
    Node(_key, node) {
      if (node.anchor) refusal ??= { why: 'anchors (&name) are not allowed', offset: node.range?.[0] };
      else if (node.tag) refusal ??= { why: `explicit tags (${node.tag}) are not allowed`, offset: node.range?.[0] };
      return refusal ? visit.BREAK : undefined;
    },
    Pair(_key, pair) {
      const key = pair.key;
      if (!isScalar(key) || typeof key.value !== 'string') {
        refusal ??= { why: 'every key must be a string', offset: isScalar(key) ? key.range?.[0] : undefined };
        return visit.BREAK;
      }
      return undefined;
    },
  });
  if (refusal) {
    throw new FrontmatterError(`${refusal.why}${position(refusal.offset, yaml, lineOffset)}`);
  }
  if (doc.contents === null) return { value: {} };
  if (!isMap(doc.contents))
    throw new FrontmatterError(`the ${lineOffset === 1 ? 'frontmatter' : 'file'} must be a mapping of keys to values`);
  const value = doc.toJS({ maxAliasCount: 0 }) as unknown;
  const bad = nonJson(value, '');
  if (bad) throw new FrontmatterError(`${bad} cannot be carried as JSON`);
  return { value: value as Frontmatter };
}

/** Names the first value JSON cannot carry exactly (`.inf`, `.nan`, unsafe integers). */
function nonJson(value: unknown, path: string): string | undefined {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return `the value at ${path || 'top level'} (${value})`;
    if (Number.isInteger(value) && !Number.isSafeInteger(value)) return `the integer at ${path}`;
    return undefined;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const bad = nonJson(value[i], `${path}[${i}]`);
      if (bad) return bad;
    }
    return undefined;
  }
  if (value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      const bad = nonJson(child, path ? `${path}.${key}` : key);
      if (bad) return bad;
    }
  }
  return undefined;
}

/** The line range [start, end) of the top-level `mcp-host:` block in `yaml`, if there is one. */
function declarationBlock(yaml: string): { start: number; end: number } | undefined {
  const match = /^mcp-host[ \t]*:/m.exec(yaml);
  if (!match) return undefined;
  const next = /^[^\s#]/m.exec(yaml.slice(match.index + match[0].length));
  const end = next ? match.index + match[0].length + next.index : yaml.length;
  return { start: match.index, end };
}

/**
 * Parses a `SKILL.md`'s text. Throws {@link FrontmatterError} (with a position where the parser
 * gave one) when the frontmatter outside `mcp-host:` cannot be read.
 */
export function parseSkillMd(text: string, maxFrontmatterBytes: number): ParsedSkillMd {
  const { yaml, body, bom } = split(text, maxFrontmatterBytes);
  try {
    return { frontmatter: parseStrict(yaml).value, body, bom };
  } catch (error) {
    const block = declarationBlock(yaml);
    if (!(error instanceof FrontmatterError) || !block) throw error;
    // Only a failure the declaration causes is confined to it: the rest must parse on its own.
    // (Deciding by the error's offset is not enough: an unclosed `run: [` in a last block is
    // reported at the end of the document, past the block.) Anything else fails the skill.
    const without = yaml.slice(0, block.start) + yaml.slice(block.end);
    let value: Frontmatter;
    try {
      ({ value } = parseStrict(without));
    } catch {
      throw error;
    }
    delete value[DECLARATION_KEY];
    return { frontmatter: value, body, bom, declarationError: error.message };
  }
}
