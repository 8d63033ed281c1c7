import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { WillRun } from '../../shared/protocol.js';
import { canonicalJson, mintToken, verifyToken, willRunHash } from '../../shared/token.js';

const key = randomBytes(32);
const willRun: WillRun = {
  skill: 'a',
  interpreter: 'node',
  argv: ['run.js', 'x'],
  cwd: 'skills/a',
  timeoutMs: 1000,
  envNames: ['HOME', 'PATH'],
  isolation: 'uid-sandbox',
  sandbox: ['run-uid'],
  memoryBytes: 1024 ** 3,
  content: { script: 'a'.repeat(64), files: 'b'.repeat(64), fileCount: 3, bytes: 100 },
  declarationFrom: 'frontmatter',
};
const TTL = 60_000;
const NOW = 1_800_000_000_000;

describe('confirmation tokens', () => {
  it('verifies a token it minted', () => {
    const { token, claims } = mintToken(key, willRun, NOW, 60_000);
    expect(verifyToken(key, token, NOW + 1, TTL)).toEqual({ ok: true, claims });
    expect(claims.wr).toBe(willRunHash(willRun));
  });

  it('refuses a forged token (signed with another key) as TOKEN_INVALID', () => {
    const { token } = mintToken(randomBytes(32), willRun, NOW, 60_000);
    expect(verifyToken(key, token, NOW, TTL)).toEqual({ ok: false, code: 'TOKEN_INVALID' });
  });

  it('refuses claims edited after signing (extended expiry, other willRun)', () => {
    const { token } = mintToken(key, willRun, NOW, 60_000);
    const [p, body, mac] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString());
    for (const edit of [{ exp: NOW + 10 ** 9 }, { wr: '0'.repeat(64) }]) {
      const forged = `${p}.${Buffer.from(JSON.stringify({ ...claims, ...edit })).toString('base64url')}.${mac}`;
      expect(verifyToken(key, forged, NOW, TTL).ok).toBe(false);
    }
  });

  it('refuses a MAC spelled differently (truncated, padded, re-encoded)', () => {
    const { token } = mintToken(key, willRun, NOW, 60_000);
    expect(verifyToken(key, token.slice(0, -2), NOW, TTL).ok).toBe(false);
    expect(verifyToken(key, `${token}=`, NOW, TTL).ok).toBe(false);
    expect(verifyToken(key, `${token}.x`, NOW, TTL).ok).toBe(false);
  });

  it('refuses garbage without throwing', () => {
    for (const junk of ['', 'smt1', 'smt1..', 'x.y.z', 'smt1.%%%.%%%', `smt1.e30.${'A'.repeat(43)}`]) {
      expect(verifyToken(key, junk, NOW, TTL)).toEqual({ ok: false, code: 'TOKEN_INVALID' });
    }
  });

  it('refuses an expired token as TOKEN_EXPIRED (only after the MAC checked out)', () => {
    const { token } = mintToken(key, willRun, NOW, 60_000);
    expect(verifyToken(key, token, NOW + 60_000, TTL)).toMatchObject({ ok: false, code: 'TOKEN_EXPIRED' });
  });

  it('refuses a token whose expiry is past its issue time + the TTL (minted with a longer lifetime) as TOKEN_INVALID', () => {
    const { token } = mintToken(key, willRun, NOW, TTL + 1);
    expect(verifyToken(key, token, NOW + 1, TTL)).toEqual({ ok: false, code: 'TOKEN_INVALID' });
    // Still refused long before it would expire: the claimed expiry is never believed.
    expect(verifyToken(key, mintToken(key, willRun, NOW, 10 * TTL).token, NOW, TTL)).toEqual({ ok: false, code: 'TOKEN_INVALID' });
    expect(verifyToken(key, mintToken(key, willRun, NOW, TTL).token, NOW + 1, TTL).ok).toBe(true);
  });

  it('binds to the code: another script digest or another skill content digest is another hash', () => {
    const h = willRunHash(willRun);
    expect(willRunHash({ ...willRun, content: { ...willRun.content, script: 'c'.repeat(64) } })).not.toBe(h);
    expect(willRunHash({ ...willRun, content: { ...willRun.content, files: 'c'.repeat(64) } })).not.toBe(h);
  });

  it('binds to every field of willRun (re-targeted token gets a different hash)', () => {
    const h = willRunHash(willRun);
    expect(willRunHash({ ...willRun, argv: ['run.js', 'y'] })).not.toBe(h);
    expect(willRunHash({ ...willRun, skill: 'b' })).not.toBe(h);
    expect(willRunHash({ ...willRun, envNames: ['HOME', 'PATH', 'SECRET'] })).not.toBe(h);
    expect(willRunHash({ ...willRun, isolation: 'same-uid' })).not.toBe(h);
  });

  it('hashes canonically: key order does not matter, argv order does', () => {
    expect(canonicalJson({ b: 1, a: [2, { d: 3, c: 4 }] })).toBe('{"a":[2,{"c":4,"d":3}],"b":1}');
    const reordered = Object.fromEntries(Object.entries(willRun).reverse()) as WillRun;
    expect(willRunHash(reordered)).toBe(willRunHash(willRun));
    expect(willRunHash({ ...willRun, argv: ['x', 'run.js'] })).not.toBe(willRunHash(willRun));
  });
});
