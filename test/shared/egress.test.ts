/**
 * Egress entries against the ways an author (or an owner's grant) could end up allowing more than
 * a person reads: a bare "*", a URL, an address spelled as a number, a wildcard over a whole
 * top-level domain, a suffix that is not a whole label, a grant wider than the declaration. Also
 * the declaration parser and MCP_SKILL_RUN reading them, and the proxy variables in the preview.
 */
import { describe, expect, it } from 'vitest';
import { parseDeclaration } from '../../shared/declaration.js';
import { entryCovers, formatEgressEntry, parseEgressEntry } from '../../shared/egress.js';
import { entryMatches, parseDestination } from '../../runner/helper/destination.js';
import type { EgressEntry } from '../../shared/egress.js';
import { buildScriptEnv } from '../../shared/env.js';
import { deadGrantRows, grantScripts, readGrantSource } from '../../shared/grant.js';

function entry(text: string): EgressEntry {
  const parsed = parseEgressEntry(text);
  if (!parsed.ok) throw new Error(`${text}: ${parsed.why}`);
  return parsed.value;
}

function why(text: string): string {
  const parsed = parseEgressEntry(text);
  if (parsed.ok) throw new Error(`${text} was accepted as ${formatEgressEntry(parsed.value)}`);
  return parsed.why;
}

describe('egress entries are parsed strictly', () => {
  it.each([
    ['api.example.com', 'api.example.com'],
    ['API.Example.COM', 'api.example.com'],
    ['api.example.com:8443', 'api.example.com:8443'],
    ['*.example.com', '*.example.com'],
    ['*.example.com:443', '*.example.com:443'],
    ['127.0.0.1:8080', '127.0.0.1:8080'],
    ['[::1]:8080', '[::1]:8080'],
    ['[0:0:0:0:0:0:0:1]', '[::1]'],
    ['localhost', 'localhost'],
    ['xn--bcher-kva.example', 'xn--bcher-kva.example'],
  ])('accepts %s as %s', (text, canonical) => {
    expect(formatEgressEntry(entry(text))).toBe(canonical);
  });

  it('refuses a bare "*" (every host), also with a port', () => {
    expect(why('*')).toContain('every host');
    expect(why('*:443')).toContain('every host');
  });

  it('refuses a wildcard over a whole top-level domain, an address, or in the middle of a name', () => {
    expect(why('*.com')).toContain('top-level domain');
    expect(why('*.127.0.0.1')).toContain('not an address');
    expect(why('api.*.example.com')).toContain('leading labels');
    expect(why('*example.com')).toContain('leading labels');
    expect(why('**.example.com')).toContain('leading labels');
  });

  it('refuses URLs and paths (an entry is a destination, not a resource)', () => {
    expect(why('https://api.example.com')).toContain('URL');
    expect(why('api.example.com/v1')).toContain('path');
  });

  it.each(['0x7f.1', '2130706433', '0177.0.0.1', '127.1', '127.0.0.01', '1.2.3.256', 'example.123'])(
    'refuses %s: an address spelled as a number could pass for a name or another address',
    (text) => {
      expect(why(text)).toMatch(/number|not a host name/);
    },
  );

  it('refuses ports out of range or with leading zeros, an unbracketed IPv6 address, a trailing dot, non-ASCII and empty labels', () => {
    for (const text of ['example.com:0', 'example.com:65536', 'example.com:080', 'example.com:', 'example.com:http'])
      expect(why(text)).toContain('port');
    expect(why('::1')).toContain('brackets');
    expect(why('example.com.')).toContain('not a host name');
    expect(why('bücher.example')).toContain('xn--');
    expect(why('a..example.com')).toContain('not a host name');
    expect(why('-a.example.com')).toContain('not a host name');
    expect(why('')).toBeTruthy();
  });
});

describe('matching a destination', () => {
  it('a portless entry means the web ports (443 and 80) only', () => {
    const e = entry('api.example.com');
    expect(entryMatches(e, 'api.example.com', 443)).toBe(true);
    expect(entryMatches(e, 'api.example.com', 80)).toBe(true);
    expect(entryMatches(e, 'api.example.com', 22)).toBe(false);
  });

  it('a wildcard matches names strictly below its domain, whole labels only (no suffix tricks)', () => {
    const e = entry('*.example.com');
    expect(entryMatches(e, 'api.example.com', 443)).toBe(true);
    expect(entryMatches(e, 'a.b.example.com', 443)).toBe(true);
    expect(entryMatches(e, 'example.com', 443)).toBe(false);
    expect(entryMatches(e, 'evilexample.com', 443)).toBe(false);
    expect(entryMatches(e, 'example.com.evil.org', 443)).toBe(false);
  });

  it('an address entry matches that address only, never a name that resolves to it', () => {
    const e = entry('127.0.0.1:8080');
    expect(entryMatches(e, '127.0.0.1', 8080)).toBe(true);
    expect(entryMatches(e, 'localhost', 8080)).toBe(false);
    expect(entryMatches(e, '127.0.0.1', 8081)).toBe(false);
  });

  it('a CONNECT destination is read with the same host rules, any spelling of an address normalised', () => {
    expect(parseDestination('api.example.com:443')).toEqual({ ok: true, value: { host: 'api.example.com', ip: 0, port: 443 } });
    expect(parseDestination('[::1]:443')).toEqual({ ok: true, value: { host: '::1', ip: 6, port: 443 } });
    expect(parseDestination('api.example.com').ok).toBe(false);
    expect(parseDestination('0x7f000001:80')).toEqual({ ok: true, value: { host: '127.0.0.1', ip: 4, port: 80 } });
  });
});

