/**
 * @module What the six tools declare (title, description, input schema, annotations), built once
 * per process rather than once per `McpServer`. Over HTTP the stateless 2026-07-28 era builds a
 * server for every request; building these zod schemas (with their `.describe()` clones) there was
 * 13 % of a small request's CPU and fed the GC (bench/RESULTS.md, issue 31). The declarations hold
 * nothing per caller: who may see or run what is decided by the handlers, from the request's front.
 */
import { requireScopes } from '@modelcontextprotocol/server';
import * as z from 'zod';
import { MAX_INPUT_FILES } from '../../shared/run-io.js';
import { MAX_QUERY_CHARS } from '../search/skill-search.js';
import { fileInputSchema } from './run-inputs.js';
import { frozenJsonSchema } from './schema-cache.js';
import { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT } from './skill-list.js';
import { DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT } from './skill-search.js';
import { SCOPES } from '../auth/settings.js';

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;
/** The truth about skill_run: it runs third-party code that may change anything and reach anywhere. */
const RUNS_CODE = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true } as const;

/** The limits a description names; the same for every caller of one process. */
export interface ToolLimits {
  /** Bytes of input files and stdin one run may carry (SKILL_MCP_RUN_INPUT_BYTES). */
  runInputBytes: number;
}

/** The six tools' declarations; pass each to `registerTool` as it is (nothing here is mutated there). */
export function toolDefinitions(limits: ToolLimits) {
  return {
    skill_list: {
      title: 'List skills',
      description:
        'Lists the served skills a page at a time (name, description, when to use it, file count, runnable scripts), with total, nextCursor and the problems found while scanning. For a large catalog, find skills with skill_search instead of paging through all of them.',
      inputSchema: frozenJsonSchema(
        z.object({
          cursor: z.string().optional().describe('nextCursor from the previous page; omit for the first page'),
          limit: z
            .number()
            .int()
            .min(1)
            .max(MAX_LIST_LIMIT)
            .optional()
            .describe(
              `Skills per page (default ${DEFAULT_LIST_LIMIT}, at most ${MAX_LIST_LIMIT}; a page also ends at about 24,000 characters)`,
            ),
          problems: z.boolean().optional().describe('true: page through every scanning problem instead of the skills'),
        }),
      ),
      annotations: READ_ONLY,
    },
    skill_search: {
      title: 'Search skills',
      description:
        'Finds the skills that fit a task, ranked: searches names, descriptions, when-to-use notes and SKILL.md headings, matching word stems, prefixes and small typos. Describe the task in plain words, e.g. "fill in a form inside a PDF". Returns {name, description, whenToUse, score}; load the best with skill_load.',
      inputSchema: frozenJsonSchema(
        z.object({
          query: z.string().describe(`What the task is about, in plain words (at most ${MAX_QUERY_CHARS} characters)`),
          limit: z
            .number()
            .int()
            .min(1)
            .max(MAX_SEARCH_LIMIT)
            .optional()
            .describe(`How many skills to return (default ${DEFAULT_SEARCH_LIMIT}, at most ${MAX_SEARCH_LIMIT})`),
        }),
      ),
      annotations: READ_ONLY,
    },
    skill_load: {
      title: 'Load a skill',
      description:
        "Returns a skill's SKILL.md body exactly as on disk and its file manifest (paths and sizes). Referenced files are fetched with skill_file.",
      inputSchema: frozenJsonSchema(z.object({ name: z.string().describe('The skill name as skill_list shows it') })),
      annotations: READ_ONLY,
    },
    skill_file: {
      title: 'Read skill files',
      description:
        "Reads up to 8 files of a skill in one call, in request order: text, or base64 with a media type, or that path's own error. At most 1 MiB per file (larger files come back with truncated: true) and 4 MiB per call.",
      inputSchema: frozenJsonSchema(
        z.object({
          name: z.string().describe('The skill name'),
          paths: z.array(z.string()).describe('Paths inside the skill, as skill_load lists them (1 to 8)'),
        }),
      ),
      annotations: READ_ONLY,
    },
    skill_run: {
      title: 'Run a skill script',
      description:
        "Runs a script the skill declares (and the owner granted), in the runner's sandbox, after a person approves that exact run. Without an in-client prompt the first call runs nothing and returns a preview and a confirmToken; call again with the same arguments (files and stdin included) and the token to run it once. " +
        'The script starts in a fresh, empty, writable working directory; the skill\'s own files are read-only (SKILL_DIR). To give it files, send files: [{"path": "form.pdf", "base64": "…"}, {"path": "in/notes.txt", "text": "…"}] and name them in args by those relative paths; stdin is a string. ' +
        'Returns {exitCode, signal, stdout, stderr, truncated, timedOut, durationMs, files}; every file the script created or changed in that directory is listed in files [{path, size, sha256}] and comes back as an embedded resource skill-run://<runId>/<path> (one past the output budget is listed with omitted and the reason). A run with declared network destinations also returns egress {refused: [{host, port, reason, count}], refusedCount, refusedUnlisted, allowedCount}: the connections its egress proxy refused (not declared or granted, a name resolving to a private address, ...), also named in one line of text. A non-zero exit is a normal result.',
      inputSchema: frozenJsonSchema(
        z.object({
          name: z.string().describe('The skill name'),
          script: z.string().describe('The script path exactly as the skill declares it (skill_list shows them)'),
          args: z.array(z.string()).default([]).describe('Arguments, passed exactly as given (no shell)'),
          confirmToken: z.string().optional().describe('The token from the preview, after the person approved it'),
          files: z
            .array(fileInputSchema)
            .optional()
            .describe(
              `Input files written into the run's working directory before it starts (at most ${MAX_INPUT_FILES}; ${limits.runInputBytes} bytes in all with stdin)`,
            ),
          stdin: z.string().optional().describe('Text the script reads on its standard input (default: none)'),
        }),
      ),
      annotations: RUNS_CODE,
      // Security: an OAuth token without skills:run is refused before the tool runs (403
      // insufficient_scope naming the scope, so the client can ask for it); stdio has no token.
      scopeChallenge: requireScopes(SCOPES.run),
    },
    skill_data_clear: {
      title: 'Empty my data folder of a skill',
      description:
        'Empties the caller\'s own data folder of a skill: the files its scripts keep between runs (skill_list shows each skill\'s folder and what it holds as data.used). Only your own folder — the one your runs of that skill get — and only for a skill whose scripts are granted to you. A person confirms it first, as a run: in the client, or (without a prompt) the first call removes nothing and returns a preview and a confirmToken; call again with the same name and the token once the person agreed. Returns {status: "cleared", folder, removed: {bytes, entries}, left: {bytes, entries}}; BUSY while a run of that folder is in progress (nothing removed, the token still holds).',
      inputSchema: frozenJsonSchema(
        z.object({
          name: z.string().describe('The skill name as skill_list shows it'),
          confirmToken: z.string().optional().describe('The token from the preview, after the person confirmed it'),
        }),
      ),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      // Security: as skill_run, the run scope: clearing is a change made by running things, not a read.
      scopeChallenge: requireScopes(SCOPES.run),
    },
  };
}

export type ToolDefinitions = ReturnType<typeof toolDefinitions>;
