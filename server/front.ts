/**
 * @module The MCP front: builds one `McpServer` per connection (stdio) or request (HTTP) from
 * the shared context. Tools, prompts, and the SEP-2640 skills extension over our catalog.
 */
import { CLIENT_CAPABILITIES_META_KEY, McpServer, requireScopes, type McpRequestContext, type CallToolResult, type ClientCapabilities, type ServerContext } from '@modelcontextprotocol/server';
import { SkillsExtension } from '@modelcontextprotocol/server/ext/skills';
import * as z from 'zod';
import { identityOfAuth } from './auth/resource-server.js';
import { SCOPES } from './auth/settings.js';
import { visibleFront } from './auth/visible-catalog.js';
import { CatalogSkillSource } from './catalog/source.js';
import type { FrontContext } from './context.js';
import type { ClientElicitation } from './confirm/settings.js';
import { attachPrompts } from './prompts.js';
import { serveSkillReads } from './skill-read.js';
import { SKILLS_CACHE_HINT, serveCheckedSkillsList } from './skills-list.js';
import { guarded, ok, okTextOnly } from './tools/result.js';
import { skillFile } from './tools/skill-file.js';
import { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, skillList } from './tools/skill-list.js';
import { skillLoad } from './tools/skill-load.js';
import { skillRun } from './tools/skill-run.js';
import { fileInputSchema } from './tools/run-inputs.js';
import { MAX_INPUT_FILES } from '../shared/run-io.js';
import { DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, skillSearch } from './tools/skill-search.js';
import { MAX_QUERY_CHARS } from './search/skill-search.js';

export const SERVER_INFO = { name: 'skill-mcp', version: '0.1.0' };

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;
/** The truth about skill_run: it runs third-party code that may change anything and reach anywhere. */
const RUNS_CODE = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true } as const;

