/**
 * @module The MCP front: builds one `McpServer` per connection (stdio) or request (HTTP) from
 * the shared context. Tools, prompts, and the SEP-2640 skills extension over our catalog.
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  McpServer,
  type AuthInfo,
  type McpRequestContext,
  type CallToolResult,
  type ClientCapabilities,
  type ServerContext,
  type ServerOptions,
} from '@modelcontextprotocol/server';
import { SkillsExtension } from '@modelcontextprotocol/server/ext/skills';
import { identityOfAuth } from './auth/resource-server.js';
import { visibleFront } from './auth/visible-catalog.js';
import { CatalogSkillSource } from './catalog/source.js';
import type { FrontContext } from './context.js';
import type { ClientElicitation } from './confirm/settings.js';
import { attachPrompts } from './prompts.js';
import { serveSkillReads } from './skill-read.js';
import { SKILLS_CACHE_HINT, serveCheckedSkillsList } from './skills-list.js';
import { toolDefinitions } from './tools/definitions.js';
import { guarded, ok, okTextOnly } from './tools/result.js';
import { skillFile } from './tools/skill-file.js';
import { skillList } from './tools/skill-list.js';
import { skillLoad } from './tools/skill-load.js';
import { skillRun } from './tools/skill-run.js';
import { skillDataClear } from './tools/skill-data-clear.js';
import { skillSearch } from './tools/skill-search.js';
import { SERVER_INFO } from './identity.js';

export { SERVER_INFO } from './identity.js';

const INSTRUCTIONS =
  'Agent Skills served over MCP. Call skill_list to see the skills (and any problems) a page at a time, skill_search to find the skills that fit a task in a large catalog, skill_load to read one, skill_file to fetch the files its instructions reference, skill_run to run a script a skill declares (always after the person approves that exact run), and skill_data_clear to empty the caller’s own data folder of a skill (after the person confirms).';

/** Which elicitation modes the client declared (2026: per request; 2025: at initialize). */
function elicitationModes(mcp: McpServer, ctx: ServerContext): ClientElicitation {
  const fromEnvelope = (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] as
    | ClientCapabilities
    | undefined;
  const elicitation = (fromEnvelope ?? mcp.server.getClientCapabilities())?.elicitation as Record<string, unknown> | undefined;
  if (elicitation === undefined) return { form: false, url: false };
  // An empty object is the 2025-06 spelling of "form elicitation".
  return { form: elicitation['form'] !== undefined || Object.keys(elicitation).length === 0, url: elicitation['url'] !== undefined };
}

/** What a request reads the skills through: its identity's view of the front, and that view's skill source. */
export interface SkillReads {
  front: FrontContext;
  source: CatalogSkillSource;
  extension: SkillsExtension;
}

/**
 * The reads for a request's `authInfo`: the one way both the per-request `McpServer` (below) and
 * the HTTP fast path (http/fast-path.ts) pick what a caller sees. Without limited skills every
 * caller shares the base's source (and its per-entry check cache); with them each request gets
 * its identity's view, built fresh as before.
 */
export function skillReadsFor(base: FrontContext, onWarning: (message: string) => void): (authInfo: AuthInfo | undefined) => SkillReads {
  const reads = (front: FrontContext): SkillReads => {
    const source = new CatalogSkillSource(front.catalog, front.pageSize, front.skillsPageSize, (uri, problems) =>
      onWarning(`skills extension: ${uri}: invalid skill entry: ${problems.join('; ')} (dropped from skills/list)`),
    );
    const extension = new SkillsExtension({
      source,
      cacheHint: SKILLS_CACHE_HINT,
      onWarning: (w) => onWarning(`skills extension: ${w.path}: ${w.message}`),
    });
    return { front, source, extension };
  };
  const shared = reads(base);
  return (authInfo) => {
    // Security: with skills limited to some identities, this request sees only its own view of the catalog.
    const front = visibleFront(base, identityOfAuth(authInfo));
    return front === base ? shared : reads(front);
  };
}

/**
 * @param onServer told of every server built (stdio tracks its connection's server to announce
 * catalog changes on it; HTTP servers live for one request and are not tracked)
 * @param onToolResult hears each tool's result (the HTTP front's metrics); it must not change it
 * @param readsFor pass the HTTP front's own, which its fast path shares
 */
export function createServerFactory(
  base: FrontContext,
  onWarning: (message: string) => void,
  onServer: (mcp: McpServer) => void = () => undefined,
  onToolResult?: (tool: string, result: CallToolResult) => void,
  readsFor = skillReadsFor(base, onWarning),
): (request?: McpRequestContext) => McpServer {
  // Built once, not per server (per request over HTTP): the declarations and the options hold
  // nothing per caller — every view of the front shares the base's watching flag and approval codec.
  const tools = toolDefinitions(base);
  const options: ServerOptions = {
    // listChanged: the catalog follows its folders (catalog/live.ts) and says when it changed.
    capabilities: { tools: {}, resources: { listChanged: base.watching } },
    requestState: { verify: (state, ctx) => base.approvalCodec.verify(state, ctx) },
    instructions: INSTRUCTIONS,
  };
  return (request) => {
    const { front, source, extension } = readsFor(request?.authInfo);
    const mcp = new McpServer(SERVER_INFO, options);
    mcp.registerTool('skill_list', tools.skill_list, ({ cursor, limit, problems }, ctx) =>
      guarded(async () => ok(await skillList(front, { cursor, limit, problems, identity: front.identityOf(ctx) }))),
    );
    mcp.registerTool('skill_search', tools.skill_search, ({ query, limit }) => guarded(async () => ok(skillSearch(front, query, limit))));
    // Text only: a copy of a long body in structuredContent would double the message.
    mcp.registerTool('skill_load', tools.skill_load, ({ name }) => guarded(async () => okTextOnly(await skillLoad(front, name))));
    mcp.registerTool('skill_file', tools.skill_file, ({ name, paths }) =>
      guarded(async () => okTextOnly(await skillFile(front, name, paths))),
    );
    mcp.registerTool('skill_run', tools.skill_run, async ({ name, script, args, confirmToken, files, stdin }, ctx) => {
      const result = await guarded(() =>
        skillRun(front, { name, script, args, confirmToken, files, stdin }, ctx, elicitationModes(mcp, ctx)),
      );
      onToolResult?.('skill_run', result);
      return result;
    });
    mcp.registerTool('skill_data_clear', tools.skill_data_clear, async ({ name, confirmToken }, ctx) =>
      guarded(() => skillDataClear(front, { name, confirmToken }, ctx, elicitationModes(mcp, ctx))),
    );
    attachPrompts(mcp, front);
    extension.attach(mcp);
    serveCheckedSkillsList(mcp, source);
    onServer(mcp);
    serveSkillReads(mcp, source);
    return mcp;
  };
}
