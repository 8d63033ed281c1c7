/**
 * @module Advice (level `note`): what makes a skill easier for a host to pick and a model to use,
 * never a reason it fails; and the Agent Skills specification's frontmatter fields, which other
 * hosts and validators enforce (a key outside them is a warning). Advice never recommends a key
 * outside the specification. Pure: it reads what the catalog already parsed.
 */
import type { Frontmatter } from '../../shared/frontmatter.js';
import type { Hit } from './finding.js';
import { lineCount } from './text.js';

/** Guidance for SKILL.md: a model loads all of it, so detail belongs in files it links to. */
export const SKILL_MD_MAX_LINES = 500;

/** Words that tell a host when a skill applies ("Use when...", "for X", "before committing"). */
const TRIGGER = /\b(?:when|whenever|for|if|before|after|during|while)\b/i;

export interface AdviceInput {
  /** SKILL.md's whole text. */
  text: string;
  /** The frontmatter description as the catalog read it, when it is a string. */
  description?: string;
  /** Line of the `description:` key, when known. */
  descriptionLine?: number;
  /** The frontmatter as the catalog parsed it (without an `mcp-host` block that did not parse). */
  frontmatter: Frontmatter;
  /** The frontmatter holds an `mcp-host` key (parsed or not). */
  hasFrontmatterDeclaration: boolean;
  /** Line of a top-level frontmatter key, when known. */
  lineOf(key: string): number | undefined;
}

/** The frontmatter fields the Agent Skills specification allows; strict validators and uploads refuse any other. */
export const SPEC_FIELDS = ['name', 'description', 'license', 'compatibility', 'metadata', 'allowed-tools'] as const;
/** Accepted here (this server reads it), advised away (the sidecar keeps SKILL.md valid everywhere). */
const DECLARATION_KEY = 'mcp-host';

/** Keys outside {@link SPEC_FIELDS}, and spec fields of the wrong type the catalog does not already report. */
export function specFieldHits(frontmatter: Frontmatter, lineOf: (key: string) => number | undefined): Hit[] {
  const hits: Hit[] = [];
  const at = (key: string): Partial<Hit> => {
    const line = lineOf(key);
    return line !== undefined ? { line, column: 1 } : {};
  };
  for (const key of Object.keys(frontmatter)) {
    if ((SPEC_FIELDS as readonly string[]).includes(key) || key === DECLARATION_KEY) continue;
    hits.push({
      ruleId: 'spec/frontmatter-field',
      message: `frontmatter key ${JSON.stringify(key)} is not an Agent Skills field (${SPEC_FIELDS.join(', ')}); validators and skill uploads elsewhere reject the skill. Remove it, or move it under metadata as a string`,
      ...at(key),
    });
  }
  // name, description, compatibility and metadata are checked by the catalog (server/not-published).
  for (const key of ['license', 'allowed-tools']) {
    const value = frontmatter[key];
    if (value !== undefined && typeof value !== 'string') {
      hits.push({
        ruleId: 'spec/frontmatter-field',
        message: `frontmatter ${key} must be a string${key === 'allowed-tools' ? ' (space-separated tool names)' : ''}; it is ${value === null ? 'null' : Array.isArray(value) ? 'a list' : `a ${typeof value}`}`,
        ...at(key),
      });
    }
  }
  return hits;
}

export function adviseSkill(input: AdviceInput): Hit[] {
  const hits: Hit[] = [];
  const lines = lineCount(input.text);
  if (lines > SKILL_MD_MAX_LINES) {
    hits.push({
      ruleId: 'advice/skill-md-length',
      message: `SKILL.md is ${lines.toLocaleString('en-US')} lines; keep it under ${SKILL_MD_MAX_LINES} and move detail into files it links to`,
      line: SKILL_MD_MAX_LINES + 1,
    });
  }
  if (input.description !== undefined && input.description.trim() !== '' && !TRIGGER.test(input.description)) {
    hits.push({
      ruleId: 'advice/description-trigger',
      message:
        'the description says what the skill is but not when to use it (no "when", "for", "if", "before" ... cue); hosts pick skills by it',
      ...(input.descriptionLine !== undefined ? { line: input.descriptionLine, column: 1 } : {}),
    });
  }
  if (input.hasFrontmatterDeclaration) {
    const line = input.lineOf(DECLARATION_KEY);
    hits.push({
      ruleId: 'advice/declaration-sidecar',
      message:
        'the mcp-host declaration is in the frontmatter, which the Agent Skills specification does not allow; move it into mcp-host.yaml beside SKILL.md (skill-mcp check --fix does it) so the skill stays valid for other hosts',
      ...(line !== undefined ? { line, column: 1 } : {}),
    });
  }
  hits.push(...specFieldHits(input.frontmatter, input.lineOf));
  return hits;
}