/** Which elicitation modes the client declared (2026: per request; 2025: at initialize). */
function elicitationModes(mcp: McpServer, ctx: ServerContext): ClientElicitation {
  const fromEnvelope = (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined;
  const elicitation = (fromEnvelope ?? mcp.server.getClientCapabilities())?.elicitation as Record<string, unknown> | undefined;
  if (elicitation === undefined) return { form: false, url: false };
  // An empty object is the 2025-06 spelling of "form elicitation".
  return { form: elicitation['form'] !== undefined || Object.keys(elicitation).length === 0, url: elicitation['url'] !== undefined };
}

/**
 * @param onServer told of every server built (stdio tracks its connection's server to announce
 * catalog changes on it; HTTP servers live for one request and are not tracked)
 * @param onToolResult hears each tool's result (the HTTP front's metrics); it must not change it
 */
export function createServerFactory(base: FrontContext, onWarning: (message: string) => void, onServer: (mcp: McpServer) => void = () => undefined, onToolResult?: (tool: string, result: CallToolResult) => void): (request?: McpRequestContext) => McpServer {
  const reads = (front: FrontContext): { source: CatalogSkillSource; extension: SkillsExtension } => {
    const source = new CatalogSkillSource(front.catalog, front.pageSize, front.skillsPageSize, (uri, problems) => onWarning(`skills extension: ${uri}: invalid skill entry: ${problems.join('; ')} (dropped from skills/list)`));
    const extension = new SkillsExtension({ source, cacheHint: SKILLS_CACHE_HINT, onWarning: (w) => onWarning(`skills extension: ${w.path}: ${w.message}`) });
    return { source, extension };
  };
  const shared = reads(base);
  return (request) => {
    // Security: with skills limited to some identities, this request sees only its own view of the catalog.
    const front = visibleFront(base, identityOfAuth(request?.authInfo));
    const { source, extension } = front === base ? shared : reads(front);
    const mcp = new McpServer(SERVER_INFO, {
      // listChanged: the catalog follows its folders (catalog/live.ts) and says when it changed.
      capabilities: { tools: {}, resources: { listChanged: front.watching } },
      requestState: { verify: (state, ctx) => front.approvalCodec.verify(state, ctx) },
      instructions:
        'Agent Skills served over MCP. Call skill_list to see the skills (and any problems) a page at a time, skill_search to find the skills that fit a task in a large catalog, skill_load to read one, skill_file to fetch the files its instructions reference, and skill_run to run a script a skill declares (always after the person approves that exact run).',
    });
    mcp.registerTool(
      'skill_list',
      {
        title: 'List skills',
        description:
          `Lists the served skills a page at a time (name, description, when to use it, file count, runnable scripts), with total, nextCursor and the problems found while scanning. For a large catalog, find skills with skill_search instead of paging through all of them.`,
        inputSchema: z.object({
          cursor: z.string().optional().describe('nextCursor from the previous page; omit for the first page'),
          limit: z.number().int().min(1).max(MAX_LIST_LIMIT).optional().describe(`Skills per page (default ${DEFAULT_LIST_LIMIT}, at most ${MAX_LIST_LIMIT}; a page also ends at about 24,000 characters)`),
          problems: z.boolean().optional().describe('true: page through every scanning problem instead of the skills'),
        }),
        annotations: READ_ONLY,
      },
      ({ cursor, limit, problems }, ctx) => guarded(async () => ok(await skillList(front, { cursor, limit, problems, identity: front.identityOf(ctx) }))),
    );
    mcp.registerTool(
      'skill_search',
      {
        title: 'Search skills',
        description:
          'Finds the skills that fit a task, ranked: searches names, descriptions, when-to-use notes and SKILL.md headings, matching word stems, prefixes and small typos. Describe the task in plain words, e.g. "fill in a form inside a PDF". Returns {name, description, whenToUse, score}; load the best with skill_load.',
        inputSchema: z.object({
          query: z.string().describe(`What the task is about, in plain words (at most ${MAX_QUERY_CHARS} characters)`),
          limit: z.number().int().min(1).max(MAX_SEARCH_LIMIT).optional().describe(`How many skills to return (default ${DEFAULT_SEARCH_LIMIT}, at most ${MAX_SEARCH_LIMIT})`),
        }),
        annotations: READ_ONLY,
      },
      ({ query, limit }) => guarded(async () => ok(skillSearch(front, query, limit))),
    );
    mcp.registerTool(
      'skill_load',
      {
        title: 'Load a skill',
        description: "Returns a skill's SKILL.md body exactly as on disk and its file manifest (paths and sizes). Referenced files are fetched with skill_file.",
        inputSchema: z.object({ name: z.string().describe('The skill name as skill_list shows it') }),
        annotations: READ_ONLY,
      },
      // Text only: a copy of a long body in structuredContent would double the message.
      ({ name }) => guarded(async () => okTextOnly(await skillLoad(front, name))),
    );
    mcp.registerTool(
      'skill_file',
      {
        title: 'Read skill files',
        description:
          'Reads up to 8 files of a skill in one call, in request order: text, or base64 with a media type, or that path\'s own error. At most 1 MiB per file (larger files come back with truncated: true) and 4 MiB per call.',
        inputSchema: z.object({
          name: z.string().describe('The skill name'),
          paths: z.array(z.string()).describe('Paths inside the skill, as skill_load lists them (1 to 8)'),
        }),
        annotations: READ_ONLY,
      },
      ({ name, paths }) => guarded(async () => okTextOnly(await skillFile(front, name, paths))),
    );
    mcp.registerTool(
      'skill_run',
      {
        title: 'Run a skill script',
        description:
          "Runs a script the skill declares (and the owner granted), in the runner's sandbox, after a person approves that exact run. Without an in-client prompt the first call runs nothing and returns a preview and a confirmToken; call again with the same arguments (files and stdin included) and the token to run it once. " +
          'The script starts in a fresh, empty, writable working directory; the skill\'s own files are read-only (SKILL_DIR). To give it files, send files: [{"path": "form.pdf", "base64": "…"}, {"path": "in/notes.txt", "text": "…"}] and name them in args by those relative paths; stdin is a string. ' +
          'Returns {exitCode, signal, stdout, stderr, truncated, timedOut, durationMs, files}; every file the script created or changed in that directory is listed in files [{path, size, sha256}] and comes back as an embedded resource skill-run://<runId>/<path> (one past the output budget is listed with omitted and the reason). A run with declared network destinations also returns egress {refused: [{host, port, reason, count}], refusedCount, refusedUnlisted, allowedCount}: the connections its egress proxy refused (not declared or granted, a name resolving to a private address, ...), also named in one line of text. A non-zero exit is a normal result.',
        inputSchema: z.object({
          name: z.string().describe('The skill name'),
          script: z.string().describe('The script path exactly as the skill declares it (skill_list shows them)'),
          args: z.array(z.string()).default([]).describe('Arguments, passed exactly as given (no shell)'),
          confirmToken: z.string().optional().describe('The token from the preview, after the person approved it'),
          files: z.array(fileInputSchema).optional().describe(`Input files written into the run's working directory before it starts (at most ${MAX_INPUT_FILES}; ${front.runInputBytes} bytes in all with stdin)`),
          stdin: z.string().optional().describe('Text the script reads on its standard input (default: none)'),
        }),
        annotations: RUNS_CODE,
        // Security: an OAuth token without skills:run is refused before the tool runs (403
        // insufficient_scope naming the scope, so the client can ask for it); stdio has no token.
        scopeChallenge: requireScopes(SCOPES.run),
      },
      async ({ name, script, args, confirmToken, files, stdin }, ctx) => {
        const result = await guarded(() => skillRun(front, { name, script, args, confirmToken, files, stdin }, ctx, elicitationModes(mcp, ctx)));
        onToolResult?.('skill_run', result);
        return result;
      },
    );
    attachPrompts(mcp, front);
    extension.attach(mcp);
    serveCheckedSkillsList(mcp, source);
    onServer(mcp);
    serveSkillReads(mcp, source);
    return mcp;
  };
}
