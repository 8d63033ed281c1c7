/**
 * Granting secrets (issue 30, docs/secrets.md "Granting"): MCP_SKILL_RUN rows name the secrets a
 * script gets and may narrow their hosts — declared ∩ granted ∩ the script's granted egress — and
 * never widen them: a row naming hosts the declaration does not cover, a wider wildcard, another
 * port, or a secret the skill does not declare binds nothing more (and is a grant problem). A
 * secret left with no host is not bound, and says why.
 */
import { describe, expect, it } from 'vitest';
import type { Declaration } from '../../shared/declaration.js';
import { intersectEgressLists } from '../../shared/egress.js';
import { deadGrantRows, grantScripts, readGrantSource } from '../../shared/grant.js';

const declaration: Declaration = {
  version: 1,
  run: [{ script: 'call.py', interpreter: 'python3', env: [], timeoutMs: 1000 }],
  env: [],
  egress: ['*.example.com', 'api.other.org', 'hooks.other.org:8443'],
  secrets: [
    { name: 'API_TOKEN', hosts: ['*.example.com', 'api.other.org'], header: 'Authorization', format: 'Bearer {value}' },
    { name: 'HOOK_KEY', hosts: ['hooks.other.org:8443'], header: 'X-Hook-Key', format: '{value}' },
  ],
};

function grantWith(rows: unknown[]) {
  const source = readGrantSource({ MCP_SKILL_RUN: JSON.stringify(rows) });
  return { source, grant: grantScripts('s', declaration, source)[0]! };
}

describe('intersecting entries never lets through more than either side', () => {
  it.each([
    [['*.example.com'], ['api.example.com:443'], ['api.example.com:443']],
    [['*.example.com:443'], ['api.example.com'], ['api.example.com:443']],
    [['api.example.com'], ['*.example.com'], ['api.example.com']],
    [['*.example.com'], ['*.eu.example.com'], ['*.eu.example.com']],
    [['*.example.com'], ['example.com'], []],
    [['*.example.com'], ['evilexample.com'], []],
    [['api.example.com:8443'], ['api.example.com'], []],
    [['api.example.com:443'], ['api.example.com:80'], []],
    [['127.0.0.1:8080'], ['127.0.0.1:8080', '127.0.0.1:9090'], ['127.0.0.1:8080']],
    [['*.example.com'], ['127.0.0.1'], []],
  ])('%j ∩ %j = %j', (a, b, both) => {
    expect(intersectEgressLists(a, b)).toEqual(both);
    expect(intersectEgressLists(b, a)).toEqual(both);
  });
});

describe('standalone: the declaration is the grant', () => {
  it('every declared secret is bound to its declared hosts', () => {
    const grant = grantScripts('s', declaration, readGrantSource({}))[0]!;
    expect(grant.secrets).toEqual(declaration.secrets);
    expect(grant.secretsNotBound).toEqual([]);
  });
});

describe('hosted without MCP_SKILL_RUN grants nothing', () => {
  it('no secret is bound', () => {
    const grant = grantScripts('s', declaration, readGrantSource({ MCP_SKILLS_PATH: '/srv/skills' }))[0]!;
    expect(grant.granted).toBe(false);
    expect(grant.secrets).toEqual([]);
  });
});

