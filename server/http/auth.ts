/**
 * @module Optional bearer-token authentication for the HTTP front: one shared token, compared in
 * constant time. The token is never logged, echoed or put in an error.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

export type TokenCheck = (authorization: string | null) => boolean;

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
