/**
 * @module The front as an OAuth 2.1 resource server (MCP authorization): the bearer gate every
 * `/mcp` request passes (the SDK's `requireBearerAuth` over our JWT verifier) and the RFC 9728
 * protected resource metadata the 401 challenge points to. The metadata is served at
 * `/.well-known/oauth-protected-resource` and at its path-suffixed form for the audience's path
 * (`…/oauth-protected-resource/mcp`), which is the URL the challenge names.
 */
import {
  buildOAuthProtectedResourceMetadata,
  getOAuthProtectedResourceMetadataUrl,
  requireBearerAuth,
  type AuthInfo,
  type OAuthTokenVerifier,
} from '@modelcontextprotocol/server';
import type { Identity } from '../../shared/protocol.js';
import { SCOPES, SCOPES_SUPPORTED, type OAuthSettings } from './settings.js';

export interface ResourceServer {
  /** The verified token's AuthInfo, or the 401/403/500 answer to send instead. */
  authenticate(headers: Headers): Promise<AuthInfo | Response>;
  /** The metadata document for a well-known path, or undefined for any other path. */
  metadata(pathname: string, method: string): Response | undefined;
  /** The metadata URL advertised in `WWW-Authenticate: Bearer resource_metadata="…"`. */
  metadataUrl: string;
}

const WELL_KNOWN = '/.well-known/oauth-protected-resource';

/** A verifier that may also answer from its memory of tokens it verified (jwt-verifier.ts, token-cache.ts). */
export type RememberingVerifier = OAuthTokenVerifier & { remembered?(token: string): AuthInfo | undefined };

/** The token of `Authorization: Bearer <token>`, or undefined. */
function bearerOf(headers: Headers): string | undefined {
  return /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(headers.get('authorization') ?? '')?.[1];
}

export function createResourceServer(settings: OAuthSettings, verifier: RememberingVerifier): ResourceServer {
  const audience = new URL(settings.audience);
  const metadataUrl = getOAuthProtectedResourceMetadataUrl(audience);
  // Validates the issuer URL once, at start (https, or http on loopback). Only `issuer` of the
  // metadata goes into the document; the endpoints are placeholders the SDK's type asks for.
  const document = {
    ...buildOAuthProtectedResourceMetadata({
      oauthMetadata: {
        issuer: settings.issuer,
        authorization_endpoint: settings.issuer,
        token_endpoint: settings.issuer,
        response_types_supported: ['code'],
      },
      resourceServerUrl: audience,
      scopesSupported: SCOPES_SUPPORTED,
      resourceName: 'skill-mcp',
    }),
    bearer_methods_supported: ['header'],
  };
  const paths = new Set([WELL_KNOWN, new URL(metadataUrl).pathname]);
  // Security: every /mcp request needs a token for this audience from this issuer with skills:read;
  // skill_run asks for skills:run on top (front.ts, a per-tool scope challenge).
  const gate = requireBearerAuth({ verifier, requiredScopes: [SCOPES.read], resourceMetadataUrl: metadataUrl, expectedResource: audience });
  return {
    metadataUrl,
    authenticate: async (headers) => {
      // A token this front verified moments ago, still in its lifetime and holding skills:read, passes
      // without a second trip through the SDK's gate (the same checks; the gate's answers for anything
      // else — missing, refused, expired, short of scope — are the gate's own).
      const token = bearerOf(headers);
      const known = token !== undefined ? verifier.remembered?.(token) : undefined;
      if (known?.scopes.includes(SCOPES.read) && (known.expiresAt ?? 0) > Date.now() / 1000) return known;
      return gate(new Request('http://skill-mcp.invalid/mcp', { headers }));
    },
    metadata(pathname, method) {
      if (!paths.has(pathname.replace(/\/$/, ''))) return undefined;
      if (method !== 'GET' && method !== 'HEAD') return new Response(null, { status: 405, headers: { allow: 'GET, HEAD' } });
      return Response.json(document, { headers: { 'access-control-allow-origin': '*', 'cache-control': 'max-age=300' } });
    },
  };
}

/** The verified identity an AuthInfo carries (set by our verifier), if any. */
export function identityOfAuth(authInfo: AuthInfo | undefined): Identity | undefined {
  const identity = authInfo?.extra?.['identity'];
  return identity !== undefined && typeof identity === 'object' && identity !== null && typeof (identity as Identity).subject === 'string'
    ? (identity as Identity)
    : undefined;
}
