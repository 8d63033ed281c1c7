/**
 * @module Where things are in a SKILL.md's frontmatter, by line: the catalog's problems name a key
 * ("the description is ..."), a person wants the line to edit. Only locates; never parses.
 */

/** The lines of the frontmatter (between the opening and the closing `---`), 1-based numbers. */
function frontmatterLines(text: string): { line: number; text: string }[] {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  if (!/^---[ \t]*$/.test(lines[0] ?? '')) return [];
  const out: { line: number; text: string }[] = [];
  for (let i = 1; i < lines.length && !/^---[ \t]*$/.test(lines[i]!); i++) out.push({ line: i + 1, text: lines[i]! });
  return out;
}

/** The line of a top-level `key:` in the frontmatter. */
export function keyLine(text: string, key: string): number | undefined {
  const escaped = key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = new RegExp(`^["']?${escaped}["']?[ \\t]*:`);
  return frontmatterLines(text).find((l) => pattern.test(l.text))?.line;
}

/** The first frontmatter line that mentions `needle` (a declared script's path). */
export function mentionLine(text: string, needle: string): number | undefined {
  return frontmatterLines(text).find((l) => l.text.includes(needle))?.line;
}

/** Which frontmatter key a catalog reason is about, so the finding can point at its line. */
const REASON_KEYS: [RegExp, string][] = [
  [/^the description\b/, 'description'],
  [/^the (?:frontmatter|directory) name\b/, 'name'],
  [/^frontmatter compatibility\b/, 'compatibility'],
  [/^frontmatter metadata\b/, 'metadata'],
  [/\bmcp-host\b/, 'mcp-host'],
];

export function reasonKey(reason: string): string | undefined {
  return REASON_KEYS.find(([pattern]) => pattern.test(reason))?.[1];
}
