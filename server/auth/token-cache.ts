/**
 * @module A bounded memory of access tokens this front has already verified, so a client that sends
 * the same bearer token on every request pays for one signature check, not one per request (an
 * RS256 check is ~0.2 ms of CPU: a quarter of a 10 KB `resources/read` at one client).
 *
 * What it keeps: the verification's result, keyed by the token's sha256 (the token itself is never a
 * key, so the map holds no more of a token than `AuthInfo` already does). What it does not weaken:
 * - an entry is served only while the token is still inside its own `exp` (plus the clock skew the
 *   verifier allowed), so an expired token is verified again — and refused — exactly as without the cache;
 * - an entry lives at most {@link TOKEN_CACHE_TTL_MS}: a key the issuer withdraws from its JWKS stops
 *   vouching for tokens it signed within that time (JWTs cannot be revoked otherwise);
 * - every fetch of the issuer's JWKS (a rotation noticed through an unknown key id, or the periodic
 *   refresh) forgets everything: a key the new set no longer holds vouches for nothing from then on,
 *   and a verification that began before the fetch is not remembered after it ({@link generation});
 * - only successes are kept: a refused token is checked again on every request;
 * - at most {@link TOKEN_CACHE_MAX} entries; the oldest goes first, so a flood of distinct valid
 *   tokens costs verification, never unbounded memory.
 */
import { createHash } from 'node:crypto';
import type { AuthInfo } from '@modelcontextprotocol/server';

export const TOKEN_CACHE_TTL_MS = 60_000;
export const TOKEN_CACHE_MAX = 4096;

interface Entry {
  info: AuthInfo;
  /** Milliseconds since the epoch after which this entry is not served. */
  until: number;
}

export class VerifiedTokens {
  readonly #entries = new Map<string, Entry>();
  #generation = 0;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly ttlMs = TOKEN_CACHE_TTL_MS,
    private readonly max = TOKEN_CACHE_MAX,
  ) {}

  static keyOf(token: string): string {
    return createHash('sha256').update(token).digest('base64url');
  }

  /** The earlier verification of `token`, while it may still be trusted; undefined otherwise. */
  get(token: string): AuthInfo | undefined {
    const key = VerifiedTokens.keyOf(token);
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (this.now() >= entry.until || entry.info.token !== token) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.info;
  }

  /** Changes whenever {@link clear} runs: take it before verifying, hand it to {@link set}. */
  get generation(): number {
    return this.#generation;
  }

  /** Forget every verification (the keys they were checked against may be gone). */
  clear(): void {
    this.#entries.clear();
    this.#generation += 1;
  }

  /**
   * Remember a verification begun at `generation`; `info.expiresAt` (seconds, skew included) bounds
   * how long. Not kept when the keys were fetched again since it began.
   */
  set(token: string, info: AuthInfo, generation: number): void {
    if (generation !== this.#generation) return;
    const expiresAtMs = (info.expiresAt ?? 0) * 1000;
    const until = Math.min(expiresAtMs, this.now() + this.ttlMs);
    if (until <= this.now()) return;
    const key = VerifiedTokens.keyOf(token);
    this.#entries.delete(key);
    if (this.#entries.size >= this.max) {
      const oldest = this.#entries.keys().next();
      if (oldest.done !== true) this.#entries.delete(oldest.value);
    }
    this.#entries.set(key, { info, until });
  }

  get size(): number {
    return this.#entries.size;
  }
}
