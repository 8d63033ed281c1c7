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
import { skillTitle } from './titles.js';

/** Like skills/list cursors (catalog/source.ts): the last name, and the list it was cut from. */
function cursorOf(list: string, name: string): string {
  return Buffer.from(`p2:${list}:${name}`).toString('base64url');
}

export function attachPrompts(mcp: McpServer, front: FrontContext): void {
  mcp.server.registerCapabilities({ prompts: { listChanged: front.watching } });
  mcp.server.setRequestHandler('prompts/list', (request) => {
    const list = front.catalog.servedFingerprint;
    const skills = front.catalog.skills();
    let start = 0;
    const cursor = request.params?.cursor;
    if (cursor !== undefined) {
      const text = Buffer.from(cursor, 'base64url').toString('utf8');
      const match = /^p2:([A-Za-z0-9_-]+):/.exec(text);
      if (!match || Buffer.from(text).toString('base64url') !== cursor)
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid cursor');
      if (match[1] !== list)
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          'The skills changed since this cursor was issued; list again from the start, without a cursor',
        );
      const after = text.slice(match[0].length);
      start = skills.findIndex((s) => s.name > after);
      if (start < 0) start = skills.length;
    }
    const slice = skills.slice(start, start + front.pageSize);
    const last = slice.at(-1);
    return {
      prompts: slice.map((s) => ({ name: s.name, title: skillTitle(s), description: s.description })),
      ...(start + front.pageSize < skills.length && last ? { nextCursor: cursorOf(list, last.name) } : {}),
    };
  });
  mcp.server.setRequestHandler('prompts/get', async (request) => {
    const name = request.params.name;
    try {
      const { body } = await loadBody(front, name);
      const record = front.requireSkill(name);
      if (Buffer.byteLength(body) > MAX_BODY_BYTES) {
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `the body of "${name}" is over ${MAX_BODY_BYTES} bytes, too large for one prompt message; use the skill_load tool`,
        );
      }
      return { description: record.description, messages: [{ role: 'user', content: { type: 'text', text: body } }] };
    } catch (error) {
      if (isSkillMcpError(error)) throw new ProtocolError(ProtocolErrorCode.InvalidParams, error.message);
      throw error;
    }
  });
}
