/**
 * @module The gates every HTTP request passes before its body is read and before the MCP handler
 * sees it: path, Host, Origin (the bearer token is auth.ts's, next). They look at the request line and headers
 * only, so a refused client cannot make the server buffer a body. Each returns the refusal to
 * send, or undefined to go on. Protocol-level checks (MCP-Protocol-Version and Mcp-Method against
 * the body, unknown methods) are the SDK handler's; these are the transport's.
 */
import { validateHostHeader, validateOriginHeader } from '@modelcontextprotocol/server';
import { MCP_PATH } from './options.js';

export interface GuardOptions {
  allowedHosts: string[] | undefined;
  allowedOrigins: string[];
  /** Paths served besides the MCP endpoint (metadata, health), Host- and Origin-checked the same. */
  otherPaths: (pathname: string) => boolean;
}

/** A JSON-RPC error body with no id, as the transport answers before a message is parsed. */
export function jsonRpcError(status: number, code: number, message: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

/** The 403 the SDK's `hostHeaderValidationResponse` / `originValidationResponse` answer, byte for byte. */
function forbidden(message: string): Response {
  return Response.json(
    { jsonrpc: '2.0', error: { code: -32000, message }, id: null },
    { status: 403, headers: { 'Content-Type': 'application/json' } },
  );
}

/**
 * The SDK's own Host and Origin checks, on the header values: its `…ValidationResponse` helpers
 * read the same two values from a `Request`, which cost a probe `Request` per request (1.8 % of a
 * small request's CPU, bench/RESULTS.md).
 */
export function guardRequest(pathname: string, headers: Headers, options: GuardOptions): Response | undefined {
  if (pathname !== MCP_PATH && !options.otherPaths(pathname))
    return jsonRpcError(404, -32000, `Not found: the MCP endpoint is ${MCP_PATH}`);
  // Security: DNS rebinding — a name we were not configured for means a browser was pointed at us.
  if (options.allowedHosts !== undefined) {
    const host = validateHostHeader(headers.get('host'), options.allowedHosts);
    if (!host.ok) return forbidden(host.message);
  }
  // Security: cross-site requests from a browser page; clients without Origin (non-browser) pass.
  const origin = validateOriginHeader(headers.get('origin'), options.allowedOrigins);
  return origin.ok ? undefined : forbidden(origin.message);
}
