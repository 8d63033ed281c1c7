/**
 * Per-person secret values through the real runner over its socket (issue 30, docs/secrets.md
 * "Values"): a hosted runner whose grant binds a secret reads each verified identity's own file —
 * Alice and Bob run (each script holding only a placeholder), Dave's own file is unusable and
 * refused by its own name (never replaced by the operator's), Carol has none and is refused
 * SECRET_MISSING at prepare — and Carol uses the operator's value only once the operator lists the
 * name in SKILL_MCP_SECRETS_SHARED. (That each value reaches its API is the injecting proxy's
 * test; which value each subject gets is test/runner/secrets-source.test.ts.) Needs bubblewrap.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { bwrapWorks } from '../levels.js';
import { auditLines, startRunner, tempDir, text, uidRange, writeSkills, type RunnerHandle } from './harness.js';

const PLACEHOLDER = /^skill-mcp-placeholder-[0-9a-f]{32}$/;
const VALUES = { alice: 'alice-token-0000000001', bob: 'bob-token-00000000002', operator: 'operator-token-000003' };

let root: string;
let secrets: string;
const grant = JSON.stringify([{ skill: 'keyed', script: 'show.py', egress: ['api.example.com'], secrets: [{ name: 'API_TOKEN' }] }]);

function value(path: string, text: string): void {
  mkdirSync(join(path, '..'), { recursive: true, mode: 0o700 });
  writeFileSync(path, `${text}\n`, { mode: 0o600 });
}

beforeAll(() => {
  root = writeSkills({
    keyed: {
      run: [{ script: 'show.py', interpreter: 'python3', timeout: 30 }],
      egress: ['api.example.com'],
      files: { 'show.py': 'import os\nprint(os.environ.get("API_TOKEN"))\n' },
    },
  });
  // writeSkills writes no secrets key: add it to the frontmatter block.
  const md = join(root, 'keyed', 'SKILL.md');
  writeFileSync(
    md,
    `---\nname: keyed\ndescription: test skill keyed\nmcp-host:\n  version: 1\n  run:\n    - script: show.py\n      interpreter: python3\n      timeout: 30\n  egress: [api.example.com]\n  secrets:\n    - name: API_TOKEN\n      hosts: [api.example.com]\n---\nTest skill.\n`,
  );
  secrets = join(tempDir('secret-values'), 'values');
  value(join(secrets, 'alice', 'API_TOKEN'), VALUES.alice);
  value(join(secrets, 'bob@example.com', 'API_TOKEN'), VALUES.bob);
  value(join(secrets, 'API_TOKEN'), VALUES.operator);
  value(join(secrets, 'dave', 'API_TOKEN'), 'short');
});

describe.skipIf(!bwrapWorks)('hosted: each verified identity gets its own value', () => {
  let runner: RunnerHandle;
  let shared: RunnerHandle;

  beforeAll(async () => {
    const env = { MCP_SKILLS_PATH: root, MCP_SKILL_RUN: grant, SKILL_MCP_SECRETS_DIR: secrets };
    runner = await startRunner({ env, args: ['--uid-range', uidRange(24)] });
    shared = await startRunner({ env: { ...env, SKILL_MCP_SECRETS_SHARED: 'API_TOKEN' }, args: ['--uid-range', uidRange(25)] });
  });
  afterAll(async () => {
    await runner?.stop();
    await shared?.stop();
  });

  async function runAs(handle: RunnerHandle, subject: string) {
    const identity = { subject };
    const prepared = await handle.client.prepare({ skill: 'keyed', script: 'show.py', args: [], identity });
    if (!prepared.ok) return { refused: prepared.error };
    expect(prepared.result.willRun.secrets).toEqual([
      { name: 'API_TOKEN', hosts: ['api.example.com'], header: 'Authorization', format: 'Bearer {value}' },
    ]);
    const ran = await handle.client.run(
      { skill: 'keyed', script: 'show.py', args: [], identity, confirmToken: prepared.result.confirmToken },
      { timeoutMs: 30_000 },
    );
    if (!ran.ok) throw new Error(`${ran.error.code} ${ran.error.message}`);
    return { stdout: text(ran.result.stdout).trim(), result: ran.result };
  }

  test('alice and bob each run with a placeholder; neither value is in what the run returns', async () => {
    const alice = await runAs(runner, 'alice');
    const bob = await runAs(runner, 'bob@example.com');
    expect(alice.stdout).toMatch(PLACEHOLDER);
    expect(bob.stdout).toMatch(PLACEHOLDER);
    for (const v of Object.values(VALUES)) expect(JSON.stringify([alice.stdout, bob.stdout])).not.toContain(v);
  });

  test("dave's own file is refused by its name, even with a shared value: never someone else's instead", async () => {
    for (const handle of [runner, shared]) {
      const dave = await runAs(handle, 'dave');
      expect(dave.refused).toMatchObject({
        code: 'SECRET_MISSING',
        message: expect.stringContaining('SKILL_MCP_SECRETS_DIR/dave/API_TOKEN: the value is 5 bytes'),
      });
    }
  });

  test('carol has no value of her own and the name is not shared: SECRET_MISSING at prepare, naming her folder, not the host path', async () => {
    const carol = await runAs(runner, 'carol');
    expect(carol.refused).toMatchObject({
      code: 'SECRET_MISSING',
      message: expect.stringContaining('SKILL_MCP_SECRETS_DIR/carol/API_TOKEN (your own value) does not exist'),
    });
    expect(carol.refused!.message).toContain('not in SKILL_MCP_SECRETS_SHARED');
    expect(carol.refused!.message).not.toContain(secrets);
  });

  test("with the name in SKILL_MCP_SECRETS_SHARED carol runs (on the operator's value); alice still runs", async () => {
    expect((await runAs(shared, 'carol')).stdout).toMatch(PLACEHOLDER);
    expect((await runAs(shared, 'alice')).stdout).toMatch(PLACEHOLDER);
  });

  test("the audit names the secrets by name and hosts only, and every line (run.accept's secrets, the secret-missing refusals) fits docs/audit.schema.json", async () => {
    type Validator = ((value: unknown) => boolean) & { errors?: unknown };
    const mod = (await import('ajv/dist/2020.js')) as unknown as {
      default: new (options: object) => { compile(schema: object): Validator };
    };
    const validate = new mod.default({ strict: false }).compile(
      JSON.parse(readFileSync(join(import.meta.dirname, '../../docs/audit.schema.json'), 'utf8')) as object,
    );
    const lines = auditLines(runner.stateDir);
    expect(lines.filter((l) => l['event'] === 'run.accept').map((l) => l['secrets'])).toContainEqual([
      { name: 'API_TOKEN', hosts: ['api.example.com'] },
    ]);
    expect(lines).toContainEqual(expect.objectContaining({ event: 'run.prepare', refused: 'secret-missing', requester: 'carol' }));
    for (const line of lines) expect({ line, ok: validate(line), errors: validate.errors ?? null }).toMatchObject({ ok: true });
    const text = readFileSync(join(runner.stateDir, 'audit.log'), 'utf8');
    for (const v of Object.values(VALUES)) expect(text).not.toContain(v);
    expect(text).not.toMatch(/skill-mcp-placeholder-/);
  });

  test("a caller without an identity gets the operator's value", async () => {
    const prepared = await runner.client.prepare({ skill: 'keyed', script: 'show.py', args: [] });
    expect(prepared.ok, JSON.stringify(prepared)).toBe(true);
  });
});
