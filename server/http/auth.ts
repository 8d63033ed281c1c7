/**
 * @module Who an HTTP request is: the gate between the transport guards and the MCP handler. Two
 * ways in, never both (options.ts refuses that): one shared bearer token compared in constant time
 * (a one-person setup), or OAuth access tokens verified as a resource server (server/auth/). No
 * token is ever logged, echoed or put in an error.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { AuthInfo } from '@modelcontextprotocol/server';
import type { ResourceServer } from '../auth/resource-server.js';
import { SCOPES_SUPPORTED } from '../auth/settings.js';
import { jsonRpcError } from './guard.js';

export type TokenCheck = (authorization: string | null) => boolean;

/** The request's AuthInfo, or the refusal to send (401/403/500). */
export type Authenticate = (headers: Headers) => Promise<AuthInfo | Response>;

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** A checker for `Authorization: Bearer <token>`. The expected token's digest is all it keeps. */
export function bearerTokenCheck(token: string): TokenCheck {
  const expected = digest(token);
  return (authorization) => {
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? '');
    // Security: hashing both sides first gives equal-length buffers, so timingSafeEqual leaks
    // neither the token's bytes nor its length through response time.
    const presented = digest(match?.[1] ?? '');
    return timingSafeEqual(presented, expected) && match !== null;
  };
}

/**
 * The client id an authenticated caller is counted as by the runner's per-client share of run
 * slots: a hash of its bearer token (domain-separated, 128 bits), never the token. With one
 * configured token, every authenticated caller of this front is one client.
 */
export function bearerClientId(token: string): string {
  return createHash('sha256').update('skill-mcp client\0').update(token, 'utf8').digest('hex').slice(0, 32);
}

/** The static token's gate: its holder is the owner, with every scope, and no OAuth identity. */
export function staticBearer(token: string): Authenticate {
  const check = bearerTokenCheck(token);
  const authInfo: AuthInfo = { token: '', clientId: bearerClientId(token), scopes: [...SCOPES_SUPPORTED] };
  return async (headers) => {
    // Security: with a token configured, nothing past this gate runs for an unauthenticated request.
    if (check(headers.get('authorization'))) return authInfo;
    return jsonRpcError(401, -32001, 'Unauthorized: send Authorization: Bearer <token> with the token the server operator configured', {
      'www-authenticate': 'Bearer realm="skill-mcp"',
    });
  };
}

/** The OAuth gate; the token itself is dropped from the AuthInfo so nothing downstream can log it. */
export function oauthBearer(resourceServer: ResourceServer): Authenticate {
  return async (headers) => {
    const verified = await resourceServer.authenticate(headers);
    return verified instanceof Response ? verified : { ...verified, token: '' };
  };
}
