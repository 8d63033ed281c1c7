/**
 * @module What `skill-mcp check` reports: one finding per problem, located as precisely as the rule
 * can (a file always; a line and column when the rule knows them). Paths are relative to the
 * directory check was run from, `/`-separated, never absolute.
 */

/** SARIF's levels, in decreasing weight. Advice is a `note`. */
export type Level = 'error' | 'warning' | 'note';

export interface Finding {
  ruleId: string;
  level: Level;
  message: string;
  /** Relative to the working directory, `/`-separated. */
  path: string;
  /** 1-based. */
  line?: number;
  /** 1-based, in UTF-16 code units (SARIF's default column kind, what editors show). */
  column?: number;
  /** The served name of the skill the finding belongs to, when it belongs to one. */
  skill?: string;
}

/** A finding's place inside a file, before the file's path and the skill are attached. */
export interface Hit {
  ruleId: string;
  message: string;
  line?: number;
  column?: number;
}

/** Sorts findings by place, then rule: output is stable from run to run. */
export function sortFindings(findings: Finding[]): Finding[] {
  const key = (f: Finding): [string, number, number, string] => [f.path, f.line ?? 0, f.column ?? 0, f.ruleId];
  return findings.sort((a, b) => {
    const [pa, la, ca, ra] = key(a);
    const [pb, lb, cb, rb] = key(b);
    if (pa !== pb) return pa < pb ? -1 : 1;
    if (la !== lb) return la - lb;
    if (ca !== cb) return ca - cb;
    return ra < rb ? -1 : ra > rb ? 1 : 0;
  });
}

/** At most this many findings of one rule in one file; the rest are counted in one last finding. */
export const MAX_HITS_PER_RULE_AND_FILE = 20;

/**
 * Caps each rule's hits in one file so a file full of one problem cannot bury the rest; the
 * dropped ones are never silent: the last kept hit of that rule says how many more there are.
 */
export function capHits(hits: Hit[]): Hit[] {
  const byRule = new Map<string, Hit[]>();
  for (const hit of hits) {
    const group = byRule.get(hit.ruleId);
    if (group) group.push(hit);
    else byRule.set(hit.ruleId, [hit]);
  }
  const kept: Hit[] = [];
  for (const group of byRule.values()) {
    if (group.length <= MAX_HITS_PER_RULE_AND_FILE) {
      kept.push(...group);
      continue;
    }
    const shown = group.slice(0, MAX_HITS_PER_RULE_AND_FILE);
    const last = shown[shown.length - 1]!;
    shown[shown.length - 1] = {
      ...last,
      message: `${last.message} (and ${group.length - MAX_HITS_PER_RULE_AND_FILE} more of this rule in this file, not listed)`,
    };
    kept.push(...shown);
  }
  return kept;
}
