/**
 * The HTTP front as an OAuth resource server, against a local issuer made in the test: the RFC 9728
 * metadata, every way a token is refused (401 invalid_token with the resource_metadata challenge,
 * 403 insufficient_scope), a rotated JWKS picked up by key id, and the SDK client's own OAuth
 * support (client_credentials) end to end. No token appears in the server's output.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { connectClient, modernPost, REPO, startHttp, type HttpServer } from './harness.js';
import { freePort, makeKey, startIssuer, unsignedToken, type TestIssuer } from './issuer.js';

let issuer: TestIssuer;
let server: HttpServer;
let audience: string;
const minted: string[] = [];

beforeAll(async () => {
  issuer = await startIssuer({
    alice: { secret: 'alice-secret-0123456789', scopes: ['skills:read', 'skills:run'] },
    reader: { secret: 'reader-secret-0123456789', scopes: ['skills:read'] },
  });
  const port = await freePort();
  audience = `http://127.0.0.1:${port}/mcp`;
  server = await startHttp(
    {
      SKILLS_DIR: `${REPO}skills`,
      SKILL_MCP_OAUTH_ISSUER: issuer.issuer,
      SKILL_MCP_OAUTH_AUDIENCE: audience,
      SKILL_MCP_OAUTH_JWKS_COOLDOWN_SECONDS: '0',
    },
    [],
    { port },
  );
}, 30_000);

afterAll(async () => {
  await server?.stop();
  await issuer?.close();
  // Security: no access token, minted here or by the token endpoint, is ever written by the server.
  for (const token of [...minted, ...(issuer?.issued() ?? [])]) expect(server.stderr()).not.toContain(token);
});

async function token(payload: Parameters<TestIssuer['mint']>[0], options?: Parameters<TestIssuer['mint']>[1]): Promise<string> {
  const value = await issuer.mint({ sub: 'alice', aud: audience, scope: 'skills:read skills:run', ...payload }, options);
  minted.push(value);
  return value;
}

function list(bearer: string) {
  return modernPost(server.url, 'tools/list', {}, { authorization: `Bearer ${bearer}` });
}

function challenge(answer: { headers: Headers }): string {
  return answer.headers.get('www-authenticate') ?? '';
}

describe('protected resource metadata (RFC 9728)', () => {
  test.each(['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource'])(
    '%s names the issuer, the resource and the scopes',
    async (path) => {
      const response = await fetch(new URL(path, server.url));
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({
        resource: audience,
        authorization_servers: [issuer.issuer],
        scopes_supported: ['skills:read', 'skills:run', 'skills:approve'],
        bearer_methods_supported: ['header'],
      });
    },
  );

  test('a request without a token is 401 with a challenge naming the metadata URL', async () => {
    const answer = await modernPost(server.url, 'tools/list');
    expect(answer.status).toBe(401);
    expect(challenge(answer)).toContain(
      `resource_metadata="http://127.0.0.1:${new URL(audience).port}/.well-known/oauth-protected-resource/mcp"`,
    );
    expect(challenge(answer)).toContain('error="invalid_token"');
  });
});

describe('tokens that are refused with 401 invalid_token', () => {
  const now = (): number => Math.floor(Date.now() / 1000);
  const cases: [string, () => Promise<string>][] = [
    ['expired (past the clock skew)', () => token({ exp: now() - 120 })],
    ['not yet valid (nbf beyond the clock skew)', () => token({ nbf: now() + 600 })],
    ['for another audience', () => token({ aud: 'https://other.example/mcp' })],
    ['from another issuer', () => token({ iss: 'https://evil.example' })],
    ['without a sub', () => token({ sub: undefined })],
    [
      'without an exp',
      () => issuer.mint({ iss: issuer.issuer, sub: 'alice', aud: audience, scope: 'skills:read' }, { omitDefaults: true }),
    ],
    ['signed by a foreign key under an unknown kid', async () => token({}, { key: await makeKey() })],
    ["signed by a foreign key under the issuer's kid", async () => token({}, { key: { ...(await makeKey()), kid: issuer.current().kid } })],
    [
      'alg none (unsigned)',
      async () => unsignedToken({ iss: issuer.issuer, sub: 'alice', aud: audience, scope: 'skills:read', exp: now() + 300 }),
    ],
    ['not a JWT at all', async () => 'not-a-jwt'],
    ['with a client_id over 256 characters (refused, not cut)', () => token({ client_id: 'c'.repeat(300) })],
    ['with more groups than fit (refused, not cut)', () => token({ groups: Array.from({ length: 65 }, (_, i) => `g${i}`) })],
  ];
  test.each(cases)('%s', async (_name, make) => {
    const answer = await list(await make());
    expect(answer.status).toBe(401);
    expect(challenge(answer)).toMatch(/^Bearer /);
    expect(challenge(answer)).toContain('error="invalid_token"');
    expect(challenge(answer)).toContain('resource_metadata=');
    expect(answer.body?.['result']).toBeUndefined();
  });

  test("HS256 signed with the issuer's public key as the secret (algorithm confusion)", async () => {
    const { SignJWT } = await import('jose');
    const secret = new TextEncoder().encode(JSON.stringify(issuer.current().publicJwk));
    const forged = await new SignJWT({
      iss: issuer.issuer,
      sub: 'alice',
      aud: audience,
      scope: 'skills:read',
      exp: Math.floor(Date.now() / 1000) + 300,
    })
      .setProtectedHeader({ alg: 'HS256', kid: issuer.current().kid })
      .sign(secret);
    const answer = await list(forged);
    expect(answer.status).toBe(401);
    expect(answer.body?.['result']).toBeUndefined();
  });
});

describe('scopes', () => {
  test('a valid token without skills:read is 403 insufficient_scope', async () => {
    const answer = await list(await token({ scope: 'skills:run' }));
    expect(answer.status).toBe(403);
    expect(challenge(answer)).toContain('error="insufficient_scope"');
    expect(challenge(answer)).toContain('scope="skills:read"');
  });

  test('a valid token with skills:read is served', async () => {
    const answer = await list(await token({ scope: 'skills:read' }));
    expect(answer.status).toBe(200);
    expect(JSON.stringify(answer.body)).toContain('skill_run');
  });

  test('the scope may come as an scp array too', async () => {
    expect((await list(await token({ scope: undefined, scp: ['skills:read'] }))).status).toBe(200);
  });

  test('skill_run without skills:run is 403 insufficient_scope naming skills:run; nothing runs', async () => {
    const bearer = await token({ scope: 'skills:read' });
    const answer = await modernPost(
      server.url,
      'tools/call',
      { name: 'skill_run', arguments: { name: 'commit-message', script: 'scripts/check-message.js', args: ['fix: x'] } },
      { authorization: `Bearer ${bearer}`, 'mcp-name': 'skill_run' },
    );
    expect(answer.status).toBe(403);
    expect(challenge(answer)).toContain('error="insufficient_scope"');
    expect(challenge(answer)).toContain('scope="skills:run"');
    expect(answer.body?.['result']).toBeUndefined();
  });
});

describe('key rotation', () => {
  test('a token under a new kid is accepted after the issuer rotates; the retired key is refused', async () => {
    const before = await token({});
    expect((await list(before)).status).toBe(200);
    const fetches = issuer.jwksFetches();
    await issuer.rotate();
    const after = await token({});
    expect((await list(after)).status).toBe(200);
    expect(issuer.jwksFetches()).toBeGreaterThan(fetches);
    // The refetched set no longer holds the old key.
    expect((await list(before)).status).toBe(401);
  });
});

describe("the SDK client's own OAuth support", () => {
  async function oauthClient(id: string, secret: string, era: 'legacy' | 'modern'): Promise<Client> {
    const provider = new ClientCredentialsProvider({ clientId: id, clientSecret: secret, expectedIssuer: issuer.issuer });
    const client = new Client(
      { name: 'oauth-test', version: '0.0.0' },
      era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
    );
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { authProvider: provider }));
    return client;
  }

  test.each(['legacy', 'modern'] as const)(
    '%s era: client_credentials through the 401 challenge, the metadata and the token endpoint',
    async (era) => {
      const issuedBefore = issuer.issued().length;
      const client = await oauthClient('alice', 'alice-secret-0123456789', era);
      try {
        const tools = await client.listTools();
        expect(tools.tools.map((t) => t.name)).toContain('skill_run');
        expect(issuer.issued().length).toBeGreaterThan(issuedBefore);
      } finally {
        await client.close();
      }
    },
  );

  test('a client with a wrong secret cannot connect', async () => {
    await expect(oauthClient('alice', 'wrong-secret', 'modern')).rejects.toThrow();
  });

  test('the static-token helper without a token cannot connect either', async () => {
    await expect(connectClient(server.url, 'modern')).rejects.toThrow();
  });
});

describe('configuration mistakes stop the server with a message', () => {
  test('both the static token and an issuer', async () => {
    await expect(
      startHttp({ SKILL_MCP_HTTP_TOKEN: 'x'.repeat(32), SKILL_MCP_OAUTH_ISSUER: issuer.issuer, SKILL_MCP_OAUTH_AUDIENCE: audience }),
    ).rejects.toThrow(/set one/);
  });
  test('an issuer without an audience', async () => {
    await expect(startHttp({ SKILL_MCP_OAUTH_ISSUER: issuer.issuer })).rejects.toThrow(/SKILL_MCP_OAUTH_AUDIENCE/);
  });
  test('a plain-http issuer that is not on loopback', async () => {
    await expect(startHttp({ SKILL_MCP_OAUTH_ISSUER: 'http://issuer.example', SKILL_MCP_OAUTH_AUDIENCE: audience })).rejects.toThrow(
      /https URL/,
    );
  });
  test('an issuer whose metadata cannot be fetched', async () => {
    const gone = await startIssuer();
    const url = gone.issuer;
    await gone.close();
    await expect(startHttp({ SKILL_MCP_OAUTH_ISSUER: url, SKILL_MCP_OAUTH_AUDIENCE: audience })).rejects.toThrow(/could not be fetched/);
  });
  test('metadata that names another issuer', async () => {
    // The issuer serves its metadata at the path-inserted URL; asked as issuer "<origin>/tenant" it answers for "<origin>".
    const other = await startIssuer({}, { path: '' });
    try {
      await expect(startHttp({ SKILL_MCP_OAUTH_ISSUER: `${other.issuer}/`, SKILL_MCP_OAUTH_AUDIENCE: audience })).rejects.toThrow(
        /names issuer/,
      );
    } finally {
      await other.close();
    }
  });
});
