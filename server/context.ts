/**
 * @module What every request handler of the front shares: the catalog and what is known about
 * running scripts. Created once at start and passed in (no module-level state).
 */
import { INTERPRETERS } from '../shared/declaration.js';
import { SkillMcpError } from '../shared/errors.js';
import type { Catalog } from './catalog/catalog.js';
import type { SkillRecord } from './catalog/skill.js';

export interface Isolation {
  level: string;
  detail: string;
}

export interface FrontContext {
  catalog: Catalog;
  /** Entries per skills/list, prompts/list and directory page. */
  pageSize: number;
  isolation(): Isolation;
  /** Why scripts of this interpreter cannot run here, or undefined when they can. */
  interpreterUnavailable(interpreter: string): string | undefined;
  requireSkill(name: string): SkillRecord;
}

export function createFrontContext(catalog: Catalog, pageSize: number): FrontContext {
  return {
    catalog,
    pageSize,
    isolation: () => ({
      level: 'unavailable',
      detail: 'this build serves instructions and files only; skill_run is not offered, so no script runs',
    }),
    interpreterUnavailable: (interpreter) =>
      (INTERPRETERS as readonly string[]).includes(interpreter) ? undefined : `interpreter "${interpreter}" is not in the fixed set (${INTERPRETERS.join(', ')})`,
    requireSkill(name) {
      const record = catalog.get(name);
      if (!record) {
        const known = catalog.skills().map((s) => s.name);
        const hint = known.length > 0 ? `Served skills: ${known.slice(0, 20).join(', ')}${known.length > 20 ? ', ...' : ''}.` : 'No skill is served; skill_list shows the problems.';
        throw new SkillMcpError('UNKNOWN_SKILL', `no skill named ${JSON.stringify(name)} is served. ${hint}`);
      }
      return record;
    },
  };
}
