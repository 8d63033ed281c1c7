/**
 * @module Every served skill is also a prompt whose message is its body. A second way in, never the
 * only one: a gateway may blank prompts/list, so the tools alone give the whole experience.
 * Registered as paged handlers (not one registration per skill), so thousands of skills cost
 * nothing per connection.
 */
import { ProtocolError, ProtocolErrorCode, type McpServer } from '@modelcontextprotocol/server';
import { isSkillMcpError } from '../shared/errors.js';
import { MAX_BODY_BYTES } from '../shared/limits.js';
import type { FrontContext } from './context.js';
import { loadBody } from './tools/skill-load.js';

function cursorOf(name: string): string {
  return Buffer.from(`p1:${name}`).toString('base64url');
}

export function attachPrompts(mcp: McpServer, front: FrontContext): void {
  mcp.server.registerCapabilities({ prompts: { listChanged: false } });
  mcp.server.setRequestHandler('prompts/list', (request) => {
    const skills = front.catalog.skills();
    let start = 0;
    const cursor = request.params?.cursor;
    if (cursor !== undefined) {
      const text = Buffer.from(cursor, 'base64url').toString('utf8');
      if (!text.startsWith('p1:') || cursorOf(text.slice(3)) !== cursor) throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid cursor');
      start = skills.findIndex((s) => s.name > text.slice(3));
      if (start < 0) start = skills.length;
    }
    const slice = skills.slice(start, start + front.pageSize);
    const last = slice.at(-1);
    return {
      prompts: slice.map((s) => ({ name: s.name, description: s.description })),
      ...(start + front.pageSize < skills.length && last ? { nextCursor: cursorOf(last.name) } : {}),
    };
  });
  mcp.server.setRequestHandler('prompts/get', async (request) => {
    const name = request.params.name;
    try {
      const { body } = await loadBody(front, name);
      const record = front.requireSkill(name);
      if (Buffer.byteLength(body) > MAX_BODY_BYTES) {
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, `the body of "${name}" is over ${MAX_BODY_BYTES} bytes, too large for one prompt message; use the skill_load tool`);
      }
      return { description: record.description, messages: [{ role: 'user', content: { type: 'text', text: body } }] };
    } catch (error) {
      if (isSkillMcpError(error)) throw new ProtocolError(ProtocolErrorCode.InvalidParams, error.message);
      throw error;
    }
  });
}
