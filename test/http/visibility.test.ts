/**
 * SKILL_MCP_VISIBLE over HTTP with OAuth: a skill limited to Alice does not exist for Bob — absent
 * from skill_list, skill_search, skills/list, resources/list and prompts/list, NOT_FOUND for
 * skill_load, skill_file, skills/get, resources/read and prompts/get, UNKNOWN_SKILL for skill_run
 * (at the front and at the runner) — while Alice sees and uses it everywhere.
 */
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startRunner, tempDir, type RunnerHandle } from '../runner/harness.js';
import { modernPost, REPO, startHttp, type HttpServer } from './harness.js';
import { freePort, startIssuer, type TestIssuer } from './issuer.js';

const HIDDEN = 'vault-ops';
const VISIBLE = JSON.stringify([{ skill: HIDDEN, subjects: ['alice'] }]);
const BOTH = ['skills:read', 'skills:run'];

let issuer: TestIssuer;
let runner: RunnerHandle;
let server: HttpServer;
let base: string;
let audience: string;

beforeAll(async () => {
  base = tempDir('http-visibility');
  const skills = join(base, 'skills');
  cpSync(join(REPO, 'skills', 'commit-message'), join(skills, 'commit-message'), { recursive: true });
  mkdirSync(join(skills, HIDDEN, 'scripts'), { recursive: true });
  writeFileSync(
    join(skills, HIDDEN, 'SKILL.md'),
    `---\nname: ${HIDDEN}\ndescription: Rotate the vault unseal keys of the operations cluster.\nmcp-host:\n  version: 1\n  run:\n    - script: scripts/rotate.js\n      interpreter: node\n---\n\n# Vault operations\n\nRotate keys with scripts/rotate.js.\n`,
  );
  writeFileSync(join(skills, HIDDEN, 'scripts', 'rotate.js'), "console.log('rotated');\n");
  issuer = await startIssuer({
    alice: { secret: 'alice-secret-0123456789', scopes: BOTH },
    bob: { secret: 'bob-secret-0123456789', scopes: BOTH },
  });
  const port = await freePort();
  audience = `http://127.0.0.1:${port}/mcp`;
  const env = { SKILLS_DIR: skills, SKILL_MCP_VISIBLE: VISIBLE };
  runner = await startRunner({
    env: { ...env, SKILL_MCP_UID_RANGE: '61916-61923' },
    base,
    args: process.getuid?.() === 0 ? ['--front-uid', '61183', '--front-gid', '61183'] : [],
  });
  server = await startHttp(
    {
      ...env,
      SKILL_MCP_RUNNER_SOCKET: runner.socketPath,
      MCP_CONFIRM_MODE: 'auto',
      SKILL_MCP_OAUTH_ISSUER: issuer.issuer,
      SKILL_MCP_OAUTH_AUDIENCE: audience,
    },
    [],
    { port },
  );
}, 30_000);

afterAll(async () => {
  await server?.stop();
  await runner?.stop();
  await issuer?.close();
  rmSync(base, { recursive: true, force: true });
});

async function as(id: string): Promise<Client> {
  const provider = new ClientCredentialsProvider({ clientId: id, clientSecret: `${id}-secret-0123456789`, expectedIssuer: issuer.issuer });
  const client = new Client({ name: 'visibility-test', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { authProvider: provider }));
  return client;
}

async function tool(client: Client, name: string, args: Record<string, unknown>): Promise<{ isError: boolean; text: string }> {
  const result = await client.callTool({ name, arguments: args });
  return { isError: result.isError === true, text: JSON.stringify(result) };
}

/** Everything one identity can see, as one string, and the answers to asking for the hidden skill by name. */
async function surfaces(id: string) {
  const client = await as(id);
  const bearer = await issuer.mint({ sub: id, aud: audience, scope: 'skills:read skills:run' });
  const raw = (method: string, params: Record<string, unknown> = {}) =>
    modernPost(server.url, method, params, { authorization: `Bearer ${bearer}` });
  try {
    const listing = JSON.stringify([
      await tool(client, 'skill_list', {}),
      await tool(client, 'skill_search', { query: 'rotate vault unseal keys operations' }),
      (await raw('skills/list')).body,
      await client.listResources(),
      await client.listPrompts(),
    ]);
    const uri = `skill://${HIDDEN}/SKILL.md`;
    const byName = {
      load: await tool(client, 'skill_load', { name: HIDDEN }),
      file: await tool(client, 'skill_file', { name: HIDDEN, paths: ['SKILL.md'] }),
      run: await tool(client, 'skill_run', { name: HIDDEN, script: 'scripts/rotate.js', args: [] }),
      get: (await raw('skills/get', { uri })).body,
      read: await client.readResource({ uri }).then(
        (r) => ({ ok: true, r }),
        (e: Error) => ({ ok: false, e: e.message }),
      ),
      prompt: await client.getPrompt({ name: HIDDEN }).then(
        (r) => ({ ok: true, r }),
        (e: Error) => ({ ok: false, e: e.message }),
      ),
    };
    return { listing, byName };
  } finally {
    await client.close();
  }
}

describe('a skill visible to Alice only', () => {
  test('Bob cannot see it anywhere, nor reach it by name', async () => {
    const { listing, byName } = await surfaces('bob');
    expect(listing).toContain('commit-message');
    expect(listing).not.toContain(HIDDEN);
    expect(byName.load.isError).toBe(true);
    expect(byName.load.text).toContain('UNKNOWN_SKILL');
    expect(byName.file.isError).toBe(true);
    expect(byName.run.isError).toBe(true);
    expect(byName.run.text).toContain('UNKNOWN_SKILL');
    expect(JSON.stringify(byName.get)).toContain('"error"');
    expect(byName.read.ok).toBe(false);
    expect(byName.prompt.ok).toBe(false);
    // No answer to Bob names the skill's content.
    expect(JSON.stringify(byName)).not.toContain('unseal');
  });

  test('Alice sees it everywhere and reaches it by name', async () => {
    const { listing, byName } = await surfaces('alice');
    expect(listing.split(HIDDEN).length).toBeGreaterThan(5);
    expect(byName.load.isError).toBe(false);
    expect(byName.load.text).toContain('Vault operations');
    expect(byName.file.isError).toBe(false);
    expect(JSON.stringify(byName.get)).toContain('"skill"');
    expect(byName.read.ok).toBe(true);
    expect(byName.prompt.ok).toBe(true);
    expect(byName.run.text).toContain('confirmation-required');
  });

  test('the runner refuses Bob the hidden skill with the identity it is sent', async () => {
    const bob = await runner.client.prepare({ skill: HIDDEN, script: 'scripts/rotate.js', args: [], identity: { subject: 'bob' } });
    expect(!bob.ok && bob.error.code).toBe('UNKNOWN_SKILL');
    const alice = await runner.client.prepare({ skill: HIDDEN, script: 'scripts/rotate.js', args: [], identity: { subject: 'alice' } });
    expect(alice.ok).toBe(true);
  });
});
