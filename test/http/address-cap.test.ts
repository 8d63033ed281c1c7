/**
 * Whose address the per-address cap counts (server/http/address-cap.ts): the peer's, and the
 * X-Forwarded-For client only when the peer is a configured proxy — the rightmost hop that is not
 * itself trusted, so an entry a client forged to the left of its proxy's own is never believed.
 */
import { describe, expect, test } from 'vitest';
import { AddressCounts, clientAddress, normaliseAddress } from '../../server/http/address-cap.js';

const trusted = new Set(['10.0.0.1', '10.0.0.2']);

describe('clientAddress', () => {
  test('attack: X-Forwarded-For from an untrusted peer is ignored', () => {
    expect(clientAddress('192.0.2.9', '198.51.100.1', trusted)).toBe('192.0.2.9');
  });
  test('from a trusted proxy: the rightmost untrusted hop (forged entries to its left are not believed)', () => {
    expect(clientAddress('10.0.0.1', '6.6.6.6, 198.51.100.7', trusted)).toBe('198.51.100.7');
    expect(clientAddress('10.0.0.1', '198.51.100.7, 10.0.0.2', trusted)).toBe('198.51.100.7');
    expect(clientAddress('10.0.0.1', ['198.51.100.7', '10.0.0.2'], trusted)).toBe('198.51.100.7');
  });
  test('from a trusted proxy without a usable header: the proxy itself', () => {
    expect(clientAddress('10.0.0.1', undefined, trusted)).toBe('10.0.0.1');
    expect(clientAddress('10.0.0.1', 'not-an-address', trusted)).toBe('10.0.0.1');
    expect(clientAddress('10.0.0.1', '10.0.0.2', trusted)).toBe('10.0.0.1');
  });
  test('IPv4-mapped IPv6 is the IPv4 address (one count per client, however the socket spells it)', () => {
    expect(normaliseAddress('::FFFF:192.0.2.1')).toBe('192.0.2.1');
    expect(clientAddress('::ffff:10.0.0.1', '::ffff:198.51.100.7', trusted)).toBe('198.51.100.7');
  });
});

test('AddressCounts: refuses past the cap, counts each address apart, frees on remove', () => {
  const counts = new AddressCounts(2);
  expect([counts.tryAdd('a'), counts.tryAdd('a'), counts.tryAdd('a'), counts.tryAdd('b')]).toEqual([true, true, false, true]);
  counts.remove('a');
  expect(counts.tryAdd('a')).toBe(true);
});
