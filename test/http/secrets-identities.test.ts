/**
 * Two identities get their own secret values at the API, hosted (issue 30, "Done means"): the HTTP
 * front with OAuth (a test issuer), the SDK's `Client` over Streamable HTTP signed in with
 * `ClientCredentialsProvider` as alice, bob or carol, and a real runner on its socket holding
 * per-subject values in `SKILL_MCP_SECRETS_DIR/<subject>/API_TOKEN`. A skill binds API_TOKEN to a
 * local HTTPS API (its certificate from a test CA made here, given to the runner as
 * `SKILL_MCP_EGRESS_CA_FILE`), and a Python `urllib` script calls it with the placeholder it holds.
 *
 * - alice's run reaches the API with alice's value, bob's with bob's; neither script, result nor
 *   audit line holds any value, and each script sees a placeholder of its own;
 * - carol has no file of her own: SECRET_MISSING before approval and nothing runs — even though an
 *   operator value exists, since the operator did not list the name as shared; with
 *   `SKILL_MCP_SECRETS_SHARED=API_TOKEN` (a second runner) carol's run gets the operator's value
 *   while alice still gets her own;
 * - the run's audit lines name the requester, and the injection by the secret's name only.
 *
 * At both bubblewrap levels: a runner as an ordinary uid, and a root runner (per-run uids). Without
 * a working bubblewrap no level gives a run its own proxy, so secrets cannot run at all and the
 * tests skip, saying so. Network: loopback only.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { makeTestCerts, startHttpsApi, writeKeyedSkill, type HttpsApi, type TestCerts } from '../https-api.js';
import { bwrapWorks, namespaceVariants, type NamespaceVariant } from '../levels.js';
import { auditLines, startRunner, tempDir, type RunnerHandle } from '../runner/harness.js';
import { startHttp, type HttpServer } from './harness.js';
import { freePort, startIssuer, type TestIssuer } from './issuer.js';

/** Each person's value, and the operator's default. Visible ASCII, 8+ bytes (runner/secrets/source.ts). */
const VALUES = {
  alice: 'sk-alice-value-0123456789abcdef',
  bob: 'sk-bob-value-fedcba9876543210',
  operator: 'sk-operator-default-value-00042',
} as const;
type Whose = keyof typeof VALUES;
const PLACEHOLDER = /^skill-mcp-placeholder-[0-9a-f]{32}$/;
const BOTH = ['skills:read', 'skills:run'];
/** Run uids of this file's root runners (one range per runner start), used by no other test file. */
const UID_RANGES = ['62400-62407', '62408-62415'];

/** Calls the API with the placeholder; prints the variable, its own environ and what the API said. */
const CALL_PY = `import json, os, sys, urllib.request
def read(path):
    try:
        with open(path, "rb") as f: return f.read().decode("latin1")
    except Exception: return ""
req = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + os.environ["API_TOKEN"]})
with urllib.request.urlopen(req) as r:
    body = json.loads(r.read().decode())
print(json.dumps({"status": r.status, "body": body, "var": os.environ.get("API_TOKEN"), "environ": read("/proc/self/environ").split("\\0")}))
`;

let dir: string;
let port: number;
let certs: TestCerts;
/** Records every Authorization header it received, in order. */
let api: HttpsApi;
let issuer: TestIssuer;

/** Whose value an Authorization header carries, as the API sees it. */
function whose(header: string | undefined): Whose | 'none' {
  for (const [name, value] of Object.entries(VALUES)) if (header === `Bearer ${value}`) return name as Whose;
  return 'none';
}

beforeAll(async () => {
  dir = tempDir('secrets-identities');
  certs = makeTestCerts(dir, 'identities API CA');
  // Says whose value came, never the value (an echo would be swapped back by the proxy anyway).
  api = await startHttpsApi(certs, (authorization) => ({ who: whose(authorization) }));
  port = api.port;
  writeKeyedSkill(dir, port, { 'call.py': { text: CALL_PY, interpreter: 'python3' } });
  issuer = await startIssuer({
    alice: { secret: 'alice-secret-0123456789', scopes: BOTH },
    bob: { secret: 'bob-secret-0123456789', scopes: BOTH },
    carol: { secret: 'carol-secret-0123456789', scopes: BOTH },
  });
});

afterAll(async () => {
  api?.close();
  await issuer?.close();
});

/** The owner's grant: the script, its one destination and its secret, to the three people. */
function grant(): string {
  return JSON.stringify([
    {
      skill: 'keyed',
      script: 'call.py',
      egress: [`127.0.0.1:${port}`],
      secrets: [{ name: 'API_TOKEN' }],
      subjects: ['alice', 'bob', 'carol'],
    },
  ]);
}

