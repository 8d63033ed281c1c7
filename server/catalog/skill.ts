/**
 * @module Builds one skill's record: its SKILL.md read and parsed, its declaration, its manifest,
 * and whether a strict SEP-2640 host could load it (publication in `skill://`). One broken skill
 * produces problems for itself only.
 */
import { createHash } from 'node:crypto';
import type { Declaration } from '../../shared/declaration.js';
import { OPERATOR_PLACE, resolveDeclaration, type DeclarationOrigin, type DeclarationProblem } from '../../shared/declaration-source.js';
import type { DiscoveredSkill } from '../../shared/discover.js';
import { FrontmatterError, parseSkillMd, type Frontmatter, type ParsedSkillMd } from '../../shared/frontmatter.js';
import type { CatalogLimits } from '../../shared/limits.js';
import {
  MAX_DESCRIPTION_CHARS,
  MAX_SKILL_MD_BYTES,
  MAX_SKILL_NAME_CHARS,
  PUBLISH_MAX_BYTES,
  PUBLISH_MAX_FILE_BYTES,
  PUBLISH_MAX_FILES,
} from '../../shared/limits.js';
import { PUBLISHABLE_NAME } from '../../shared/paths.js';
import { readSkillMdFile } from '../../shared/skill-md.js';
import { MAX_RUN_CONTENT_BYTES, readSkillContent } from '../../shared/skill-content.js';
import { FASTMCP_MANIFEST_PATH, holdsManifestPath } from './fastmcp-manifest.js';
import type { Problem } from '../../shared/problems.js';
import { walkSkill, type FileRecord, type WalkResult } from './walk.js';

export interface SkillRecord {
  name: string;
  realDir: string;
  displayPath: string;
  frontmatter: Frontmatter;
  description: string;
  whenToUse?: string;
  declaration?: Declaration;
  /** Where the declaration came from (shared/declaration-source.ts); absent when none applies. */
  declarationOrigin?: DeclarationOrigin;
  files: FileRecord[];
  /** In the `skill://` namespace (skills/list, skills/get, resources). */
  published: boolean;
  /** sha256 of the SKILL.md bytes scanned: tells a real edit from a rewrite of the same bytes. */
  skillMdDigest: string;
  /** The Markdown headings of the body (`#` to `######`), in order: what skill_search indexes besides the frontmatter. */
  headings: string[];
  /**
   * With a digest index: each file's state when walked (shared/file-state.ts), by path — what a
   * remembered digest is looked up by without opening the file (digest.ts).
   */
  fileStates?: ReadonlyMap<string, string>;
}

/** Headings kept per skill for search: a 600-line SKILL.md has a few dozen; this bounds a hostile one. */
const MAX_HEADINGS = 200;
const MAX_HEADING_CHARS = 200;

