/**
 * @module The rules a `skills/list` entry must meet before a client sees it (SEP-2640's entry shape
 * and Agent Skills' frontmatter rules), checked once per entry: an entry object is built once per
 * scan of its skill (catalog.ts) and never changed, so checking it again on every page — as the
 * SDK's extension does for a source it did not build, ~4 µs a resource, most of a warm walk of
 * 5,000 skills (bench/RESULTS.md, issue 31) — would only repeat the same answer. The catalog's
 * own publication rules (catalog/skill.ts) already keep such skills out; this is the last line
 * before the wire, so a bug there drops an entry with a warning instead of sending it.
 */
import { SKILL_DIGEST_PATTERN, SkillSchema } from '@modelcontextprotocol/core/ext/skills';
import type { Skill } from '@modelcontextprotocol/server/ext/skills';

/** Agent Skills: 1-64 lowercase letters, digits and single hyphens. */
const SKILL_NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const MAX_NAME_CHARS = 64;
const MAX_DESCRIPTION_CHARS = 1024;
const MAX_COMPATIBILITY_CHARS = 500;

const codePoints = (text: string): number => [...text].length;

/**
 * Why one `resources` item breaks the SDK's `SkillResourceEntrySchema` (a loose object: `uri` a
 * string, `digest` matching its `SKILL_DIGEST_PATTERN`, `size` a non-negative safe integer), or
 * undefined. The same rules by hand: zod takes ~4 µs an item, ~20 ms of every start on a
 * 553-skill, 4,185-file collection (bench/RESULTS.md, warm start), this a fraction of a µs.
 * test/server/entry-check.test.ts holds the two to the same verdict on every kind of bad value.
 */
export function resourceProblem(resource: unknown): string | undefined {
  if (typeof resource !== 'object' || resource === null || Array.isArray(resource)) return 'must be an object';
  const { uri, digest, size } = resource as { uri?: unknown; digest?: unknown; size?: unknown };
  if (typeof uri !== 'string') return 'uri must be a string';
  if (typeof digest !== 'string' || !SKILL_DIGEST_PATTERN.test(digest))
    return 'digest must be "sha256:" followed by 64 lowercase hexadecimal characters';
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) return 'size must be a non-negative safe integer';
  return undefined;
}

/** Why `entry` must not be listed; empty when it may. */
export function entryProblems(entry: Skill): string[] {
  // The SDK's schema for everything but the items of a resources array (given it empty: the union's
  // first branch), which resourceProblem checks.
  const items: unknown = entry.resources;
  const parsed = SkillSchema.safeParse(Array.isArray(items) ? { ...entry, resources: [] } : entry);
  if (!parsed.success) return parsed.error.issues.map((issue) => `${issue.path.join('.') || '(entry)'}: ${issue.message}`);
  if (Array.isArray(items)) {
    const bad: string[] = [];
    for (let i = 0; i < items.length; i++) {
      const why = resourceProblem(items[i]);
      if (why !== undefined) bad.push(`resources.${i}: ${why}`);
    }
    if (bad.length > 0) return bad;
  }
  const problems: string[] = [];
  const match = /^skill:\/\/([^/?#]+)\/SKILL\.md$/.exec(entry.uri);
  if (!match) return [`uri "${entry.uri}" must be skill://<name>/SKILL.md`];
  const dir = match[1]!;
  const { frontmatter } = entry;
  const name = frontmatter.name;
  if (name.length > MAX_NAME_CHARS || !SKILL_NAME.test(name))
    problems.push(`frontmatter name "${name}" must be 1-64 lowercase letters, digits and single hyphens`);
  else if (name !== dir) problems.push(`frontmatter name "${name}" must match the directory "${dir}"`);
  const description = frontmatter.description;
  if (description === '' || codePoints(description) > MAX_DESCRIPTION_CHARS)
    problems.push('frontmatter description must be 1-1024 characters');
  const compatibility = frontmatter['compatibility'];
  if (
    compatibility !== undefined &&
    (typeof compatibility !== 'string' || compatibility === '' || codePoints(compatibility) > MAX_COMPATIBILITY_CHARS)
  ) {
    problems.push('frontmatter compatibility must be a string of 1-500 characters');
  }
  const metadata = frontmatter['metadata'];
  if (
    metadata !== undefined &&
    (metadata === null ||
      typeof metadata !== 'object' ||
      Array.isArray(metadata) ||
      !Object.values(metadata).every((v) => typeof v === 'string'))
  ) {
    problems.push('frontmatter metadata must map strings to strings');
  }
  if (entry.resources !== 'dynamic') {
    // Security: an entry names only files of its own skill, each once, and its own SKILL.md.
    const inside = `skill://${dir}/`;
    const seen = new Set<string>();
    for (const resource of entry.resources) {
      if (!resource.uri.startsWith(inside) || /[?#]/.test(resource.uri))
        problems.push(`resource "${resource.uri}" is not a file of skill://${dir}`);
      else if (seen.has(resource.uri)) problems.push(`resource "${resource.uri}" is listed more than once`);
      seen.add(resource.uri);
    }
    if (!seen.has(entry.uri)) problems.push(`resources must include ${entry.uri}`);
  }
  return problems;
}
