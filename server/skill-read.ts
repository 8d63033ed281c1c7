/**
 * @module `resources/read` for `skill://`, served by us rather than by the SDK's skills extension
 * (which keeps `skills/list`, `skills/get`, `resources/directory/read`, `resources/list` and the
 * resource template). Same source, same checks, same answers and errors; the one difference is how
 * a binary file becomes base64: the extension encodes blobs with a portable
 * `String.fromCodePoint(...)` + `btoa` loop, ~60-160 ms and ~25 MB of garbage per MiB
 * (bench/RESULTS.md), where Node's `Buffer#toString('base64')` takes ~1 ms.
 */
import { ProtocolError, ProtocolErrorCode, ResourceNotFoundError, type McpServer, type ReadResourceResult } from '@modelcontextprotocol/server';
import type { CatalogSkillSource } from './catalog/source.js';

/**
 * Takes over `resources/read` on `mcp`; call right after the extension's `attach` (which registers
 * the template, and with it the SDK's own handler). Nothing but skills is a resource here, so a URI
 * the source does not serve is not found, exactly as the SDK answers: -32602 in both eras.
 */
export function serveSkillReads(mcp: McpServer, source: CatalogSkillSource): void {
  mcp.server.setRequestHandler('resources/read', async (request): Promise<ReadResourceResult> => {
    let uri: URL;
    try {
      uri = new URL(request.params.uri);
    } catch {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Resource URI ${request.params.uri} is invalid`, { uri: request.params.uri, reason: 'invalid_uri' });
    }
    // As the SDK does: the URL's normalized form is what is looked up and what the answer names.
    const result = await source.read(uri.href);
    if (result === undefined) throw new ResourceNotFoundError(uri.href);
    const mimeType = result.mimeType === undefined ? {} : { mimeType: result.mimeType };
    if ('text' in result) return { contents: [{ uri: uri.href, ...mimeType, text: result.text }] };
    const { bytes } = result;
    const blob = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
    return { contents: [{ uri: uri.href, ...mimeType, blob }] };
  });
}