/**
 * The values folder, owned by the runner's user (mode 0700 folders, 0600 files): alice's and bob's
 * own, and the operator's default at the top. Carol has none.
 */
function writeValues(owner: number): string {
  const values = join(tempDir('secret-values'), 'values');
  const put = (segments: string[], text: string): void => {
    mkdirSync(join(values, ...segments.slice(0, -1)), { recursive: true, mode: 0o700 });
    writeFileSync(join(values, ...segments), `${text}\n`, { mode: 0o600 });
  };
  put(['alice', 'API_TOKEN'], VALUES.alice);
  put(['bob', 'API_TOKEN'], VALUES.bob);
  put(['API_TOKEN'], VALUES.operator);
  execFileSync('chown', ['-R', `${owner}:${owner}`, values]);
  return values;
}

interface Pair {
  runner: RunnerHandle;
  server: HttpServer;
  values: string;
  stop(): Promise<void>;
}

/** The hosted pair: a real runner (as the variant's uid) on its socket, the HTTP front with OAuth. */
async function startPair(variant: NamespaceVariant, uidRange: string, extra: Record<string, string>): Promise<Pair> {
  const owner = variant.uid ?? process.getuid!();
  const base = tempDir('secrets-identities-pair');
  const values = writeValues(owner);
  if (variant.uid !== undefined) execFileSync('chown', ['-R', `${variant.uid}:${variant.uid}`, base]);
  const runner = await startRunner({
    env: {
      SKILLS_DIR: join(dir, 'skills'),
      MCP_SKILL_RUN: grant(),
      SKILL_MCP_UID_RANGE: uidRange,
      SKILL_MCP_SECRETS_DIR: values,
      SKILL_MCP_EGRESS_CA_FILE: certs.ca,
      ...extra,
    },
    base,
    // A root runner is told which unprivileged uid its front runs as; a runner as an ordinary uid takes a root front as it is.
    args: variant.level === 'namespace-uid' ? ['--front-uid', '61183', '--front-gid', '61183'] : [],
    ...(variant.uid !== undefined
      ? { spawnPrefix: ['setpriv', `--reuid=${variant.uid}`, `--regid=${variant.uid}`, '--clear-groups'] }
      : {}),
  });
  const frontPort = await freePort();
  let server: HttpServer;
  try {
    server = await startHttp(
      {
        SKILLS_DIR: join(dir, 'skills'),
        SKILL_MCP_RUNNER_SOCKET: runner.socketPath,
        MCP_CONFIRM_MODE: 'auto',
        MCP_SKILL_RUN: grant(),
        SKILL_MCP_OAUTH_ISSUER: issuer.issuer,
        SKILL_MCP_OAUTH_AUDIENCE: `http://127.0.0.1:${frontPort}/mcp`,
        // A root-started front drops to an unprivileged uid: the runner's own, when that is an ordinary user's.
        ...(variant.uid !== undefined ? { SKILL_MCP_FRONT_UID: String(variant.uid), SKILL_MCP_FRONT_GID: String(variant.uid) } : {}),
      },
      [],
      { port: frontPort },
    );
  } catch (error) {
    await runner.stop();
    throw error;
  }
  return {
    runner,
    server,
    values,
    async stop() {
      await server.stop();
      await runner.stop();
      // Neither process ever printed a value or an OAuth token.
      const printed = server.stderr() + runner.stderr();
      for (const value of Object.values(VALUES)) expect(printed).not.toContain(value);
      for (const token of issuer.issued()) expect(printed).not.toContain(token);
    },
  };
}

async function as(server: HttpServer, id: string): Promise<Client> {
  const provider = new ClientCredentialsProvider({ clientId: id, clientSecret: `${id}-secret-0123456789`, expectedIssuer: issuer.issuer });
  const client = new Client({ name: 'secrets-identities-test', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { authProvider: provider }));
  return client;
}

interface Answer {
  isError: boolean;
  value: Record<string, unknown>;
  /** Everything the client received: the text content and the structured content. */
  text: string;
}

async function call(client: Client, args: Record<string, unknown>): Promise<Answer> {
  const result = await client.callTool({ name: 'skill_run', arguments: args });
  const text = (result.content as { text?: string }[]).map((c) => c.text ?? '').join('');
  return {
    isError: result.isError === true,
    value: (result.structuredContent ?? JSON.parse(text)) as Record<string, unknown>,
    text: `${text}\n${JSON.stringify(result.structuredContent ?? null)}`,
  };
}

interface Ran {
  answers: Answer[];
  runId: string;
  out: { status: number; body: { who: string }; var: string; environ: string[] };
  /** The Authorization headers the API received during this run. */
  apiSaw: string[];
}

