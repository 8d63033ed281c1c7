/**
 * The HTTP fast path (server/http/fast-path.ts) against the SDK handler it stands in front of: two
 * real servers on the same folder and the same OAuth issuer, one with SKILL_MCP_HTTP_FAST_PATH
 * off, asked the same requests — every answer (status, headers, body bytes) must be the same, and
 * `skill_mcp_http_fast_path_total` on /metrics says which requests the fast path took. Then the
 * attacks it must not open: no token, another identity's hidden skill, path traversal, a body
 * over the cap.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { tempDir } from '../runner/harness.js';
import { envelope, MODERN, startHttp, type HttpServer } from './harness.js';
import { freePort, startIssuer, type TestIssuer } from './issuer.js';

const HIDDEN = 'vault-ops';
const MAX_BODY_BYTES = 8192;
const STATIC_TOKEN = 'fast-path-static-token-0123456789';
/** A byte that is not UTF-8 on its own: the file is served as a blob. */
const BINARY = Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x81, 0x7f, 0x10, 0xc3]);

interface Side {
  server: HttpServer;
  metricsUrl: string;
  audience: string;
  tokens: Record<string, string>;
}

let base: string;
let issuer: TestIssuer;
let fast: Side;
let slow: Side;
/** The same pair behind a static bearer token. */
let fastToken: Side;
let slowToken: Side;

function skill(root: string, name: string, description: string, body = `# ${name}\n\nSteps.\n`): void {
  mkdirSync(join(root, name), { recursive: true });
  writeFileSync(join(root, name, 'SKILL.md'), `---\nname: ${name}\ndescription: ${description}\n---\n\n${body}`);
}

/** A server on `skills`; its callers are Alice and Bob by OAuth, or the one holder of a static token. */
async function side(skills: string, fastPath: 'on' | 'off', auth: 'oauth' | 'token' = 'oauth'): Promise<Side> {
  const port = await freePort();
  const audience = `http://127.0.0.1:${port}/mcp`;
  const server = await startHttp(
    {
      SKILLS_DIR: skills,
      SKILL_MCP_VISIBLE: JSON.stringify([{ skill: HIDDEN, subjects: ['alice'] }]),
      SKILL_MCP_PAGE_SIZE: '2',
      SKILL_MCP_HTTP_MAX_BODY_BYTES: String(MAX_BODY_BYTES),
      SKILL_MCP_HTTP_FAST_PATH: fastPath,
      SKILL_MCP_RUNNER_SOCKET: join(base, 'no-runner.sock'),
      // No idle keep-alive socket closed under a client about to reuse it ("fetch failed" on a busy machine).
      SKILL_MCP_HTTP_KEEP_ALIVE_TIMEOUT_MS: '120000',
      ...(auth === 'oauth'
        ? { SKILL_MCP_OAUTH_ISSUER: issuer.issuer, SKILL_MCP_OAUTH_AUDIENCE: audience }
        : { SKILL_MCP_HTTP_TOKEN: STATIC_TOKEN }),
    },
    ['--metrics-port', '0'],
    { port },
  );
  const metricsUrl = /metrics on (http:\/\/\S+)/.exec(server.stderr())![1]!;
  const tokens: Record<string, string> = {};
  for (const sub of ['alice', 'bob'])
    tokens[sub] = auth === 'oauth' ? await issuer.mint({ sub, aud: audience, scope: 'skills:read' }) : STATIC_TOKEN;
  return { server, metricsUrl, audience, tokens };
}

