/**
 * @module Confirmation tokens (docs/architecture.md §7). A token is `smt1.<claims>.<mac>` (base64url), where the
 * claims name a random id, issue and expiry times and the sha256 of the canonical `willRun` it
 * was minted for, and the MAC is HMAC-SHA256 under a key only the runner holds. Pure: the key and
 * the clock are passed in; the spent-token ledger lives in the runner.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import * as z from 'zod';
import type { WillRun } from './protocol.js';

const PREFIX = 'smt1';
const MAC_BYTES = 32;
export const TOKEN_KEY_BYTES = 32;

const claimsSchema = z.strictObject({
  jti: z.string().regex(/^[A-Za-z0-9_-]{16,64}$/),
  iat: z.number().int().nonnegative(),
  exp: z.number().int().nonnegative(),
  wr: z.string().regex(/^[0-9a-f]{64}$/),
  /** Whom the token was minted for (hosted, with identities): {@link requesterTag} of their subject. */
  rq: z
    .string()
    .regex(/^[0-9a-f]{32}$/)
    .optional(),
});
export type TokenClaims = z.infer<typeof claimsSchema>;

export type VerifyResult = { ok: true; claims: TokenClaims } | { ok: false; code: 'TOKEN_INVALID' | 'TOKEN_EXPIRED'; claims?: TokenClaims };

/** JSON with object keys sorted at every depth and `undefined` left out: one string per value. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The hash a token is bound to. Any change in any field of `willRun` changes it. */
export function willRunHash(willRun: WillRun): string {
  return createHash('sha256').update(canonicalJson(willRun)).digest('hex');
}

function mac(key: Buffer, signed: string): Buffer {
  return createHmac('sha256', key).update(signed).digest();
}

/**
 * What a token records of the identity it was minted for: a hash, so the token (which the model sees)
 * does not spell out the subject. Undefined when there is no verified identity (standalone, static bearer).
 */
export function requesterTag(subject: string | undefined): string | undefined {
  return subject === undefined
    ? undefined
    : createHash('sha256').update('skill-mcp requester\0').update(subject, 'utf8').digest('hex').slice(0, 32);
}

/**
 * Security: a token minted for one identity is refused for any other (and one minted without an
 * identity for any identity, and the reverse), so a token that leaks from Alice's conversation
 * cannot run as Bob — whose grants, quota and audit lines would otherwise be Alice's run's.
 */
export function sameRequester(claims: TokenClaims, subject: string | undefined): boolean {
  return claims.rq === requesterTag(subject);
}

/** Mints a token for `willRun`, valid for `ttlMs` from `nowMs`, for the identity `subject` (when hosted with identities). */
export function mintToken(
  key: Buffer,
  willRun: WillRun,
  nowMs: number,
  ttlMs: number,
  subject?: string,
): { token: string; claims: TokenClaims } {
  return mintBound(key, willRunHash(willRun), nowMs, ttlMs, subject);
}

/**
 * The hash a data folder's clear is bound to (docs/isolation.md, "Data folders"). Security:
 * domain-separated — a willRun hashes canonical JSON, this a tagged name — so a token minted to
 * clear a folder never runs a script, and a run's token never clears a folder.
 */
export function clearHash(folder: string): string {
  return createHash('sha256').update('skill-mcp data-clear\0').update(folder, 'utf8').digest('hex');
}

/** Mints a token bound to `bound` (a {@link willRunHash} or a {@link clearHash}). */
export function mintBound(
  key: Buffer,
  bound: string,
  nowMs: number,
  ttlMs: number,
  subject?: string,
): { token: string; claims: TokenClaims } {
  const rq = requesterTag(subject);
  const claims: TokenClaims = {
    jti: randomBytes(16).toString('base64url'),
    iat: nowMs,
    exp: nowMs + ttlMs,
    wr: bound,
    ...(rq !== undefined ? { rq } : {}),
  };
  const body = `${PREFIX}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  return { token: `${body}.${mac(key, body).toString('base64url')}`, claims };
}

/**
 * Verifies a token's MAC, then its claims. Whether it is bound to the run now asked for, and whether
 * it was spent, are the caller's checks (it knows the recomputed `willRun` and the ledger). `ttlMs`
 * is the verifier's own token lifetime: no token it takes may outlive it.
 */
export function verifyToken(key: Buffer, token: string, nowMs: number, ttlMs: number): VerifyResult {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== PREFIX) return { ok: false, code: 'TOKEN_INVALID' };
  const [, claimsPart, macPart] = parts as [string, string, string];
  const given = Buffer.from(macPart, 'base64url');
  const expected = mac(key, `${PREFIX}.${claimsPart}`);
  // Security: constant-time comparison of the MAC before anything in the token is believed;
  // re-encoding check refuses alternative base64 spellings of one MAC (no malleable twins).
  if (given.length !== MAC_BYTES || given.toString('base64url') !== macPart || !timingSafeEqual(given, expected)) {
    return { ok: false, code: 'TOKEN_INVALID' };
  }
  let claims: TokenClaims;
  try {
    claims = claimsSchema.parse(JSON.parse(Buffer.from(claimsPart, 'base64url').toString('utf8')));
  } catch {
    return { ok: false, code: 'TOKEN_INVALID' };
  }
  // Security: this runner never mints a token that lives longer than its TTL, so one that does was
  // made by someone else holding (or having held) key material — or by a runner configured with a
  // longer TTL: either way not an approval this runner gave. Its expiry is never believed.
  if (claims.exp - claims.iat > ttlMs || claims.exp < claims.iat) return { ok: false, code: 'TOKEN_INVALID' };
  // Security: an expired token is refused even though its MAC is good (docs/architecture.md §7 TTL).
  if (nowMs >= claims.exp) return { ok: false, code: 'TOKEN_EXPIRED', claims };
  return { ok: true, claims };
}

/** Short, non-reversible id for logs: never log token material itself. */
export function tokenLogId(claims: TokenClaims): string {
  return jtiLogId(claims.jti);
}

/** The same, from the token's id alone (for ledgers, which keep only ids). */
export function jtiLogId(jti: string): string {
  return createHash('sha256').update(jti).digest('hex').slice(0, 16);
}