describe('a grant only narrows', () => {
  it.each([
    ['*.example.com', 'api.example.com', true],
    ['*.example.com', 'api.example.com:443', true],
    ['*.example.com', '*.api.example.com', true],
    ['*.example.com', '*.example.com', true],
    ['api.example.com', 'api.example.com:80', true],
    ['api.example.com:8443', 'api.example.com:8443', true],
    ['api.example.com', 'api.example.com:8443', false],
    ['api.example.com', '*.example.com', false],
    ['*.example.com', 'example.com', false],
    ['*.example.com:443', 'api.example.com', false],
    ['api.example.com', 'other.example.com', false],
  ])('declared %s covers granted %s: %s', (wider, narrower, covers) => {
    expect(entryCovers(entry(wider), entry(narrower))).toBe(covers);
  });
});

describe('the declaration parser', () => {
  const declare = (egress: unknown) => parseDeclaration({ version: 1, run: [{ script: 'a.py', interpreter: 'python3' }], egress } as never);

  it('keeps valid entries in canonical form, once each', () => {
    expect(declare(['API.example.com', 'api.example.com', '127.0.0.1:8080']).declaration?.egress).toEqual([
      'api.example.com',
      '127.0.0.1:8080',
    ]);
  });

  it('rejects the block for a bad entry, naming it (the scripts are not runnable)', () => {
    const result = declare(['api.example.com', '*']);
    expect(result.declaration).toBeUndefined();
    expect(result.problems[0]).toContain('mcp-host.egress[1] "*" would allow every host');
    expect(declare(['x', 42]).problems[0]).toContain('mcp-host.egress[1] must be a string');
    expect(declare('api.example.com').problems[0]).toContain('must be a list');
  });
});

describe('MCP_SKILL_RUN egress', () => {
  const declaration = {
    version: 1,
    run: [{ script: 'a.py', interpreter: 'python3', env: [], timeoutMs: 1000 }],
    env: [],
    egress: ['*.example.com', '127.0.0.1:8080'],
  };

  it('grants declared ∩ granted; a row without egress grants no destination', () => {
    const source = readGrantSource({
      MCP_SKILL_RUN: JSON.stringify([{ skill: 's', script: 'a.py', egress: ['api.example.com:443', 'evil.org', '127.0.0.1:9090'] }]),
    });
    expect(grantScripts('s', declaration, source)[0]!.egress).toEqual(['api.example.com:443']);
    const none = readGrantSource({ MCP_SKILL_RUN: JSON.stringify([{ skill: 's', script: 'a.py' }]) });
    expect(grantScripts('s', declaration, none)[0]!.egress).toEqual([]);
  });

  it('standalone takes the declaration as the grant', () => {
    expect(grantScripts('s', declaration, readGrantSource({}))[0]!.egress).toEqual(['*.example.com', '127.0.0.1:8080']);
  });

  it('a row holding an entry that does not parse grants nothing at all', () => {
    const source = readGrantSource({ MCP_SKILL_RUN: JSON.stringify([{ skill: 's', script: 'a.py', egress: ['api.example.com', '*'] }]) });
    expect(source).toMatchObject({ kind: 'owner', rows: [] });
    expect((source as { error: string }).error).toContain('rows 0');
  });

  it('names granted destinations the declaration does not cover as a dead grant', () => {
    const source = readGrantSource({
      MCP_SKILL_RUN: JSON.stringify([{ skill: 's', script: 'a.py', egress: ['api.example.com', 'evil.org'] }]),
    });
    const dead = deadGrantRows(
      source,
      () => declaration.run as never,
      () => declaration.egress,
    );
    expect(dead).toHaveLength(1);
    expect(dead[0]!.why).toContain('grants egress evil.org');
  });
});

describe('proxy variables in the script environment', () => {
  it('an override replaces the host value, null drops it, and an empty string is passed as set', () => {
    const built = buildScriptEnv({ HTTP_PROXY: 'http://user:secret@corp:3128', NO_PROXY: '.corp', HTTPS_PROXY: 'http://corp:3128' }, [], {
      HTTP_PROXY: 'http://127.0.0.1:3128',
      NO_PROXY: '',
      HTTPS_PROXY: null,
    });
    expect(built.env).toEqual({ HTTP_PROXY: 'http://127.0.0.1:3128', NO_PROXY: '' });
    expect(built.names).toEqual(['HTTP_PROXY', 'NO_PROXY']);
  });
});
