/**
 * @module The MCP front: builds one `McpServer` per connection (stdio) or request (HTTP) from
 * the shared context. Tools, prompts, and the SEP-2640 skills extension over our catalog.
 */
import { McpServer } from '@modelcontextprotocol/server';
import { SkillsExtension } from '@modelcontextprotocol/server/ext/skills';
import { z } from 'zod';
import { CatalogSkillSource } from './catalog/source.js';
import type { FrontContext } from './context.js';
import { attachPrompts } from './prompts.js';
import { fromError, ok, okTextOnly } from './tools/result.js';
import { skillFile } from './tools/skill-file.js';
import { skillList } from './tools/skill-list.js';
import { skillLoad } from './tools/skill-load.js';

export const SERVER_INFO = { name: 'skill-mcp', version: '0.1.0' };

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;

export function createServerFactory(front: FrontContext, onWarning: (message: string) => void): () => McpServer {
  const extension = new SkillsExtension({
    source: new CatalogSkillSource(front.catalog, front.pageSize),
    onWarning: (w) => onWarning(`skills extension: ${w.path}: ${w.message}`),
  });
  return () => {
    const mcp = new McpServer(SERVER_INFO, {
      capabilities: { tools: {}, resources: {} },
      instructions:
        'Agent Skills served over MCP. Call skill_list to see the skills (and any problems), skill_load to read one, and skill_file to fetch the files its instructions reference.',
    });
    mcp.registerTool(
      'skill_list',
      {
        title: 'List skills',
        description: 'Lists every served skill (name, description, when to use it, file count, runnable scripts) and every problem found while scanning.',
        annotations: READ_ONLY,
      },
      async () => ok(skillList(front)),
    );
    mcp.registerTool(
      'skill_load',
      {
        title: 'Load a skill',
        description: "Returns a skill's SKILL.md body exactly as on disk and its file manifest (paths and sizes). Referenced files are fetched with skill_file.",
        inputSchema: z.object({ name: z.string().describe('The skill name as skill_list shows it') }),
        annotations: READ_ONLY,
      },
      async ({ name }) => {
        try {
          return ok(await skillLoad(front, name));
        } catch (error) {
          return fromError(error);
        }
      },
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
      async ({ name, paths }) => {
        try {
          return okTextOnly(await skillFile(front, name, paths));
        } catch (error) {
          return fromError(error);
        }
      },
    );
    attachPrompts(mcp, front);
    extension.attach(mcp);
    return mcp;
  };
}
