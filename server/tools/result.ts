/**
 * @module How tools answer: the JSON value as text (what every model reads) and as
 * `structuredContent` (what programs read). A refusal is an `isError` result whose message says
 * what was refused and what would make it work — never an exception with a host path in it.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { isSkillMcpError } from '../../shared/errors.js';

export function ok(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }], structuredContent: value };
}

/**
 * The JSON value as text only. For answers that carry file bodies: a copy in `structuredContent`
 * would double a 4 MiB batch past the 10 MiB line limit of the SDK's own stdio client.
 */
export function okTextOnly(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }] };
}

export function refuse(code: string, message: string, extra: Record<string, unknown> = {}): CallToolResult {
  const value = { error: { code, message }, ...extra };
  return { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }], structuredContent: value, isError: true };
}

/**
 * Turns our errors into refusals; anything else is an internal error: the details go to stderr
 * (the operator's side), never to the model.
 */
export function fromError(error: unknown): CallToolResult {
  if (isSkillMcpError(error)) return refuse(error.code, error.message);
  process.stderr.write(
    `skill-mcp: internal error in a tool call: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  return refuse('INTERNAL', 'internal error; the server log on stderr has the details');
}

/** Runs a tool body; anything it throws becomes a refusal (ours) or a safe internal error. */
export async function guarded(work: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await work();
  } catch (error) {
    return fromError(error);
  }
}