beforeAll(async () => {
  base = tempDir('http-fast-path');
  const skills = join(base, 'skills');
  skill(skills, 'alpha', 'First skill of the list.');
  skill(skills, 'bravo', 'Second skill of the list.');
  skill(skills, 'charlie', 'Third skill of the list.');
  skill(skills, 'probe', 'Files of every kind to read.');
  writeFileSync(join(skills, 'probe', 'notes.txt'), 'plain text notes\n'.repeat(40));
  writeFileSync(join(skills, 'probe', 'data.bin'), BINARY);
  mkdirSync(join(skills, 'probe', 'references', 'deep'), { recursive: true });
  writeFileSync(join(skills, 'probe', 'references', 'deep', 'guide.md'), '# Guide\n\nNested.\n');
  skill(skills, HIDDEN, 'Rotate the vault unseal keys.', '# Vault operations\n\nThe unseal ritual.\n');
  issuer = await startIssuer();
  [fast, slow, fastToken, slowToken] = await Promise.all([
    side(skills, 'on'),
    side(skills, 'off'),
    side(skills, 'on', 'token'),
    side(skills, 'off', 'token'),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all([fast, slow, fastToken, slowToken].map((s) => s?.server.stop()));
  await issuer?.close();
  rmSync(base, { recursive: true, force: true });
});

/** One raw request: a body (serialized here unless it is a string) and headers (`null` drops one). */
interface Raw {
  body: unknown;
  headers: Record<string, string | null>;
  /** Who sends it; `undefined`: no Authorization header. */
  as?: 'alice' | 'bob' | undefined;
}

/** A 2026-07-28 request with the headers a client sends, then `headers`'s changes; `bodyChanges` edit the message. */
function modern(
  method: string,
  params: Record<string, unknown>,
  headers: Record<string, string | null> = {},
  bodyChanges: Record<string, unknown> = {},
): Raw {
  const uri = params['uri'];
  return {
    body: { jsonrpc: '2.0', id: 7, method, params: envelope(params), ...bodyChanges },
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN,
      'mcp-method': method,
      ...(typeof uri === 'string' ? { 'mcp-name': uri } : {}),
      ...headers,
    },
    as: 'alice',
  };
}

const read = (uri: string, headers: Record<string, string | null> = {}): Raw => modern('resources/read', { uri }, headers);

interface Answer {
  status: number;
  headers: [string, string][];
  text: string;
}

async function send(to: Side, raw: Raw): Promise<Answer> {
  const headers = Object.fromEntries(Object.entries(raw.headers).filter((entry): entry is [string, string] => entry[1] !== null));
  if (raw.as) headers['authorization'] = `Bearer ${to.tokens[raw.as]}`;
  const response = await fetch(to.server.url, {
    method: 'POST',
    headers,
    body: typeof raw.body === 'string' ? raw.body : JSON.stringify(raw.body),
  });
  // The date is the clock's, not the answer's; the server's own address (a 401's resource_metadata) differs by port.
  const host = new URL(to.server.url).host;
  const kept = [...response.headers]
    .filter(([name]) => name !== 'date')
    .map(([name, value]): [string, string] => [name, value.replaceAll(host, 'SERVER')]);
  return { status: response.status, headers: kept, text: (await response.text()).replaceAll(host, 'SERVER') };
}

/** How many requests the fast path answered so far. */
async function fastCount(to: Side): Promise<number> {
  const text = await (await fetch(to.metricsUrl)).text();
  return [...text.matchAll(/^skill_mcp_http_fast_path_total\{[^}]*\} (\d+)/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
}

/** Both servers' answers to `raw`, and whether the fast-path server took its fast path. */
async function both(raw: Raw, pair: [Side, Side] = [fast, slow]): Promise<{ fast: Answer; slow: Answer; tookFastPath: boolean }> {
  const before = await fastCount(pair[0]);
  const answers = { fast: await send(pair[0], raw), slow: await send(pair[1], raw) };
  const tookFastPath = (await fastCount(pair[0])) > before;
  expect(await fastCount(pair[1])).toBe(0);
  return { ...answers, tookFastPath };
}

async function expectSame(raw: Raw, takesFastPath: boolean, pair: [Side, Side] = [fast, slow]): Promise<Answer> {
  const answers = await both(raw, pair);
  expect(answers.fast).toEqual(answers.slow);
  expect(answers.tookFastPath).toBe(takesFastPath);
  return answers.fast;
}

const SENTINEL = (value: string): string => `=?base64?${Buffer.from(value).toString('base64')}?=`;

describe('the fast path answers exactly what the SDK handler answers', () => {
  test('skills/list: the first page, then the next by its cursor', async () => {
    const first = await expectSame(modern('skills/list', {}), true);
    const page = JSON.parse(first.text) as {
      result: { skills: { uri: string }[]; nextCursor?: string; ttlMs: number; cacheScope: string };
    };
    expect(page.result.skills).toHaveLength(2);
    expect(page.result.cacheScope).toBe('private');
    const cursor = page.result.nextCursor!;
    expect(cursor).toBeTypeOf('string');
    const second = await expectSame(modern('skills/list', { cursor }), true);
    expect(second.text).not.toEqual(first.text);
    // An id may be a string; a cursor the catalog never issued is the SDK's error.
    await expectSame(modern('skills/list', { cursor }, {}, { id: 'page-2' }), true);
    await expectSame(modern('skills/list', { cursor: 'bm90LWEtY3Vyc29y' }), false);
  });

  test.each([
    ['a text file', 'skill://probe/notes.txt'],
    ['a binary file', 'skill://probe/data.bin'],
    ['a file in a nested folder', 'skill://probe/references/deep/guide.md'],
    ['SKILL.md', 'skill://probe/SKILL.md'],
    ['a URI the URL parser normalises', 'skill://probe/./notes.txt'],
  ])('resources/read of %s', async (_what, uri) => {
    const answer = await expectSame(read(uri), true);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.text).result.contents).toHaveLength(1);
  });

  test.each([
    ['a missing file', 'skill://probe/missing.txt'],
    ['a missing skill', 'skill://nobody/SKILL.md'],
    ['a URI of another scheme', 'https://example.com/notes.txt'],
    ['a URI that does not parse', 'not a uri'],
    ['a skill folder itself', 'skill://probe/'],
  ])('resources/read of %s: the SDK answers the error', async (_what, uri) => {
    const answer = await expectSame(read(uri), false);
    expect(JSON.parse(answer.text).error).toBeDefined();
  });

  test('resources/read of a skill hidden from this identity: the SDK answers not found', async () => {
    const answer = await expectSame({ ...read(`skill://${HIDDEN}/SKILL.md`), as: 'bob' }, false);
    expect(answer.text).not.toContain('unseal');
  });

  test.each([
    ['Accept: application/json only', { accept: 'application/json' }, true],
    ['Accept: text/event-stream only', { accept: 'text/event-stream' }, true],
    ['no Accept', { accept: null }, true],
    ['content-type with a charset', { 'content-type': 'application/json; charset=utf-8' }, true],
    ['Mcp-Name naming another file', { 'mcp-name': 'skill://probe/SKILL.md' }, false],
    ['no Mcp-Name', { 'mcp-name': null }, false],
    ['Mcp-Name as a base64 sentinel', { 'mcp-name': SENTINEL('skill://probe/notes.txt') }, false],
    ['two Mcp-Name values', { 'mcp-name': 'skill://probe/notes.txt, skill://probe/notes.txt' }, false],
    ['MCP-Protocol-Version naming another version', { 'mcp-protocol-version': '2025-11-25' }, false],
    ['no MCP-Protocol-Version', { 'mcp-protocol-version': null }, false],
    ['Mcp-Method naming another method', { 'mcp-method': 'skills/list' }, false],
    ['no Mcp-Method', { 'mcp-method': null }, false],
    ['content-type text/plain', { 'content-type': 'text/plain' }, false],
    ['no content-type', { 'content-type': null }, false],
  ])('resources/read with %s', async (_what, headers, takesFastPath) => {
    await expectSame(read('skill://probe/notes.txt', headers), takesFastPath);
  });

  const uri = 'skill://probe/notes.txt';
  const meta = (extra: Record<string, unknown>) => ({ ...(envelope()['_meta'] as Record<string, unknown>), ...extra });
  test.each([
    ['id null', { id: null }],
    ['no id', { id: undefined }],
    ['an object id', { id: { a: 1 } }],
    ['a fractional id', { id: 1.5 }],
    ['an extra params key', { params: { ...envelope({ uri }), extra: true } }],
    ['progressToken in _meta', { params: { uri, _meta: meta({ progressToken: 'p1' }) } }],
    ['a log level in _meta', { params: { uri, _meta: meta({ 'io.modelcontextprotocol/logLevel': 'debug' }) } }],
    ['an unknown _meta key', { params: { uri, _meta: meta({ 'example.com/x': 1 }) } }],
    ['a body version other than the header', { params: { uri, _meta: meta({ 'io.modelcontextprotocol/protocolVersion': '2025-11-25' }) } }],
    ['no envelope', { params: { uri } }],
    ['a uri that is not a string', { params: { ...envelope({ uri: 7 }) } }],
    ['an extra top-level key', { extra: 1 }],
    ['jsonrpc 1.0', { jsonrpc: '1.0' }],
  ])('resources/read with %s: the SDK answers', async (_what, changes) => {
    await expectSame(modern('resources/read', { uri }, {}, changes), false);
  });

  test.each([
    ['a cursor that is not a string', { params: envelope({ cursor: 3 }) }, {}],
    ['an extra params key', { params: envelope({ limit: 3 }) }, {}],
    ['an Mcp-Name header', {}, { 'mcp-name': 'skill://probe/SKILL.md' }],
  ])('skills/list with %s: the SDK answers', async (_what, changes, headers) => {
    await expectSame(modern('skills/list', {}, headers, changes), false);
  });

  test('a batch, a 2025-era request, a notification, a body that is not JSON: the SDK answers', async () => {
    const one = modern('resources/read', { uri });
    await expectSame({ ...one, body: [one.body] }, false);
    await expectSame(
      {
        ...one,
        body: { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri } },
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
        },
      },
      false,
    );
    await expectSame(modern('notifications/initialized', {}, {}, { id: undefined }), false);
    await expectSame({ ...one, body: '{"jsonrpc":"2.0",' }, false);
    await expectSame({ ...one, body: '' }, false);
  });

  test('the metrics count each answered request once by method', async () => {
    const text = await (await fetch(fast.metricsUrl)).text();
    expect(text).toMatch(/^skill_mcp_http_fast_path_total\{method="resources\/read"\} \d+/m);
    expect(text).toMatch(/^skill_mcp_http_fast_path_total\{method="skills\/list"\} \d+/m);
    expect(text).toMatch(/^skill_mcp_http_requests_total\{method="resources\/read",status="200"\} \d+/m);
  });
});

