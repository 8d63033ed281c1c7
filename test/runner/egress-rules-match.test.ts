/**
 * Request rules (docs/egress-rules.md): the declaration's `allow` parsed strictly, and the helper's
 * pure request check against every ambiguity a script could use to make a host read another call
 * than the one the rules judged — dot segments, encoded dots and slashes, duplicate slashes, an
 * absolute-form URL to another host, a Host header naming another host, the HTTP/2 preface, a body
 * framed two ways, an Upgrade — each refused by name, never rewritten.
 */
import { describe, expect, it } from 'vitest';
import { parseDeclaration } from '../../shared/declaration.js';
import { parseAllow, pathPatternProblem } from '../../shared/egress-rules.js';
import type { EgressRuleSet } from '../../shared/egress-rules.js';
import { checkRequest, pathMatches, pathProblem, refusalMessage, rulesCovering } from '../../runner/helper/rules.js';
import type { Authority } from '../../runner/helper/rules.js';

const RUN = [{ script: 'call.py', interpreter: 'python3' }];

function declare(egress: unknown) {
  return parseDeclaration({ version: 1, run: RUN, egress } as never);
}

function rejected(egress: unknown): string {
  const result = declare(egress);
  expect(result.declaration, JSON.stringify(result)).toBeUndefined();
  return result.problems[0]!;
}

const SET: EgressRuleSet = {
  entry: 'api.example.com:443',
  allow: [
    { methods: ['GET'], path: '/v1/items/*' },
    { methods: ['POST', 'PUT'], path: '/v1/items/**' },
  ],
};
const TO: Authority = { host: 'api.example.com', port: 443, defaultPort: 443 };

function check(method: string, target: string, headers: string[] = []) {
  return checkRequest(SET, TO, { method, target, rawHeaders: ['Host', 'api.example.com', ...headers] });
}

describe('declaring rules', () => {
  it('reads the issue example: methods upper case and sorted, host canonical, rules kept per entry', () => {
    const result = declare([
      {
        host: 'API.example.com:443',
        allow: [
          { method: 'GET', path: '/v1/items/*' },
          { method: ['PUT', 'POST'], path: '/v1/items/**' },
        ],
      },
      'other.example.org',
    ]);
    expect(result.problems).toEqual([]);
    expect(result.declaration!.egress).toEqual(['api.example.com:443', 'other.example.org']);
    expect(result.declaration!.egressRules).toEqual([SET]);
  });

  it('keeps host-only entries without rules (a tunnel, as before)', () => {
    expect(declare(['api.example.com']).declaration!.egressRules).toBeUndefined();
  });

  it.each([
    [[{ method: 'get', path: '/v1' }], 'exact and upper case'],
    [[{ method: [], path: '/v1' }], 'at least one method'],
    [[{ method: 'CONNECT', path: '/v1' }], 'CONNECT is never'],
    [[{ method: 'GET' }], 'expected string'],
    [[{ method: 'GET', path: 'v1/items' }], 'must start with "/"'],
    [[{ method: 'GET', path: '/v1/../admin' }], 'normal form'],
    [[{ method: 'GET', path: '/v1/./items' }], 'normal form'],
    [[{ method: 'GET', path: '/v1//items' }], 'normal form'],
    [[{ method: 'GET', path: '/v1/%2e%2e/admin' }], 'encodes'],
    [[{ method: 'GET', path: '/v1/a%2Fb' }], 'encodes'],
    [[{ method: 'GET', path: '/v1/item*' }], 'whole segments'],
    [[{ method: 'GET', path: '/v1/items?id=1' }], 'character a path does not'],
    [[{ method: 'GET', path: '/v1', query: 'x' }], 'Unrecognized key'],
    [[], '1 to 64 rules'],
  ])('refuses the rules %j (%s), naming where', (allow, words) => {
    const why = rejected([{ host: 'api.example.com', allow }]);
    expect(why).toContain('mcp-host.egress[0].allow');
    expect(why).toContain(words);
  });

  it('refuses an unknown key beside host and allow, and a non-string host', () => {
    expect(rejected([{ host: 'api.example.com', allow: [{ method: 'GET', path: '/' }], ports: 1 }])).toContain('{ host, allow }');
    expect(rejected([{ allow: [{ method: 'GET', path: '/' }] }])).toContain('{ host, allow }');
  });

  it('refuses a host with rules that another entry also reaches (it would escape them)', () => {
    expect(rejected([{ host: 'api.example.com', allow: [{ method: 'GET', path: '/' }] }, '*.example.com'])).toContain(
      'mcp-host.egress[1]: *.example.com and api.example.com overlap and one has request rules',
    );
    expect(rejected(['*.example.com', { host: 'api.example.com', allow: [{ method: 'GET', path: '/' }] }])).toContain('overlap');
    expect(rejected([{ host: 'api.example.com:443', allow: [{ method: 'GET', path: '/' }] }, 'api.example.com'])).toContain('overlap');
    expect(rejected([{ host: 'api.example.com', allow: [{ method: 'GET', path: '/' }] }, 'api.example.com'])).toContain('overlap');
    // Another port of the same host is another destination: no overlap.
    expect(
      declare([{ host: 'api.example.com:443', allow: [{ method: 'GET', path: '/' }] }, 'api.example.com:8443']).declaration,
    ).toBeDefined();
  });

  it('accepts "*" and "**" as whole segments, a trailing slash, and percent-encoded characters in upper-case hex', () => {
    for (const path of ['/', '/**', '/v1/*/items/', '/v1/caf%C3%A9', '/v1/a:b@c']) expect(pathPatternProblem(path)).toBeUndefined();
    expect(parseAllow([{ method: ['GET', 'GET'], path: '/' }], 'x')).toEqual({ ok: true, rules: [{ methods: ['GET'], path: '/' }] });
  });

  it('gives a granted narrower entry the rules of the declared entry covering it, and none to an entry without rules', () => {
    const sets = [{ entry: '*.example.com', allow: [{ methods: ['GET'], path: '/' }] }];
    expect(rulesCovering(sets, 'api.example.com:443')).toBe(sets[0]);
    expect(rulesCovering(sets, '*.example.com:443')).toBe(sets[0]);
    expect(rulesCovering(sets, 'other.org')).toBeUndefined();
    expect(rulesCovering(sets, 'example.com')).toBeUndefined();
  });
});

