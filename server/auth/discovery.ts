/**
 * @module Finds the issuer's metadata at start: RFC 8414 (`/.well-known/oauth-authorization-server`,
 * path-inserted for an issuer with a path) first, then OpenID Connect discovery. The document must
 * name the configured issuer exactly and a `jwks_uri` the front may fetch keys from.
 */
import { isLoopbackHost } from '../../shared/settings-schema.js';

export interface IssuerMetadata {
  issuer: string;
  jwksUri: string;
  /** Where the approval page sends people to sign in, and trades their code (absent when the document names none usable). */
  authorizationEndpoint?: string | undefined;
  tokenEndpoint?: string | undefined;
  /** Where the document was found (for the start-up line). */
  foundAt: string;
}

/** A discovery failure: the message names the issuer and what to check. */
export class IssuerDiscoveryError extends Error {
  override readonly name = 'IssuerDiscoveryError';
  readonly code = 'OAUTH_ISSUER';
}

/** The URLs to try, in order (RFC 8414 §3.1, then OpenID Connect Discovery §4, both path forms). */
export function discoveryUrls(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname.replace(/\/$/, '');
  const origin = url.origin;
  const urls = [`${origin}/.well-known/oauth-authorization-server${path}`, `${origin}${path}/.well-known/openid-configuration`];
  if (path !== '') urls.push(`${origin}/.well-known/openid-configuration${path}`);
  return urls;
}

/** Security: keys fetched over plain http from another host could be swapped on the way. */
function keysUrlAcceptable(raw: unknown): raw is string {
  if (typeof raw !== 'string') return false;
  try {
    const url = new URL(raw);
    return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname));
  } catch {
    return false;
  }
}

/** Fetches the first discovery document that answers, and checks it. */
export async function discoverIssuer(issuer: string, fetchImpl: typeof fetch = fetch, timeoutMs = 10_000): Promise<IssuerMetadata> {
  const tried: string[] = [];
  for (const url of discoveryUrls(issuer)) {
    let response: Response;
    try {
      response = await fetchImpl(url, {
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(timeoutMs),
        redirect: 'error',
      });
    } catch (error) {
      tried.push(
        `${url}: ${error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error)}`,
      );
      continue;
    }
    if (!response.ok) {
      tried.push(`${url}: HTTP ${response.status}`);
      await response.body?.cancel();
      continue;
    }
    let document: Record<string, unknown>;
    try {
      document = (await response.json()) as Record<string, unknown>;
    } catch {
      tried.push(`${url}: not JSON`);
      continue;
    }
    // Security: RFC 8414 §3.3 — a document naming another issuer is not this issuer's, whatever URL served it.
    if (document['issuer'] !== issuer) {
      throw new IssuerDiscoveryError(
        `the issuer metadata at ${url} names issuer ${JSON.stringify(document['issuer'])}, not ${JSON.stringify(issuer)}; set SKILL_MCP_OAUTH_ISSUER to the issuer exactly as its tokens carry it in iss`,
      );
    }
    if (!keysUrlAcceptable(document['jwks_uri'])) {
      throw new IssuerDiscoveryError(
        `the issuer metadata at ${url} has no usable jwks_uri (an https URL, or http on loopback); skill-mcp verifies JWT access tokens with the issuer's published keys`,
      );
    }
    // The sign-in endpoints are only the approval page's; held to the same rule as the keys (https, or http on loopback).
    const authorizationEndpoint = keysUrlAcceptable(document['authorization_endpoint']) ? document['authorization_endpoint'] : undefined;
    const tokenEndpoint = keysUrlAcceptable(document['token_endpoint']) ? document['token_endpoint'] : undefined;
    return { issuer, jwksUri: document['jwks_uri'], authorizationEndpoint, tokenEndpoint, foundAt: url };
  }
  throw new IssuerDiscoveryError(
    `the metadata of the OAuth issuer ${issuer} could not be fetched (${tried.join('; ')}); check SKILL_MCP_OAUTH_ISSUER and that this host can reach the issuer`,
  );
}