/** ATX headings outside fenced code blocks, without their `#` marks; at most {@link MAX_HEADINGS}. */
export function headingsOf(body: string): string[] {
  const out: string[] = [];
  let fenced = false;
  for (const line of body.split('\n')) {
    if (/^\s{0,3}(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const match = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (match?.[1]) out.push(match[1].slice(0, MAX_HEADING_CHARS));
    if (out.length >= MAX_HEADINGS) break;
  }
  return out;
}

export type ScanResult = {
  record?: SkillRecord;
  problems: Problem[];
  /** Each reason the skill is kept out of `skill://` (joined into its `not-published` problem). */
  unpublished?: string[];
};

function charCount(text: string): number {
  return [...text].length;
}

/** Why a strict host could not load this skill; empty when it can be published. */
function unpublishable(
  name: string,
  fm: Frontmatter,
  bom: boolean,
  files: FileRecord[],
  limited: boolean,
  validUtf8: boolean,
  yamlBroken: boolean,
): string[] {
  const why: string[] = [];
  if (name.length > MAX_SKILL_NAME_CHARS || !PUBLISHABLE_NAME.test(name)) {
    why.push(
      `the directory name "${name}" is not a valid skill name (lowercase letters, digits and single hyphens, at most ${MAX_SKILL_NAME_CHARS})`,
    );
  } else if (fm['name'] !== name)
    why.push(`the frontmatter name ${JSON.stringify(fm['name'] ?? null)} differs from the directory name "${name}"`);
  const description = fm['description'];
  if (typeof description !== 'string' || description === '') {
    why.push(
      `the description must be a string of 1-${MAX_DESCRIPTION_CHARS} characters (it is ${description === undefined ? 'missing' : description === '' ? 'empty' : `a ${description === null ? 'null' : Array.isArray(description) ? 'list' : typeof description}`})`,
    );
  } else if (charCount(description) > MAX_DESCRIPTION_CHARS) {
    why.push(`the description is ${charCount(description)} characters long; strict hosts accept at most ${MAX_DESCRIPTION_CHARS}`);
  }
  const compatibility = fm['compatibility'];
  if (compatibility !== undefined && (typeof compatibility !== 'string' || compatibility === '' || charCount(compatibility) > 500)) {
    const is =
      typeof compatibility === 'string'
        ? compatibility === ''
          ? 'empty'
          : `${charCount(compatibility)} characters long`
        : `a ${compatibility === null ? 'null' : Array.isArray(compatibility) ? 'list' : typeof compatibility}`;
    why.push(`frontmatter compatibility must be a string of 1-500 characters (it is ${is})`);
  }
  const metadata = fm['metadata'];
  if (
    metadata !== undefined &&
    (metadata === null ||
      typeof metadata !== 'object' ||
      Array.isArray(metadata) ||
      !Object.values(metadata).every((v) => typeof v === 'string'))
  ) {
    why.push('frontmatter metadata must map strings to strings');
  }
  if (bom) why.push('SKILL.md starts with a byte-order mark, which strict hosts refuse');
  // The rest was read without the broken mcp-host block; a strict host parses the whole file.
  if (yamlBroken) why.push('its frontmatter is not valid YAML as a whole (the mcp-host block does not parse)');
  if (!validUtf8) why.push('SKILL.md is not valid UTF-8');
  if (limited) why.push('its manifest is incomplete (file-limit)');
  if (files.length > PUBLISH_MAX_FILES) why.push(`it has ${files.length} files, over the extension's ${PUBLISH_MAX_FILES}`);
  const bytes = files.reduce((sum, f) => sum + f.size, 0);
  if (bytes > PUBLISH_MAX_BYTES) why.push(`it holds ${bytes} bytes, over the extension's 16 MiB`);
  const big = files.find((f) => f.size > PUBLISH_MAX_FILE_BYTES);
  if (big)
    why.push(
      `"${big.path}" is ${big.size} bytes; a single published file is capped at ${PUBLISH_MAX_FILE_BYTES} so one resources/read message stays under common clients' 10 MiB limit`,
    );
  // A real file would shadow the manifest FastMCP clients read at that URI (or be shadowed by it).
  if (holdsManifestPath(files))
    why.push(`it holds "${FASTMCP_MANIFEST_PATH}" at its top, the path FastMCP clients read for a skill's file list; rename it`);
  return why;
}

/** Where a declaration problem is shown: the skill's own file, or the operator's by name (never its host path). */
function problemPath(at: string, name: string, problem: DeclarationProblem): string {
  if (problem.at === 'operator') return `${OPERATOR_PLACE}/${name}.yaml`;
  return `${at}/${problem.at}`;
}

/**
 * What a warm start remembers of a scan (the digest index, digest-index.ts): the parse of each
 * SKILL.md, by a hash of its bytes — the same bytes always parse the same, so no file state is
 * trusted for the parse itself. Given one, the walk also keeps each file's state for the digests
 * (digest.ts), and a settled digest lets SKILL.md go unread ({@link rememberedSkillMd}).
 */
export interface ScanMemory {
  parsedSkillMd(key: string): string | undefined;
  rememberParsedSkillMd(key: string, json: string): void;
  /**
   * The settled digest remembered for file `rel` of `realDir` in the `state` its walk found, as
   * digest.ts uses it; absent where walked states may not vouch (a root process), and SKILL.md
   * is then always read.
   */
  walkedDigest?(realDir: string, rel: string, state: string): string | undefined;
}

/** What {@link parseSkillMd} and {@link headingsOf} make of a SKILL.md: all a record keeps of its text. */
type SkillMdView = Omit<ParsedSkillMd, 'body'> & { headings: string[]; validUtf8: boolean };

const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');

/** A remembered view, or undefined when it is not one (an index from elsewhere is never trusted blindly). */
function rememberedView(json: string | undefined): SkillMdView | undefined {
  if (json === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  const v = value as Record<string, unknown>;
  const fm = v['frontmatter'];
  if (
    fm === null ||
    typeof fm !== 'object' ||
    Array.isArray(fm) ||
    typeof v['bom'] !== 'boolean' ||
    typeof v['validUtf8'] !== 'boolean' ||
    !isStringArray(v['headings'])
  )
    return undefined;
  if (v['declarationError'] !== undefined && typeof v['declarationError'] !== 'string') return undefined;
  return v as unknown as SkillMdView;
}

const viewKey = (maxFrontmatterBytes: number, bytesDigest: string): string => `${maxFrontmatterBytes}:${bytesDigest}`;

/** The SKILL.md's view: remembered for these exact bytes (and frontmatter limit), else parsed now. Throws FrontmatterError. */
function viewOf(
  md: { text: string; size: number },
  bytesDigest: string,
  maxFrontmatterBytes: number,
  memory: ScanMemory | undefined,
): SkillMdView {
  const key = viewKey(maxFrontmatterBytes, bytesDigest);
  const remembered = rememberedView(memory?.parsedSkillMd(key));
  if (remembered) return remembered;
  const { body, ...parsed } = parseSkillMd(md.text, maxFrontmatterBytes);
  const validUtf8 = !md.text.includes('\uFFFD') || Buffer.byteLength(md.text, 'utf8') === md.size;
  const view: SkillMdView = { ...parsed, headings: headingsOf(body), validUtf8 };
  memory?.rememberParsedSkillMd(key, JSON.stringify(view));
  return view;
}

/**
 * The warm start's SKILL.md, not opened: the walk's own lstat of it (not through a link: the read
 * below refuses links) found it a regular file within MAX_SKILL_MD_BYTES, in a state the digest
 * index holds a settled digest for, and the parse of the bytes with that digest is remembered.
 * That digest is the one skills/list publishes for the file on the same evidence (digest.ts), so
 * what is listed of it — frontmatter and digest — describes one and the same text; a read that
 * finds other bytes forgets the entry and rescans (catalog.ts confirmFresh), and the rescan reads.
 * Undefined otherwise: the file is read.
 */
function rememberedSkillMd(
  walk: WalkResult,
  realDir: string,
  maxFrontmatterBytes: number,
  memory: ScanMemory | undefined,
): { digest: string; view: SkillMdView } | undefined {
  const state = walk.states?.get('SKILL.md');
  if (state === undefined || walk.linked === undefined || walk.linked.has('SKILL.md') || memory?.walkedDigest === undefined)
    return undefined;
  const size = walk.files.find((f) => f.path === 'SKILL.md')?.size;
  if (size === undefined || size > MAX_SKILL_MD_BYTES) return undefined;
  const digest = memory.walkedDigest(realDir, 'SKILL.md', state);
  if (digest === undefined) return undefined;
  const view = rememberedView(memory.parsedSkillMd(viewKey(maxFrontmatterBytes, digest)));
  return view ? { digest, view } : undefined;
}

/**
 * `declarationsDir`: `SKILL_MCP_DECLARATIONS` (shared/settings.ts), undefined when unset;
 * `memory`: what a warm start remembers ({@link ScanMemory}).
 */
export async function scanSkill(
  found: DiscoveredSkill,
  limits: CatalogLimits,
  declarationsDir?: string,
  memory?: ScanMemory,
): Promise<ScanResult> {
  const problems: Problem[] = [];
  const at = found.displayPath;
  const walk = await walkSkill(found.name, found.realDir, at, {
    maxFiles: limits.maxFilesPerSkill,
    maxDirs: limits.maxDirsPerSkill,
    states: memory !== undefined,
  });
  let skillMdDigest: string;
  let parsed: SkillMdView;
  const remembered = rememberedSkillMd(walk, found.realDir, limits.maxFrontmatterBytes, memory);
  if (remembered) ({ digest: skillMdDigest, view: parsed } = remembered);
  else {
    const md = readSkillMdFile(found.realDir);
    if (!md.ok)
      return { problems: [{ path: `${at}/SKILL.md`, reason: 'unreadable-skill-md', detail: `${md.why}; the skill is not served` }] };
    skillMdDigest = createHash('sha256').update(md.bytes).digest('hex');
    try {
      parsed = viewOf(md, skillMdDigest, limits.maxFrontmatterBytes, memory);
    } catch (error) {
      if (!(error instanceof FrontmatterError)) throw error;
      return {
        problems: [{ path: `${at}/SKILL.md`, reason: 'malformed-frontmatter', detail: `${error.message}; the skill is not served` }],
      };
    }
  }
  problems.push(...walk.problems);
  const fm = parsed.frontmatter;
  if (typeof fm['name'] === 'string' && fm['name'] !== found.name) {
    problems.push({
      path: at,
      reason: 'name-mismatch',
      detail: `the frontmatter name "${fm['name']}" differs from the directory name; it is served as "${found.name}"`,
    });
  }

  const resolved = await resolveDeclaration({
    name: found.name,
    realDir: found.realDir,
    frontmatter: fm,
    declarationError: parsed.declarationError,
    declarationsDir,
    contentDigest: async () => {
      const read = await readSkillContent(found.name, found.realDir, {
        maxFiles: limits.maxFilesPerSkill,
        maxDirs: limits.maxDirsPerSkill,
        maxBytes: MAX_RUN_CONTENT_BYTES,
      });
      return read.ok ? { ok: true, digest: read.content.digest } : { ok: false, why: read.why };
    },
  });
  let declaration: Declaration | undefined = resolved.declaration;
  for (const problem of resolved.problems)
    problems.push({ path: problemPath(at, found.name, problem), reason: 'declaration', detail: problem.detail });
  if (declaration) {
    const present = new Set(walk.files.map((f) => f.path));
    const missing = declaration.run.filter((s) => !present.has(s.script));
    for (const s of missing) {
      problems.push({
        path: `${at}/${s.script}`,
        reason: 'declared-script-missing',
        detail: `the declared script "${s.script}" is not a served regular file in the skill; it is not runnable`,
      });
    }
    declaration = { ...declaration, run: declaration.run.filter((s) => present.has(s.script)) };
  }

  const why = unpublishable(found.name, fm, parsed.bom, walk.files, walk.limited, parsed.validUtf8, parsed.declarationError !== undefined);
  if (why.length > 0) {
    problems.push({
      path: at,
      reason: 'not-published',
      detail: `served by the tools and prompts, but not in the skill:// namespace: ${why.join('; ')}`,
    });
  }
  const description = typeof fm['description'] === 'string' ? fm['description'] : '';
  const whenRaw = fm['when_to_use'] ?? fm['when-to-use'] ?? fm['whenToUse'];
  return {
    record: {
      name: found.name,
      realDir: found.realDir,
      displayPath: at,
      frontmatter: fm,
      description,
      ...(typeof whenRaw === 'string' ? { whenToUse: whenRaw } : {}),
      ...(declaration ? { declaration } : {}),
      ...(resolved.origin ? { declarationOrigin: resolved.origin } : {}),
      files: walk.files,
      published: why.length === 0,
      skillMdDigest,
      headings: parsed.headings,
      ...(walk.states ? { fileStates: walk.states } : {}),
    },
    problems,
    ...(why.length > 0 ? { unpublished: why } : {}),
  };
}