describe('path patterns', () => {
  it.each([
    ['/v1/items/*', '/v1/items/42', true],
    ['/v1/items/*', '/v1/items/42/parts', false],
    ['/v1/items/*', '/v1/items/', false],
    ['/v1/items/*', '/v1/items', false],
    ['/v1/items/**', '/v1/items', true],
    ['/v1/items/**', '/v1/items/', true],
    ['/v1/items/**', '/v1/items/a/b/c', true],
    ['/v1/items/**', '/v1/itemsX', false],
    ['/v1/items/', '/v1/items/', true],
    ['/v1/items/', '/v1/items', false],
    ['/v1/items', '/v1/items/', false],
    ['/**/parts', '/v1/items/3/parts', true],
    ['/**/parts', '/parts', true],
    ['/V1/items', '/v1/items', false],
    ['/v1/caf%C3%A9', '/v1/caf%c3%a9', false],
  ])('%s against %s: %s', (pattern, path, expected) => {
    expect(pathMatches(pattern, path)).toBe(expected);
  });

  it('stays linear on a pattern of many "**" against a long path (no backtracking blow-up)', () => {
    const pattern = `/${Array(30).fill('**').join('/')}/z`;
    const path = `/${Array(4000).fill('a').join('/')}`;
    expect(pathMatches(pattern, path)).toBe(false);
  });
});

