/**
 * Identities over HTTP with OAuth, through the SDK client and a real runner: a grant row naming
 * `subjects` lets Alice (by `sub`) and Carol (by `group:ops`) run, while Bob — same scopes — may
 * only read and gets NOT_GRANTED; the runner re-checks with the identity the front sent (a front
 * cannot widen it), every audit line of a run names its requester, and the run slots count a
 * person, not a connection.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { auditLines, startRunner, tempDir, type RunnerHandle } from '../runner/harness.js';
import { REPO, startHttp, type HttpServer } from './harness.js';
import { freePort, startIssuer, type TestIssuer } from './issuer.js';

const SKILL = 'commit-message';
const SCRIPT = 'scripts/check-message.js';
const GRANT = JSON.stringify([{ skill: SKILL, script: SCRIPT, subjects: ['alice', 'group:ops'] }]);
const BOTH = ['skills:read', 'skills:run'];

let issuer: TestIssuer;
let runner: RunnerHandle;
let server: HttpServer;
let base: string;

beforeAll(async () => {
  base = tempDir('http-identity');
  issuer = await startIssuer({
    alice: { secret: 'alice-secret-0123456789', scopes: BOTH },
    bob: { secret: 'bob-secret-0123456789', scopes: BOTH },
    carol: { secret: 'carol-secret-0123456789', scopes: BOTH, claims: { groups: ['ops', 'staff'] } },
  });
  const port = await freePort();
  runner = await startRunner({
    env: { MCP_SKILL_RUN: GRANT, SKILL_MCP_UID_RANGE: '61908-61915' },
    base,
    args: process.getuid?.() === 0 ? ['--front-uid', '61183', '--front-gid', '61183'] : [],
  });
  server = await startHttp(
    {
      SKILLS_DIR: `${REPO}skills`,
      SKILL_MCP_RUNNER_SOCKET: runner.socketPath,
      MCP_CONFIRM_MODE: 'auto',
      MCP_SKILL_RUN: GRANT,
      SKILL_MCP_OAUTH_ISSUER: issuer.issuer,
      SKILL_MCP_OAUTH_AUDIENCE: `http://127.0.0.1:${port}/mcp`,
    },
    [],
    { port },
  );
}, 30_000);

afterAll(async () => {
  await server?.stop();
  await runner?.stop();
  await issuer?.close();
  for (const token of issuer?.issued() ?? []) expect(server.stderr() + runner.stderr()).not.toContain(token);
  rmSync(base, { recursive: true, force: true });
});

async function as(id: string): Promise<Client> {
  const provider = new ClientCredentialsProvider({ clientId: id, clientSecret: `${id}-secret-0123456789`, expectedIssuer: issuer.issuer });
  const client = new Client({ name: 'identity-test', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { authProvider: provider }));
  return client;
}

async function call(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<{ isError: boolean; value: Record<string, unknown> }> {
  const result = await client.callTool({ name, arguments: args });
  const text = (result.content as { text?: string }[]).map((c) => c.text ?? '').join('');
  return { isError: result.isError === true, value: (result.structuredContent ?? JSON.parse(text)) as Record<string, unknown> };
}

async function runOnce(client: Client, message: string): Promise<Record<string, unknown>> {
  const first = await call(client, 'skill_run', { name: SKILL, script: SCRIPT, args: [message] });
  expect(first.value, JSON.stringify(first.value)).toMatchObject({ status: 'confirmation-required' });
  const second = await call(client, 'skill_run', {
    name: SKILL,
    script: SCRIPT,
    args: [message],
    confirmToken: first.value['confirmToken'],
  });
  expect(second.isError, JSON.stringify(second.value)).toBe(false);
  return second.value;
}

describe('grants by subject', () => {
  test("Alice (named by sub) runs; the run's audit lines name her as the requester", async () => {
    const alice = await as('alice');
    try {
      const ran = await runOnce(alice, 'feat: alice runs');
      expect(ran).toMatchObject({ exitCode: 0 });
      const lines = auditLines(runner.stateDir).filter(
        (l) => l['run_id'] === ran['runId'] || (l['event'] === 'run.prepare' && l['requester'] === 'alice'),
      );
      const events = lines.map((l) => l['event']);
      expect(events).toEqual(expect.arrayContaining(['run.prepare', 'run.accept', 'run.exit']));
      // The audit's requester is the verified subject, and says where it came from (docs/audit.md).
      for (const line of lines) expect(line).toMatchObject({ requester: 'alice' });
      expect(lines.find((l) => l['event'] === 'run.accept')).toMatchObject({ requester_from: 'oauth' });
    } finally {
      await alice.close();
    }
  });

  test('Carol (named by group:ops) runs', async () => {
    const carol = await as('carol');
    try {
      expect(await runOnce(carol, 'feat: carol runs')).toMatchObject({ exitCode: 0 });
    } finally {
      await carol.close();
    }
  });

  test('Bob has skills:run but no row names him: NOT_GRANTED, and skill_list says so; he can still read', async () => {
    const bob = await as('bob');
    try {
      const refused = await call(bob, 'skill_run', { name: SKILL, script: SCRIPT, args: ['feat: bob tries'] });
      expect(refused.isError).toBe(true);
      expect(JSON.stringify(refused.value)).toContain('NOT_GRANTED');
      expect(JSON.stringify(refused.value)).toContain('subject \\"bob\\"');
      const listed = await call(bob, 'skill_list', {});
      const skill = (listed.value['skills'] as { name: string; ungrantedScripts?: { why: string }[] }[]).find((s) => s.name === SKILL);
      expect(skill?.ungrantedScripts?.[0]?.why).toContain('other identities');
      const loaded = await call(bob, 'skill_load', { name: SKILL });
      expect(loaded.isError).toBe(false);
    } finally {
      await bob.close();
    }
  });

  test('the runner re-checks with the identity it is sent: Bob is NOT_GRANTED there too, Alice is not', async () => {
    const bob = await runner.client.prepare({ skill: SKILL, script: SCRIPT, args: ['x'], identity: { subject: 'bob' } });
    expect(bob.ok).toBe(false);
    expect(!bob.ok && bob.error.code).toBe('NOT_GRANTED');
    const noOne = await runner.client.prepare({ skill: SKILL, script: SCRIPT, args: ['x'] });
    expect(!noOne.ok && noOne.error.code).toBe('NOT_GRANTED');
    const alice = await runner.client.prepare({ skill: SKILL, script: SCRIPT, args: ['x'], identity: { subject: 'alice' } });
    expect(alice.ok).toBe(true);
    const line = auditLines(runner.stateDir)
      .filter((l) => l['event'] === 'run.prepare')
      .at(-1);
    expect(line).toMatchObject({ requester: 'alice', requester_from: 'oauth' });
  });
});

describe('a confirmation token belongs to whom it was minted for', () => {
  test("a token leaked from Alice's conversation does not run as Carol, and stays unspent for Alice", async () => {
    const [alice, carol] = await Promise.all([as('alice'), as('carol')]);
    try {
      const message = 'fix: whose token';
      const first = await call(alice, 'skill_run', { name: SKILL, script: SCRIPT, args: [message] });
      expect(first.value, JSON.stringify(first.value)).toMatchObject({ status: 'confirmation-required' });
      const token = first.value['confirmToken'];
      // Carol is granted this script herself: only the token's owner is wrong.
      const stolen = await call(carol, 'skill_run', { name: SKILL, script: SCRIPT, args: [message], confirmToken: token });
      expect(stolen.isError).toBe(true);
      expect(JSON.stringify(stolen.value)).toContain('TOKEN_INVALID');
      expect(JSON.stringify(stolen.value)).toContain('issued to another identity');
      const refusedLine = auditLines(runner.stateDir)
        .filter((l) => l['event'] === 'run.reject')
        .at(-1);
      expect(refusedLine).toMatchObject({ reason: 'token-invalid', requester: 'carol' });
      const own = await call(alice, 'skill_run', { name: SKILL, script: SCRIPT, args: [message], confirmToken: token });
      expect(own.isError, JSON.stringify(own.value)).toBe(false);
      expect(own.value).toMatchObject({ exitCode: 0 });
    } finally {
      await Promise.all([alice.close(), carol.close()]);
    }
  });

  test('at the runner: a token minted for an identity is refused without one, and one minted without an identity is refused with one', async () => {
    const grantedAlice = await runner.client.prepare({ skill: SKILL, script: SCRIPT, args: ['x'], identity: { subject: 'alice' } });
    expect(grantedAlice.ok).toBe(true);
    if (!grantedAlice.ok) return;
    const anonymous = await runner.client.run({
      skill: SKILL,
      script: SCRIPT,
      args: ['x'],
      confirmToken: grantedAlice.result.confirmToken,
    });
    expect(!anonymous.ok && anonymous.error.code).toBe('TOKEN_INVALID');
  });
});

describe('run slots count a person, not a connection', () => {
  test('two connections of Alice are one client; Carol is another', async () => {
    const [a1, a2, c] = await Promise.all([as('alice'), as('alice'), as('carol')]);
    try {
      const runs = [await runOnce(a1, 'fix: one'), await runOnce(a2, 'fix: two'), await runOnce(c, 'fix: three')];
      const clientOf = (runId: unknown): unknown =>
        auditLines(runner.stateDir).find((l) => l['event'] === 'run.accept' && l['run_id'] === runId)?.['client'];
      const [one, two, three] = runs.map((r) => clientOf(r['runId']));
      expect(one).toMatch(/^[0-9a-f]{32}$/);
      expect(two).toBe(one);
      expect(three).not.toBe(one);
    } finally {
      await Promise.all([a1.close(), a2.close(), c.close()]);
    }
  });
});
