/**
 * @module Advice (level `note`): what makes a skill easier for a host to pick and a model to use,
 * never a reason it fails. Pure: it reads what the catalog already parsed.
 */
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
  /** The catalog found a when_to_use hint (when_to_use, when-to-use or whenToUse). */
  hasWhenToUse: boolean;
}

export function adviseSkill(input: AdviceInput): Hit[] {
  const hits: Hit[] = [];
  const lines = lineCount(input.text);
  if (lines > SKILL_MD_MAX_LINES) {
    hits.push({ ruleId: 'advice/skill-md-length', message: `SKILL.md is ${lines.toLocaleString('en-US')} lines; keep it under ${SKILL_MD_MAX_LINES} and move detail into files it links to`, line: SKILL_MD_MAX_LINES + 1 });
  }
  if (input.description !== undefined && input.description.trim() !== '' && !TRIGGER.test(input.description)) {
    hits.push({
      ruleId: 'advice/description-trigger',
      message: 'the description says what the skill is but not when to use it (no "when", "for", "if", "before" ... cue); hosts pick skills by it',
      ...(input.descriptionLine !== undefined ? { line: input.descriptionLine, column: 1 } : {}),
    });
  }
  if (!input.hasWhenToUse) {
    hits.push({ ruleId: 'advice/when-to-use', message: 'no when_to_use hint in the frontmatter; skill_list shows it to models as whenToUse', line: 1, column: 1 });
  }
  return hits;
}
