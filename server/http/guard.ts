/**
 * @module The gates every HTTP request passes before its body is read and before the MCP handler
 * sees it: path, Host, Origin, then the bearer token. They look at the request line and headers
 * only, so a refused client cannot make the server buffer a body. Each returns the refusal to
 * send, or undefined to go on. Protocol-level checks (MCP-Protocol-Version and Mcp-Method against
 * the body, unknown methods) are the SDK handler's; these are the transport's.
 */
import { hostHeaderValidationResponse, originValidationResponse } from '@modelcontextprotocol/server';
import type { TokenCheck } from './auth.js';
import { MCP_PATH } from './options.js';

export interface GuardOptions {
  allowedHosts: string[] | undefined;
  allowedOrigins: string[];
  tokenCheck: TokenCheck | undefined;
}

/** A JSON-RPC error body with no id, as the transport answers before a message is parsed. */
export function jsonRpcError(status: number, code: number, message: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

export function guardRequest(pathname: string, headers: Headers, options: GuardOptions): Response | undefined {
  if (pathname !== MCP_PATH) return jsonRpcError(404, -32000, `Not found: the MCP endpoint is ${MCP_PATH}`);
  // The SDK's validators read only the headers of the Request they are given.
  const probe = new Request('http://skill-mcp.invalid/', { headers });
  // Security: DNS rebinding — a name we were not configured for means a browser was pointed at us.
  if (options.allowedHosts !== undefined) {
    const refused = hostHeaderValidationResponse(probe, options.allowedHosts);
    if (refused) return refused;
  }
  // Security: cross-site requests from a browser page; clients without Origin (non-browser) pass.
  const refused = originValidationResponse(probe, options.allowedOrigins);
  if (refused) return refused;
  // Security: with a token configured, nothing below this line runs for an unauthenticated request.
  if (options.tokenCheck && !options.tokenCheck(headers.get('authorization'))) {
    return jsonRpcError(401, -32001, 'Unauthorized: send Authorization: Bearer <token> with the token the server operator configured', {
      'www-authenticate': 'Bearer realm="skill-mcp"',
    });
  }
  return undefined;
}