describe('attacks the fast path must not open', () => {
  test('an eligible request without a token is still 401 (the gate runs first)', async () => {
    const answer = await expectSame({ ...read('skill://probe/notes.txt'), as: undefined }, false);
    expect(answer.status).toBe(401);
    expect(answer.text).not.toContain('plain text notes');
  });

  test('with a static token configured: an eligible request without it, or with a wrong one, is still 401', async () => {
    const pair: [Side, Side] = [fastToken, slowToken];
    const raw = read('skill://probe/notes.txt');
    expect((await expectSame(raw, true, pair)).text).toContain('plain text notes');
    for (const authorization of [null, 'Bearer wrong-token-0123456789abcdef', `Basic ${STATIC_TOKEN}`]) {
      const answer = await expectSame({ ...raw, as: undefined, headers: { ...raw.headers, authorization } }, false, pair);
      expect(answer.status).toBe(401);
      expect(answer.text).not.toContain('plain text notes');
    }
  });

  test('an eligible request with a token for another audience is still 401', async () => {
    const raw = read('skill://probe/notes.txt');
    const answer = await send(fast, {
      ...raw,
      as: undefined,
      headers: { ...raw.headers, authorization: `Bearer ${slow.tokens['alice']}` },
    });
    expect(answer.status).toBe(401);
  });

  test("an identity cannot read or list another's hidden skill through it", async () => {
    const bob = await both({ ...read(`skill://${HIDDEN}/SKILL.md`), as: 'bob' });
    expect(bob.fast).toEqual(bob.slow);
    expect(bob.fast.text).not.toContain('unseal');
    expect(bob.tookFastPath).toBe(false);
    const alice = await expectSame(read(`skill://${HIDDEN}/SKILL.md`), true);
    expect(alice.text).toContain('unseal');
    // Every page of Bob's list, through the fast path, without the skill; Alice's has it.
    const walk = async (as: 'alice' | 'bob'): Promise<string> => {
      let text = '';
      let cursor: string | undefined;
      do {
        const page = await expectSame({ ...modern('skills/list', cursor === undefined ? {} : { cursor }), as }, true);
        text += page.text;
        cursor = (JSON.parse(page.text) as { result: { nextCursor?: string } }).result.nextCursor;
      } while (cursor !== undefined);
      return text;
    };
    expect(await walk('bob')).not.toContain(HIDDEN);
    expect(await walk('alice')).toContain(HIDDEN);
  });

  test.each([
    'skill://probe/../../etc/passwd',
    'skill://probe/%2e%2e/%2e%2e/etc/passwd',
    'skill://probe/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd',
    'skill://probe/..%2f..%2fetc%2fpasswd',
    'skill://probe/%252e%252e/etc/passwd',
    'skill://../etc/passwd',
    `skill://probe/../${HIDDEN}/SKILL.md`,
  ])('path traversal %s gets exactly the SDK path answer', async (uri) => {
    const answers = await both({ ...read(uri), as: 'bob' });
    expect(answers.fast).toEqual(answers.slow);
    expect(answers.fast.text).not.toMatch(/root:|unseal/);
  });

  test('a body over the cap is still 413', async () => {
    const raw = modern('skills/list', { cursor: 'x'.repeat(MAX_BODY_BYTES) });
    const answer = await expectSame(raw, false);
    expect(answer.status).toBe(413);
  });
});