/** One person's preview and run through the front, with the script's report. */
async function runAs(pair: Pair, id: string): Promise<Ran> {
  const client = await as(pair.server, id);
  try {
    const before = api.received.length;
    const args = { name: 'keyed', script: 'call.py', args: [`https://127.0.0.1:${port}/v1/me`] };
    const preview = await call(client, args);
    expect(preview.value, preview.text).toMatchObject({ status: 'confirmation-required' });
    const ran = await call(client, { ...args, confirmToken: preview.value['confirmToken'] });
    expect(ran.isError, ran.text).toBe(false);
    expect(ran.value['exitCode'], String(ran.value['stderr'])).toBe(0);
    return {
      answers: [preview, ran],
      runId: String(ran.value['runId']),
      out: JSON.parse(String(ran.value['stdout'])) as Ran['out'],
      apiSaw: api.received.slice(before),
    };
  } finally {
    await client.close();
  }
}

/** Neither what the client received nor what the script saw holds any value; the script saw its placeholder. */
function expectNoValue(ran: Ran): void {
  for (const answer of ran.answers) for (const value of Object.values(VALUES)) expect(answer.text).not.toContain(value);
  expect(ran.out.var).toMatch(PLACEHOLDER);
  expect(ran.out.environ).toContain(`API_TOKEN=${ran.out.var}`);
  for (const value of Object.values(VALUES)) expect(ran.out.environ.join('\n')).not.toContain(value);
  // The run had a value to search for (a redactor ran) and found nothing: the value never reached the run's output at all.
  expect(ran.answers[1]!.value['redaction']).toEqual({ count: 0, names: [] });
}

/** The audit log's text holds no value and no placeholder; every line fits docs/audit.schema.json. */
async function expectCleanAudit(stateDir: string): Promise<void> {
  const text = readFileSync(join(stateDir, 'audit.log'), 'utf8');
  for (const value of Object.values(VALUES)) expect(text).not.toContain(value);
  expect(text).not.toMatch(/skill-mcp-placeholder-/);
  type Validator = ((value: unknown) => boolean) & { errors?: unknown };
  const mod = (await import('ajv/dist/2020.js')) as unknown as { default: new (options: object) => { compile(schema: object): Validator } };
  const validate = new mod.default({ strict: false, logger: false }).compile(
    JSON.parse(readFileSync(join(import.meta.dirname, '../../docs/audit.schema.json'), 'utf8')) as object,
  );
  for (const line of auditLines(stateDir))
    expect({ line, ok: validate(line), errors: validate.errors ?? null }).toMatchObject({ ok: true });
}

