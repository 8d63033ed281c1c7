/**
 * @module Which skills an identity sees (`SKILL_MCP_VISIBLE`, docs/hosting.md): a JSON list of
 * `{"skill": "<name>", "subjects": ["<sub>", "group:<g>", ...]}`. A skill named there is visible
 * only to the identities its row names; a skill not named is visible to everyone. An invisible
 * skill is NOT_FOUND (UNKNOWN_SKILL) and absent from every list, search, resource and prompt for
 * that identity. Pure: the front filters with it, the runner re-checks every run with it.
 */
import { z } from 'zod';
import { rowApplies, type Caller } from './grant.js';

export interface VisibilityRule {
  skill: string;
  subjects: string[];
}

export type Visibility = { ok: true; rules: ReadonlyMap<string, VisibilityRule[]> } | { ok: false; error: string };

const RuleSchema = z.strictObject({ skill: z.string().min(1), subjects: z.array(z.string().min(1).max(262)).min(1).max(1000) });

/** Reads `SKILL_MCP_VISIBLE`. Security: a malformed value is an error (the front refuses to start), never "all visible". */
export function readVisibility(env: Readonly<Record<string, string | undefined>>): Visibility {
  const raw = env['SKILL_MCP_VISIBLE'];
  if (raw === undefined || raw === '') return { ok: true, rules: new Map() };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { ok: false, error: 'SKILL_MCP_VISIBLE is not valid JSON' };
  }
  const parsed = z.array(RuleSchema).safeParse(value);
  if (!parsed.success)
    return {
      ok: false,
      error:
        'SKILL_MCP_VISIBLE must be a JSON array of {"skill": "<name>", "subjects": ["<sub>" or "group:<g>", ...]} with at least one subject each',
    };
  const rules = new Map<string, VisibilityRule[]>();
  for (const rule of parsed.data) rules.set(rule.skill, [...(rules.get(rule.skill) ?? []), rule]);
  return { ok: true, rules };
}

/**
 * Whether `caller` sees `skill`. Security: a limited skill is seen only by a verified identity a
 * rule names (by `sub` or `group:<g>`); a caller without an identity (stdio, the static token)
 * does not see it. ANY_CALLER (the runner's describe) sees everything.
 */
export function visibleTo(visibility: Visibility, skill: string, caller: Caller): boolean {
  if (!visibility.ok) return false;
  const rules = visibility.rules.get(skill);
  if (rules === undefined) return true;
  return rules.some((rule) => rowApplies({ skill, script: '', env: [], egress: [], subjects: rule.subjects }, caller));
}

/** True when some skill is limited (the front then builds a per-identity view of its catalog). */
export function limitsAny(visibility: Visibility): boolean {
  return !visibility.ok || visibility.rules.size > 0;
}
