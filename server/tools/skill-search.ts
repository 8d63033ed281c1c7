/**
 * @module `skill_search`: the skills that best fit a plain-language request, ranked, from the
 * catalog's full-text index (search/skill-search.ts). The way into a catalog too large to list.
 */
import { checkQuery } from '../search/skill-search.js';
import type { FrontContext } from '../context.js';

export const DEFAULT_SEARCH_LIMIT = 10;
export const MAX_SEARCH_LIMIT = 50;

export function skillSearch(front: FrontContext, query: string, limit = DEFAULT_SEARCH_LIMIT): Record<string, unknown> {
  const checked = checkQuery(query);
  const results = front.catalog.search.search(checked, limit);
  return {
    query: checked,
    results,
    ...(results.length === 0 ? { hint: 'No skill matches these words. Try other words for the task, or page through skill_list.' } : {}),
  };
}
