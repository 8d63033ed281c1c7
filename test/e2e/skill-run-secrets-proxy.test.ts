/**
 * A declared secret end to end (issue 30): the SDK's real Client over stdio, the built bin with its
 * own runner, a skill whose declaration binds API_TOKEN to a local HTTPS API (its certificate from
 * a test CA made here, given to the runner as SKILL_MCP_EGRESS_CA_FILE), and a Python `urllib`
 * script in bubblewrap that calls it with the placeholder. The API receives the real value in the
 * declared header; the script's environment, its CA bundle and its output hold none of it (the
 * API's echo comes back as the placeholder); the audit line says the value was injected, by name.
 * At both bubblewrap levels: a runner as an ordinary uid, and a root runner.
 *
 * A Node `fetch()` script the same way, where Node sends fetch through the proxy (Node 22.21+ and
 * 24.5+; skipped on older Nodes, saying why). Network: loopback only.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { resolveBinary } from '../../runner/sandbox/platform.js';
import { makeTestCerts, startHttpsApi, writeKeyedSkill, type HttpsApi, type TestCerts } from '../https-api.js';
import { namespaceVariants } from '../levels.js';
import { ERAS, callTool, expectNoLeftovers, serve, tempDir, type Served } from './harness.js';
import { askToken, audit } from './run-skills.js';

const VALUE = 'sk-e2e-proxy-value-0123456789abcdef';
const PLACEHOLDER = /skill-mcp-placeholder-[0-9a-f]{32}/;

/**
 * Node's own fetch() goes through HTTPS_PROXY only with NODE_USE_ENV_PROXY, from Node 22.21 and 24.5
 * (Node 20 ignores it: a Node 20 script would have to speak CONNECT itself). The sandbox runs the
 * node the runner resolves (system folders first: runner/sandbox/platform.ts), whatever Node runs
 * this test; the proxy's own tests drive Node 22 and 24 fetch() directly (test/runner/secrets-proxy).
 */
const sandboxNode = (() => {
  const found = resolveBinary('node', process.env['PATH'], false);
  return 'path' in found ? execFileSync(found.path, ['--version'], { encoding: 'utf8' }).trim().replace(/^v/, '') : 'none';
})();
const nodeFetchProxies = (() => {
  const [major = 0, minor = 0] = sandboxNode.split('.').map(Number);
  return major > 24 || (major === 24 && minor >= 5) || (major === 22 && minor >= 21) || major === 23;
})();

/** Calls the API with the placeholder; prints what the script can see. The needles arrive hex-encoded, so this file holds neither. */
const CALL_PY = `import json, os, sys, urllib.request
value = bytes.fromhex(sys.argv[2]); key = bytes.fromhex(sys.argv[3])
def read(path):
    try:
        with open(path, "rb") as f: return f.read()
    except Exception: return b""
bundle = read(os.environ.get("SSL_CERT_FILE", "/nonexistent"))
req = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + os.environ["API_TOKEN"]})
with urllib.request.urlopen(req) as r:
    body = r.read().decode()
print(json.dumps({"status": r.status, "body": body, "bundle": os.environ.get("SSL_CERT_FILE"), "bundle_has_key": key in bundle, "bundle_certs": bundle.count(b"BEGIN CERTIFICATE"),
                  "value_in_environ": value in read("/proc/self/environ"), "var": os.environ.get("API_TOKEN")}))
`;

/** The same through Node's fetch(): NODE_USE_ENV_PROXY sends it to the proxy, NODE_EXTRA_CA_CERTS trusts the run's CA. */
const CALL_MJS = `import { readFileSync } from 'node:fs';
const value = Buffer.from(process.argv[3], 'hex');
const r = await fetch(process.argv[2], { headers: { Authorization: 'Bearer ' + process.env.API_TOKEN } });
const body = await r.text();
console.log(JSON.stringify({ status: r.status, body, bundle: process.env.NODE_EXTRA_CA_CERTS, value_in_environ: readFileSync('/proc/self/environ').includes(value), var: process.env.API_TOKEN }));
`;

let dir: string;
let port: number;
let certs: TestCerts;
let api: HttpsApi;

beforeAll(async () => {
  dir = tempDir('secrets-proxy-e2e');
  certs = makeTestCerts(dir, 'e2e API CA');
  api = await startHttpsApi(certs, (authorization) => ({ youSent: authorization ?? null }));
  port = api.port;
  writeKeyedSkill(dir, port, { 'call.py': { text: CALL_PY, interpreter: 'python3' }, 'call.mjs': { text: CALL_MJS, interpreter: 'node' } });
});
afterAll(async () => {
  api?.close();
  await expectNoLeftovers();
});

