/**
 * The front's memory of verified access tokens (server/auth/token-cache.ts): it may save a
 * signature check, never accept what the verifier would now refuse. Each case is named after what
 * it stops: an expired token served from memory, a token living on after its keys were fetched
 * again, a verification racing a key fetch, a flood of tokens growing memory.
 */
import { describe, expect, test } from 'vitest';
import type { AuthInfo } from '@modelcontextprotocol/server';
import { TOKEN_CACHE_MAX, TOKEN_CACHE_TTL_MS, VerifiedTokens } from '../../server/auth/token-cache.js';

function clock(start = 1_000_000_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}
const info = (token: string, expiresAtS: number): AuthInfo => ({ token, clientId: 'c', scopes: ['skills:read'], expiresAt: expiresAtS });

describe('remembered verifications', () => {
  test('the same token is served from memory; another token is not', () => {
    const c = clock();
    const cache = new VerifiedTokens(c.now);
    cache.set('tok-a', info('tok-a', c.now() / 1000 + 3600), cache.generation);
    expect(cache.get('tok-a')?.token).toBe('tok-a');
    expect(cache.get('tok-b')).toBeUndefined();
  });

  test("expired token from memory: an entry ends at the token's own expiry", () => {
    const c = clock();
    const cache = new VerifiedTokens(c.now);
    cache.set('tok', info('tok', c.now() / 1000 + 10), cache.generation);
    c.advance(9_000);
    expect(cache.get('tok')).toBeDefined();
    c.advance(1_000);
    expect(cache.get('tok')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  test("a long-lived token is still checked again after the memory's own lifetime", () => {
    const c = clock();
    const cache = new VerifiedTokens(c.now);
    cache.set('tok', info('tok', c.now() / 1000 + 86_400), cache.generation);
    c.advance(TOKEN_CACHE_TTL_MS - 1);
    expect(cache.get('tok')).toBeDefined();
    c.advance(1);
    expect(cache.get('tok')).toBeUndefined();
  });

  test('an already expired verification is never remembered', () => {
    const c = clock();
    const cache = new VerifiedTokens(c.now);
    cache.set('tok', info('tok', c.now() / 1000 - 1), cache.generation);
    expect(cache.size).toBe(0);
  });

  test('keys fetched again: everything remembered is forgotten', () => {
    const c = clock();
    const cache = new VerifiedTokens(c.now);
    cache.set('tok', info('tok', c.now() / 1000 + 3600), cache.generation);
    cache.clear();
    expect(cache.get('tok')).toBeUndefined();
  });

  test('a verification that began before a key fetch is not remembered after it', () => {
    const c = clock();
    const cache = new VerifiedTokens(c.now);
    const began = cache.generation;
    cache.clear();
    cache.set('tok', info('tok', c.now() / 1000 + 3600), began);
    expect(cache.get('tok')).toBeUndefined();
  });

  test('a flood of distinct tokens: memory stays bounded, the oldest goes first', () => {
    const c = clock();
    const cache = new VerifiedTokens(c.now, TOKEN_CACHE_TTL_MS, 100);
    for (let i = 0; i < 1000; i += 1) cache.set(`tok-${i}`, info(`tok-${i}`, c.now() / 1000 + 3600), cache.generation);
    expect(cache.size).toBe(100);
    expect(cache.get('tok-0')).toBeUndefined();
    expect(cache.get('tok-999')).toBeDefined();
    expect(TOKEN_CACHE_MAX).toBeGreaterThan(100);
  });
});