describe.each(namespaceVariants(40218))("hosted, each identity's own secret value reaches the API: $name", (variant) => {
  const run = variant.run;
  const why = run
    ? ''
    : !bwrapWorks
      ? ' (needs a working bubblewrap, the only levels whose runs have their own proxy: skipped)'
      : ' (needs root: skipped)';

  describe(`the operator shares nothing${why}`, () => {
    let pair: Pair;
    beforeAll(async () => {
      if (run) pair = await startPair(variant, UID_RANGES[0]!, {});
    }, 120_000);
    afterAll(async () => {
      await pair?.stop();
    });

    test.skipIf(!run)(
      "alice's run sends alice's value, bob's sends bob's; neither script, result nor audit holds a value, and each script holds its own placeholder",
      async () => {
        const alice = await runAs(pair, 'alice');
        const bob = await runAs(pair, 'bob');
        expect(alice.apiSaw).toEqual([`Bearer ${VALUES.alice}`]);
        expect(bob.apiSaw).toEqual([`Bearer ${VALUES.bob}`]);
        expect(alice.out).toMatchObject({ status: 200, body: { who: 'alice' } });
        expect(bob.out).toMatchObject({ status: 200, body: { who: 'bob' } });
        expectNoValue(alice);
        expectNoValue(bob);
        expect(alice.out.var).not.toBe(bob.out.var);
        const accepts = auditLines(pair.runner.stateDir).filter((l) => l['event'] === 'run.accept');
        expect(accepts.find((l) => l['run_id'] === alice.runId)).toMatchObject({ isolation: variant.level, requester: 'alice' });
        expect(accepts.find((l) => l['run_id'] === bob.runId)).toMatchObject({ isolation: variant.level, requester: 'bob' });
        await expectCleanAudit(pair.runner.stateDir);
      },
      120_000,
    );

    test.skipIf(!run)(
      "the run's audit lines name the requester, and the injection by the secret's name only",
      async () => {
        const alice = await runAs(pair, 'alice');
        const lines = auditLines(pair.runner.stateDir);
        const accept = lines.find((l) => l['event'] === 'run.accept' && l['run_id'] === alice.runId)!;
        expect(accept).toMatchObject({
          requester: 'alice',
          requester_from: 'oauth',
          secrets: [{ name: 'API_TOKEN', hosts: [`127.0.0.1:${port}`] }],
        });
        const prepare = lines.find((l) => l['event'] === 'run.prepare' && l['token_id'] === accept['token_id']);
        expect(prepare).toMatchObject({ requester: 'alice', requester_from: 'oauth' });
        expect(lines.find((l) => l['event'] === 'run.exit' && l['run_id'] === alice.runId)).toMatchObject({
          requester: 'alice',
          exit_code: 0,
        });
        // The connection's line: intercepted, one request, the value injected once, by name.
        const egress = lines.filter((l) => l['event'] === 'egress' && l['run_id'] === alice.runId);
        expect(egress).toEqual([
          expect.objectContaining({
            destination: `127.0.0.1:${port}`,
            decision: 'allowed',
            intercepted: true,
            requests: 1,
            injected: { API_TOKEN: 1 },
            requester: 'alice',
          }),
        ]);
        expect(egress[0]!['placeholder_elsewhere']).toBeUndefined();
        await expectCleanAudit(pair.runner.stateDir);
      },
      120_000,
    );

    test.skipIf(!run)(
      'carol has no value of her own and the name is not shared: SECRET_MISSING before approval, and nothing runs',
      async () => {
        const before = api.received.length;
        const carol = await as(pair.server, 'carol');
        try {
          const refused = await call(carol, { name: 'keyed', script: 'call.py', args: [`https://127.0.0.1:${port}/v1/me`] });
          expect(refused.isError, refused.text).toBe(true);
          const error = refused.value['error'] as { code: string; message: string };
          expect(error.code).toBe('SECRET_MISSING');
          expect(error.message).toContain('API_TOKEN');
          expect(error.message).toContain('SKILL_MCP_SECRETS_DIR/carol/API_TOKEN (your own value) does not exist');
          expect(error.message).toContain('not in SKILL_MCP_SECRETS_SHARED');
          // No approval was offered, and the message names no host path.
          expect(refused.value['confirmToken']).toBeUndefined();
          expect(refused.text).not.toContain(pair.values);
          expect(refused.text).not.toContain(dir);
        } finally {
          await carol.close();
        }
        expect(api.received.length).toBe(before);
        const lines = auditLines(pair.runner.stateDir);
        expect(lines).toContainEqual(
          expect.objectContaining({ event: 'run.prepare', refused: 'secret-missing', requester: 'carol', requester_from: 'oauth' }),
        );
        expect(lines.filter((l) => l['requester'] === 'carol' && l['event'] !== 'run.prepare')).toEqual([]);
        await expectCleanAudit(pair.runner.stateDir);
      },
      120_000,
    );
  });

  describe(`the operator shares API_TOKEN (SKILL_MCP_SECRETS_SHARED)${why}`, () => {
    let pair: Pair;
    beforeAll(async () => {
      if (run) pair = await startPair(variant, UID_RANGES[1]!, { SKILL_MCP_SECRETS_SHARED: 'API_TOKEN' });
    }, 120_000);
    afterAll(async () => {
      await pair?.stop();
    });

    test.skipIf(!run)(
      "carol's run gets the operator's default; alice still gets her own",
      async () => {
        const carol = await runAs(pair, 'carol');
        const alice = await runAs(pair, 'alice');
        expect(carol.apiSaw).toEqual([`Bearer ${VALUES.operator}`]);
        expect(alice.apiSaw).toEqual([`Bearer ${VALUES.alice}`]);
        expect(carol.out).toMatchObject({ status: 200, body: { who: 'operator' } });
        expect(alice.out).toMatchObject({ status: 200, body: { who: 'alice' } });
        expectNoValue(carol);
        expectNoValue(alice);
        expect(carol.out.var).not.toBe(alice.out.var);
        const lines = auditLines(pair.runner.stateDir);
        for (const [ran, who] of [
          [carol, 'carol'],
          [alice, 'alice'],
        ] as const) {
          expect(lines.find((l) => l['event'] === 'run.accept' && l['run_id'] === ran.runId)).toMatchObject({
            isolation: variant.level,
            requester: who,
          });
          expect(lines.filter((l) => l['event'] === 'egress' && l['run_id'] === ran.runId)).toEqual([
            expect.objectContaining({ intercepted: true, injected: { API_TOKEN: 1 }, requester: who }),
          ]);
        }
        await expectCleanAudit(pair.runner.stateDir);
      },
      120_000,
    );
  });
});
