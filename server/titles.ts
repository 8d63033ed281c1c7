/**
 * @module The human-readable `title` every prompt, resource and the resource template carries (MCP
 * BaseMetadata: `name` is for programs, `title` for people). A skill's title is its SKILL.md's
 * first heading (`# PDF Processing Guide`), else its name in words (`commit-message` → "Commit
 * message"); its files are titled by skill and path. Pure.
 */

/** A title is a label, not a paragraph: longer ones are cut, and said to be with "…". */
export const MAX_TITLE_CHARS = 100;

function cut(text: string): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > MAX_TITLE_CHARS ? `${one.slice(0, MAX_TITLE_CHARS - 1)}…` : one;
}

/** The title of a skill (its prompt, its SKILL.md resource). */
export function skillTitle(skill: { name: string; headings: readonly string[] }): string {
  const heading = skill.headings[0] === undefined ? '' : cut(skill.headings[0].replace(/[*_`]/g, ''));
  if (heading !== '') return heading;
  const words = skill.name.replace(/[-_]+/g, ' ').trim();
  return cut(words.charAt(0).toUpperCase() + words.slice(1));
}

/** The title of one of a skill's files or folders (a directory entry): `pdf: scripts/fill_fillable_fields.py`. */
export function fileTitle(skill: string, path: string): string {
  return cut(`${skill}: ${path}`);
}

/** The skill-file template's name and description in words (the SDK registers it with neither). */
export const TEMPLATE_TITLE = 'Agent Skill files';
export const TEMPLATE_DESCRIPTION =
  "Any file of a published skill, by the skill's name and the file's path in it: skill://<name>/<path> (SKILL.md is the skill itself; resources/directory/read lists a folder).";
