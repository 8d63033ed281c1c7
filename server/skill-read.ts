/**
 * @module `resources/read` for `skill://`, served by us rather than by the SDK's skills extension
 * (which keeps `skills/list`, `skills/get`, `resources/directory/read`, `resources/list` and the
 * resource template). Same source, same checks, same answers and errors; the one difference is how
 * a binary file becomes base64: the extension encodes blobs with a portable
 * `String.fromCodePoint(...)` + `btoa` loop, ~60-160 ms and ~25 MB of garbage per MiB
 * (bench/RESULTS.md), where Node's `Buffer#toString('base64')` takes ~1 ms.
 */
import {
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  type McpServer,
  type ReadResourceResult,
} from '@modelcontextprotocol/server';
import { SKILLS_EXTENSION_ID } from '@modelcontextprotocol/server/ext/skills';
import type { CatalogSkillSource } from './catalog/source.js';
import { TEMPLATE_DESCRIPTION, TEMPLATE_TITLE } from './titles.js';

/** The scheme every skill resource is under (the extension's base root). */
const SKILL_URI_SCHEME = 'skill://';

/**
 * The result of reading `uriText` through `source`: the one function both the SDK's handler
 * (below) and the HTTP fast path (http/fast-path.ts) call, so their answers cannot drift. Nothing
 * but skills is a resource here, so a URI the source does not serve is not found, exactly as the
 * SDK answers: -32602 in both eras. Throws the SDK's protocol errors.
 */
export async function readSkillResource(source: CatalogSkillSource, uriText: string): Promise<ReadResourceResult> {
  let uri: URL;
  try {
    uri = new URL(uriText);
  } catch {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Resource URI ${uriText} is invalid`, { uri: uriText, reason: 'invalid_uri' });
  }
  // As the SDK does: the URL's normalized form is what is looked up and what the answer names.
  const result = await source.read(uri.href);
  if (result === undefined) throw new ResourceNotFoundError(uri.href);
  const mimeType = result.mimeType === undefined ? {} : { mimeType: result.mimeType };
  if ('text' in result) return { contents: [{ uri: uri.href, ...mimeType, text: result.text }] };
  const { bytes } = result;
  const blob = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  return { contents: [{ uri: uri.href, ...mimeType, blob }] };
}

/**
 * Takes over `resources/read` on `mcp`; call right after the extension's `attach` (which registers
 * the template, and with it the SDK's own handler).
 */
export function serveSkillReads(mcp: McpServer, source: CatalogSkillSource): void {
  mcp.server.setRequestHandler('resources/read', (request) => readSkillResource(source, request.params.uri));
  // The template the extension registers, with the title and description it registers it without.
  mcp.server.setRequestHandler('resources/templates/list', () => ({ resourceTemplates: [SKILL_FILE_TEMPLATE] }));
}

/** The one resource template: every file of a published skill. */
export const SKILL_FILE_TEMPLATE = {
  name: SKILLS_EXTENSION_ID,
  title: TEMPLATE_TITLE,
  uriTemplate: `${SKILL_URI_SCHEME}{+path}`,
  description: TEMPLATE_DESCRIPTION,
} as const;
