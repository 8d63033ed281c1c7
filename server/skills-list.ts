/**
 * @module `skills/list` (SEP-2640), answered from our source's checked pages. The SDK's
 * `SkillsExtension` registers the method and, for a source it did not build, checks every entry
 * of every page again (~4 µs a resource: most of a warm walk of 5,000 skills, bench/RESULTS.md,
 * issue 31). Our entries are checked once, when built (catalog/entry-check.ts), so this replaces
 * the extension's handler with one that serves the checked page — same params schema, same
 * answer shape: the entries, `nextCursor`, and in the 2026 era the cache fields the extension
 * adds. `skills/get`, reads and directory reads stay the extension's.
 */
import type { McpServer } from '@modelcontextprotocol/server';
import { ListSkillsRequestParamsSchema, SKILLS_LIST_METHOD } from '@modelcontextprotocol/core/ext/skills';
import type { CatalogSkillSource } from './catalog/source.js';
import { withJson } from './pre-encoded.js';

/** The first protocol version of the 2026 era, whose skills/list results carry `ttlMs` and `cacheScope`. */
export const FIRST_MODERN_VERSION = '2026-07-28';

/** Lists are per identity (SKILL_MCP_VISIBLE, grants by subject): never shared between users' caches. */
export const SKILLS_CACHE_HINT = { ttlMs: 0, cacheScope: 'private' } as const;

/**
 * One skills/list result: the one function both the SDK's handler (below) and the HTTP fast path
 * (http/fast-path.ts) call, so their answers cannot drift.
 */
export async function skillsListResult(source: CatalogSkillSource, cursor: string | undefined, modern: boolean) {
  const page = await source.checkedPage(cursor);
  const extra = modern ? SKILLS_CACHE_HINT : {};
  // Its JSON is joined from the entries' own when the answer is written (pre-encoded.ts), not stringified again.
  Object.freeze(page.skills);
  return withJson({ ...page, ...extra }, (more) => source.pageJson(page, { ...extra, ...more }));
}

/** Call after the extension's `attach(mcp)`: the method is then ours. */
export function serveCheckedSkillsList(mcp: McpServer, source: CatalogSkillSource): void {
  mcp.server.setRequestHandler(SKILLS_LIST_METHOD, { params: ListSkillsRequestParamsSchema }, (params) =>
    skillsListResult(source, params.cursor, (mcp.server.getNegotiatedProtocolVersion() ?? '') >= FIRST_MODERN_VERSION),
  );
}