describe.each(namespaceVariants(40216))("a declared secret reaches its HTTPS API through the run's proxy: $name", (variant) => {
  const run = variant.run;
  let served: Served;
  let stateDir: string;

  beforeAll(async () => {
    if (!run) return;
    const own = tempDir('secrets-proxy-front');
    stateDir = join(own, 'state');
    if (variant.uid !== undefined) execFileSync('chown', ['-R', `${variant.uid}:${variant.uid}`, own]);
    served = await serve(
      {
        SKILLS_DIR: join(dir, 'skills'),
        SKILL_MCP_STATE_DIR: stateDir,
        HOME: own,
        TMPDIR: own,
        MCP_CONFIRM_ELICITATION: 'off',
        SKILL_MCP_SECRET_API_TOKEN: VALUE,
        SKILL_MCP_EGRESS_CA_FILE: certs.ca,
      },
      ERAS[0]!,
      variant.uid !== undefined ? { spawnPrefix: ['setpriv', `--reuid=${variant.uid}`, `--regid=${variant.uid}`, '--clear-groups'] } : {},
    );
  });
  afterAll(async () => {
    await served?.close();
  });

  test.skipIf(!run)('the API gets the value in the declared header; the script, its bundle and its output never hold it', async () => {
    const before = api.received.length;
    const args = [`https://127.0.0.1:${port}/v1/me`, Buffer.from(VALUE).toString('hex'), Buffer.from('PRIVATE KEY').toString('hex')];
    const preview = await askToken(served.client, { name: 'keyed', script: 'call.py', args });
    const willRun = preview.preview.willRun as unknown as { envNames: string[]; isolation: string };
    expect(willRun.isolation).toBe(variant.level);
    // The preview names the bundle's variables like any other.
    expect(willRun.envNames).toEqual(
      expect.arrayContaining(['API_TOKEN', 'SSL_CERT_FILE', 'REQUESTS_CA_BUNDLE', 'NODE_EXTRA_CA_CERTS', 'PIP_CERT', 'CURL_CA_BUNDLE']),
    );
    const ran = await callTool(served.client, 'skill_run', { name: 'keyed', script: 'call.py', args, confirmToken: preview.confirmToken });
    expect(ran.value['status'], ran.text).toBe('completed');
    expect(ran.value['exitCode'], String(ran.value['stderr'])).toBe(0);
    const out = JSON.parse(String(ran.value['stdout'])) as {
      status: number;
      body: string;
      bundle: string;
      bundle_has_key: boolean;
      bundle_certs: number;
      value_in_environ: boolean;
      var: string;
    };
    expect(api.received.slice(before)).toEqual([`Bearer ${VALUE}`]);
    expect(out).toMatchObject({ status: 200, bundle: '/run/skill-mcp/ca-bundle.pem', bundle_has_key: false, value_in_environ: false });
    expect(out.bundle_certs).toBeGreaterThan(1);
    expect(out.var).toMatch(PLACEHOLDER);
    // The API echoed the header: the proxy swapped the value back to the script's own placeholder.
    expect(JSON.parse(out.body)).toEqual({ youSent: `Bearer ${out.var}` });
    expect(ran.text).not.toContain(VALUE);
    const lines = audit(stateDir);
    const egress = lines.filter((l) => l.event === 'egress' && l['run_id'] === ran.value['runId']);
    expect(egress).toEqual([
      expect.objectContaining({
        destination: `127.0.0.1:${port}`,
        decision: 'allowed',
        intercepted: true,
        requests: 1,
        injected: { API_TOKEN: 1 },
        value_echoed: { API_TOKEN: 1 },
      }),
    ]);
    expect(readFileSync(join(stateDir, 'audit.log'), 'utf8')).not.toContain(VALUE);
  });

  test.skipIf(!run || !nodeFetchProxies)(
    `a Node fetch() script: the API gets the value, the script only its placeholder (the sandbox's Node ${sandboxNode}${nodeFetchProxies ? '' : ': its fetch ignores HTTPS_PROXY before 22.21 / 24.5, skipped'})`,
    async () => {
      const before = api.received.length;
      const args = [`https://127.0.0.1:${port}/v1/node`, Buffer.from(VALUE).toString('hex')];
      const preview = await askToken(served.client, { name: 'keyed', script: 'call.mjs', args });
      const ran = await callTool(served.client, 'skill_run', {
        name: 'keyed',
        script: 'call.mjs',
        args,
        confirmToken: preview.confirmToken,
      });
      expect(ran.value['exitCode'], String(ran.value['stderr'])).toBe(0);
      const out = JSON.parse(String(ran.value['stdout'])) as {
        status: number;
        body: string;
        bundle: string;
        value_in_environ: boolean;
        var: string;
      };
      expect(api.received.slice(before)).toEqual([`Bearer ${VALUE}`]);
      expect(out).toMatchObject({ status: 200, bundle: '/run/skill-mcp/ca-bundle.pem', value_in_environ: false });
      expect(out.var).toMatch(PLACEHOLDER);
      expect(JSON.parse(out.body)).toEqual({ youSent: `Bearer ${out.var}` });
      expect(ran.text).not.toContain(VALUE);
    },
  );
});