describe('attacks on a host with rules, each refused by name', () => {
  it('lets an allowed call through with the rule it matched; the query is not matched', () => {
    expect(check('GET', '/v1/items/42?fields=a/../b')).toEqual({ allowed: true, rule: 'GET /v1/items/*' });
    expect(check('PUT', '/v1/items/4/parts')).toEqual({ allowed: true, rule: 'POST,PUT /v1/items/**' });
  });

  it('wrong method: DELETE and a lower-case get are no rule', () => {
    expect(check('DELETE', '/v1/items/42')).toMatchObject({ allowed: false, reason: 'no-rule' });
    expect(check('get', '/v1/items/42')).toMatchObject({ allowed: false, reason: 'no-rule' });
    expect(check('HEAD', '/v1/items/42')).toMatchObject({ allowed: false, reason: 'no-rule' });
  });

  it.each([
    ['dot-dot traversal', '/v1/items/../admin'],
    ['dot-dot at the end', '/v1/items/x/..'],
    ['dot segment', '/v1/./items/1'],
    ['encoded dots', '/v1/items/%2e%2e/admin'],
    ['encoded dots, upper case', '/v1/items/%2E%2E/admin'],
    ['one encoded dot', '/v1/items/.%2e/admin'],
    ['encoded slash', '/v1/items/a%2Fb'],
    ['encoded slash, lower case', '/v1/items/a%2fb'],
    ['encoded backslash', '/v1/items/a%5cb'],
    ['double encoding', '/v1/items/%252e%252e'],
    ['duplicate slashes', '/v1//items/1'],
    ['leading duplicate slash', '//v1/items/1'],
    ['backslash', '/v1/items\\..\\admin'],
    ['malformed percent-encoding', '/v1/items/%zz'],
  ])('non-normal path (%s) %s', (_name, target) => {
    expect(check('GET', target)).toMatchObject({ allowed: false, reason: 'path-not-normal' });
  });

  it('absolute-form URL to another host', () => {
    expect(check('GET', 'http://evil.example.net/v1/items/1')).toMatchObject({ allowed: false, reason: 'not-origin-form' });
    expect(check('GET', 'https://api.example.com/v1/items/1')).toMatchObject({ allowed: false, reason: 'not-origin-form' });
  });

  it('HTTP/2 preface and asterisk-form', () => {
    expect(check('PRI', '*')).toMatchObject({ allowed: false, reason: 'not-origin-form' });
    expect(check('OPTIONS', '*')).toMatchObject({ allowed: false, reason: 'not-origin-form' });
  });

  it('Host header mismatch, a second Host, no Host, and a port other than the connection’s', () => {
    const other = checkRequest(SET, TO, { method: 'GET', target: '/v1/items/1', rawHeaders: ['Host', 'admin.example.com'] });
    expect(other).toMatchObject({ allowed: false, reason: 'host-mismatch' });
    const two = checkRequest(SET, TO, {
      method: 'GET',
      target: '/v1/items/1',
      rawHeaders: ['Host', 'api.example.com', 'host', 'evil.net'],
    });
    expect(two).toMatchObject({ allowed: false, reason: 'host-mismatch' });
    expect(checkRequest(SET, TO, { method: 'GET', target: '/v1/items/1', rawHeaders: [] })).toMatchObject({ reason: 'host-mismatch' });
    const port = checkRequest(SET, TO, { method: 'GET', target: '/v1/items/1', rawHeaders: ['Host', 'api.example.com:8443'] });
    expect(port).toMatchObject({ allowed: false, reason: 'host-mismatch' });
    const explicit = checkRequest(SET, TO, { method: 'GET', target: '/v1/items/1', rawHeaders: ['Host', 'API.example.com:443'] });
    expect(explicit).toMatchObject({ allowed: true });
  });

  it('conflicting Content-Length and Transfer-Encoding, two lengths, a coding other than chunked', () => {
    expect(check('POST', '/v1/items/1', ['Content-Length', '5', 'Transfer-Encoding', 'chunked'])).toMatchObject({ reason: 'framing' });
    expect(check('POST', '/v1/items/1', ['Content-Length', '5', 'Content-Length', '6'])).toMatchObject({ reason: 'framing' });
    expect(check('POST', '/v1/items/1', ['Transfer-Encoding', 'gzip, chunked'])).toMatchObject({ reason: 'framing' });
    expect(check('POST', '/v1/items/1', ['Transfer-Encoding', 'chunked'])).toMatchObject({ allowed: true });
  });

  it('any Upgrade (WebSocket, h2c)', () => {
    expect(check('GET', '/v1/items/1', ['Upgrade', 'websocket', 'Connection', 'Upgrade'])).toMatchObject({ reason: 'upgrade' });
    expect(check('GET', '/v1/items/1', ['Upgrade', 'h2c'])).toMatchObject({ reason: 'upgrade' });
    expect(check('GET', '/v1/items/1', ['HTTP2-Settings', 'AAMAAABkAAQAoAAAAAIAAAAA'])).toMatchObject({ reason: 'upgrade' });
  });

  it('a refusal names the rule set and what it allows', () => {
    const verdict = check('DELETE', '/v1/items/42');
    if (verdict.allowed) throw new Error('allowed');
    const message = refusalMessage(SET, verdict.why);
    expect(message).toContain('request rules of api.example.com:443');
    expect(message).toContain('GET /v1/items/*; POST,PUT /v1/items/**');
    expect(message).toContain('no rule allows DELETE /v1/items/42');
  });

  it('pathProblem accepts a normal path with pchar and encoded characters', () => {
    expect(pathProblem('/v1/caf%C3%A9/a:b@c/~x')).toBeUndefined();
    expect(pathProblem('/')).toBeUndefined();
  });
});