describe('MCP_SKILL_RUN rows narrow secrets', () => {
  it('a row without secrets binds none, and the preview can say why', () => {
    const { grant } = grantWith([{ skill: 's', script: 'call.py', egress: ['api.example.com'] }]);
    expect(grant.secrets).toEqual([]);
    expect(grant.secretsNotBound).toEqual([
      { name: 'API_TOKEN', why: expect.stringContaining('no MCP_SKILL_RUN row for this script names it') },
      { name: 'HOOK_KEY', why: expect.stringContaining('no MCP_SKILL_RUN row for this script names it') },
    ]);
  });

  it('naming a secret without hosts binds its declared hosts, narrowed by the granted egress', () => {
    const { grant } = grantWith([{ skill: 's', script: 'call.py', egress: ['api.example.com:443'], secrets: [{ name: 'API_TOKEN' }] }]);
    expect(grant.secrets).toEqual([
      { name: 'API_TOKEN', hosts: ['api.example.com:443'], header: 'Authorization', format: 'Bearer {value}' },
    ]);
  });

  it('hosts in the row narrow further', () => {
    const { grant } = grantWith([
      {
        skill: 's',
        script: 'call.py',
        egress: ['*.example.com', 'api.other.org'],
        secrets: [{ name: 'API_TOKEN', hosts: ['api.other.org'] }],
      },
    ]);
    expect(grant.secrets.map((s) => [s.name, s.hosts])).toEqual([['API_TOKEN', ['api.other.org']]]);
  });

  it('grant cannot widen: a host outside the declared ones is not bound, and is a grant problem', () => {
    const { source, grant } = grantWith([
      { skill: 's', script: 'call.py', egress: ['*.example.com', 'evil.org'], secrets: [{ name: 'API_TOKEN', hosts: ['evil.org'] }] },
    ]);
    expect(grant.secrets).toEqual([]);
    expect(grant.secretsNotBound).toEqual([
      { name: 'API_TOKEN', why: expect.stringContaining('none of its hosts') },
      expect.objectContaining({ name: 'HOOK_KEY' }),
    ]);
    const dead = deadGrantRows(
      source,
      () => declaration.run,
      () => declaration.egress,
      () => declaration.secrets!,
    );
    expect(dead.map((d) => d.why)).toContainEqual(
      expect.stringContaining("grants secret API_TOKEN for evil.org, which its declaration's hosts do not cover"),
    );
  });

  it('grant cannot widen: a wildcard row over a declared name stays that name; another port binds nothing', () => {
    const decl: Declaration = {
      ...declaration,
      secrets: [{ name: 'API_TOKEN', hosts: ['api.example.com:443'], header: 'Authorization', format: 'Bearer {value}' }],
    };
    const wide = grantScripts(
      's',
      decl,
      readGrantSource({
        MCP_SKILL_RUN: JSON.stringify([
          { skill: 's', script: 'call.py', egress: ['*.example.com'], secrets: [{ name: 'API_TOKEN', hosts: ['*.example.com'] }] },
        ]),
      }),
    )[0]!;
    expect(wide.secrets.map((s) => s.hosts)).toEqual([['api.example.com:443']]);
    const port = grantScripts(
      's',
      decl,
      readGrantSource({
        MCP_SKILL_RUN: JSON.stringify([
          { skill: 's', script: 'call.py', egress: ['*.example.com'], secrets: [{ name: 'API_TOKEN', hosts: ['api.example.com:8443'] }] },
        ]),
      }),
    )[0]!;
    expect(port.secrets).toEqual([]);
  });

  it('a secret whose hosts are not in the granted egress is not bound', () => {
    const { grant } = grantWith([{ skill: 's', script: 'call.py', egress: ['api.other.org'], secrets: [{ name: 'HOOK_KEY' }] }]);
    expect(grant.secrets).toEqual([]);
    expect(grant.secretsNotBound).toContainEqual({ name: 'HOOK_KEY', why: expect.stringContaining("granted as this script's egress") });
  });

  it('a row granting a secret the skill does not declare binds nothing and is a grant problem', () => {
    const { source, grant } = grantWith([{ skill: 's', script: 'call.py', egress: ['api.other.org'], secrets: [{ name: 'OTHER_TOKEN' }] }]);
    expect(grant.secrets).toEqual([]);
    expect(
      deadGrantRows(
        source,
        () => declaration.run,
        () => declaration.egress,
        () => declaration.secrets!,
      ).map((d) => d.why),
    ).toContainEqual(expect.stringContaining('grants secret OTHER_TOKEN'));
  });

  it('a row whose secret host does not parse grants nothing at all', () => {
    const source = readGrantSource({
      MCP_SKILL_RUN: JSON.stringify([
        { skill: 's', script: 'call.py', egress: ['api.other.org'], secrets: [{ name: 'API_TOKEN', hosts: ['*'] }] },
      ]),
    });
    expect(source).toMatchObject({ kind: 'owner', rows: [] });
    expect((source as { error: string }).error).toContain('rows 0');
  });

  it('a row naming subjects binds only for those callers', () => {
    const source = readGrantSource({
      MCP_SKILL_RUN: JSON.stringify([
        { skill: 's', script: 'call.py', egress: ['api.other.org'], secrets: [{ name: 'API_TOKEN' }], subjects: ['alice'] },
      ]),
    });
    expect(grantScripts('s', declaration, source, { subject: 'alice' })[0]!.secrets.map((s) => s.hosts)).toEqual([['api.other.org']]);
    expect(grantScripts('s', declaration, source, { subject: 'bob' })[0]!.granted).toBe(false);
  });
});
