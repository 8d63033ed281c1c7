/**
 * @module Verifies OAuth access tokens that are JWTs, with `jose`, against the issuer's published
 * keys (JWKS: cached, fetched again when a token names a key id it does not hold). What a token
 * must satisfy: a signature by one of the issuer's keys under an allow-listed asymmetric
 * algorithm, `iss` equal to the issuer, `aud` naming this server, `exp` in the future and `nbf`
 * (if any) in the past, both within a small clock skew, and a `sub`. What it yields is the
 * SDK's `AuthInfo`, with the identity in `extra.identity`. A verified token is remembered for up to a
 * minute within its own lifetime, forgotten on any JWKS fetch (token-cache.ts).
 */
import { createRemoteJWKSet, customFetch, errors, jwtVerify, type JWTPayload } from 'jose';
import { OAuthError, OAuthErrorCode, type AuthInfo, type OAuthTokenVerifier } from '@modelcontextprotocol/server';
import type { Identity } from '../../shared/protocol.js';
import type { IssuerMetadata } from './discovery.js';
import type { OAuthSettings } from './settings.js';
import { VerifiedTokens } from './token-cache.js';

/**
 * Security: asymmetric algorithms only. `none` is never accepted, and no HS* — with a symmetric
 * algorithm the issuer's *public* key would be taken as the HMAC secret, so anyone could sign.
 */
export const ALLOWED_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

/** Clocks of the issuer and this host may differ by this much (seconds) for `exp`, `nbf` and `iat`. */
export const CLOCK_SKEW_SECONDS = 30;

const MAX_GROUPS = 64;
const MAX_CLAIM_CHARS = 256;

/** The token's scopes: the `scope` string (RFC 9068, space-separated) or an `scp` array (some issuers). */
export function scopesOf(payload: JWTPayload): string[] {
  const scope = payload['scope'];
  if (typeof scope === 'string') return scope.split(' ').filter((s) => s !== '');
  const scp = payload['scp'];
  if (Array.isArray(scp)) return scp.filter((s): s is string => typeof s === 'string');
  if (typeof scp === 'string') return scp.split(' ').filter((s) => s !== '');
  return [];
}

/**
 * The identity a verified token names. Groups are read from `groupsClaim` (an array of strings, or
 * one string); a claim with more groups than fit, or overlong values, is refused rather than cut:
 * a cut list could drop the group a grant row names, or keep one it should not.
 */
export function identityOf(payload: JWTPayload, groupsClaim: string): Identity {
  const subject = payload.sub;
  if (typeof subject !== 'string' || subject === '' || subject.length > MAX_CLAIM_CHARS)
    throw new OAuthError(OAuthErrorCode.InvalidToken, 'The token has no usable sub claim');
  const client = [payload['client_id'], payload['azp']].find((v): v is string => typeof v === 'string' && v !== '');
  if (client !== undefined && client.length > MAX_CLAIM_CHARS)
    throw new OAuthError(OAuthErrorCode.InvalidToken, `The token's client_id/azp is longer than ${MAX_CLAIM_CHARS} characters`);
  const raw = payload[groupsClaim];
  const groups = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  if (groups.length > MAX_GROUPS || groups.some((g) => typeof g !== 'string' || g.length > MAX_CLAIM_CHARS)) {
    throw new OAuthError(
      OAuthErrorCode.InvalidToken,
      `The token's ${groupsClaim} claim is not a list of at most ${MAX_GROUPS} strings of at most ${MAX_CLAIM_CHARS} characters`,
    );
  }
  return {
    subject,
    ...(client !== undefined ? { clientId: client } : {}),
    ...(groups.length > 0 ? { groups: groups as string[] } : {}),
  };
}

/** Why a token was refused, in words that help its owner and name no key material. */
function refusal(error: unknown): OAuthError {
  if (error instanceof OAuthError) return error;
  if (error instanceof errors.JWTExpired) return new OAuthError(OAuthErrorCode.InvalidToken, 'The token has expired');
  if (error instanceof errors.JWTClaimValidationFailed)
    return new OAuthError(OAuthErrorCode.InvalidToken, `The token's ${error.claim} claim is not acceptable here`);
  if (error instanceof errors.JOSEAlgNotAllowed)
    return new OAuthError(OAuthErrorCode.InvalidToken, 'The token is signed with an algorithm this server does not accept');
  if (error instanceof errors.JWKSNoMatchingKey)
    return new OAuthError(OAuthErrorCode.InvalidToken, "The token is not signed by one of the issuer's keys");
  if (error instanceof errors.JWSSignatureVerificationFailed)
    return new OAuthError(OAuthErrorCode.InvalidToken, 'The token signature does not verify');
  if (
    error instanceof errors.JWKSTimeout ||
    error instanceof errors.JWKSInvalid ||
    (error instanceof errors.JOSEError && error.code === 'ERR_JOSE_GENERIC') ||
    error instanceof TypeError
  ) {
    return new OAuthError(OAuthErrorCode.ServerError, "The issuer's keys could not be fetched; try again shortly");
  }
  return new OAuthError(OAuthErrorCode.InvalidToken, 'The token is not a valid access token for this server');
}

/** A verifier for the SDK's bearer gate: throws OAuthError (invalid_token / server_error) or returns AuthInfo. */
export function createJwtVerifier(
  settings: OAuthSettings,
  metadata: IssuerMetadata,
): OAuthTokenVerifier & { remembered(token: string): AuthInfo | undefined } {
  const verified = new VerifiedTokens();
  const keys = createRemoteJWKSet(new URL(metadata.jwksUri), {
    cooldownDuration: settings.jwksCooldownMs,
    timeoutDuration: 5_000,
    // Every fetch of the key set forgets the remembered verifications (see token-cache.ts).
    [customFetch]: (url: string, init: RequestInit) => {
      verified.clear();
      return fetch(url, init);
    },
  });
  const resource = new URL(settings.audience);
  return {
    remembered: (token) => verified.get(token),
    async verifyAccessToken(token: string): Promise<AuthInfo> {
      const known = verified.get(token);
      if (known !== undefined) return known;
      const generation = verified.generation;
      try {
        const { payload } = await jwtVerify(token, keys, {
          issuer: settings.issuer,
          audience: settings.audience,
          algorithms: ALLOWED_ALGORITHMS,
          clockTolerance: CLOCK_SKEW_SECONDS,
          requiredClaims: ['exp', 'sub'],
        });
        const identity = identityOf(payload, settings.groupsClaim);
        const info: AuthInfo = {
          token,
          clientId: identity.clientId ?? identity.subject,
          scopes: scopesOf(payload),
          // The SDK refuses a token without expiresAt; jose already held exp against the skew.
          expiresAt: (payload.exp as number) + CLOCK_SKEW_SECONDS,
          resource,
          extra: { identity },
        };
        verified.set(token, info, generation);
        return info;
      } catch (error) {
        throw refusal(error);
      }
    },
  };
}
