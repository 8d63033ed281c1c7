/**
 * Egress request rules end to end (docs/egress-rules.md): the SDK's real Client over stdio, the
 * built bin with its own runner, an operator declaration giving a local HTTPS API (its certificate
 * from a test CA, given to the runner as SKILL_MCP_EGRESS_CA_FILE) the rules `GET /v1/items/*` and
 * `POST,PUT /v1/items/**`, and a Python script in bubblewrap that speaks raw HTTP/1.1 through the
 * run's proxy: allowed calls, a wrong method, traversal and encoded traversal, duplicate slashes,
 * an absolute-form URL to another host, a Host header naming another host, the HTTP/2 preface,
 * pipelining across a refusal, conflicting Content-Length and Transfer-Encoding, an Upgrade. The
 * API sees only the allowed calls; each refusal is a 403 naming the rule set; the preview shows the
 * rules and the approval binds them; the audit has one line per request, without query values.
 * At both bubblewrap levels. Network: loopback only.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { makeTestCerts, type TestCerts } from '../https-api.js';
import { namespaceVariants } from '../levels.js';
import { BIN } from '../runner/harness.js';
import { ocsfProblems } from '../ocsf.js';
import { ERAS, callTool, expectNoLeftovers, serve, skillList, tempDir, type Served } from './harness.js';
import { askToken, audit } from './run-skills.js';

const QUERY_VALUE = 'query-value-never-audited-42';

/** Each case: a fresh CONNECT to the API through the run's proxy, TLS with the run's bundle, these raw bytes, the answer read to its end. */
const TRY_PY = `import json, os, socket, ssl, sys, urllib.parse
port = sys.argv[1]
target = "127.0.0.1:" + port
proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
ctx = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
H = "Host: " + target + "\\r\\n"
cases = {
  "allowed-get": "GET /v1/items/42?token=${QUERY_VALUE} HTTP/1.1\\r\\n" + H + "Connection: close\\r\\n\\r\\n",
  "allowed-post": "POST /v1/items/4/parts HTTP/1.1\\r\\n" + H + "Content-Length: 5\\r\\nConnection: close\\r\\n\\r\\nhello",
  "wrong-method": "DELETE /v1/items/42 HTTP/1.1\\r\\n" + H + "Connection: close\\r\\n\\r\\n",
  "traversal": "GET /v1/items/../admin HTTP/1.1\\r\\n" + H + "Connection: close\\r\\n\\r\\n",
  "encoded-traversal": "GET /v1/items/%2e%2e/admin HTTP/1.1\\r\\n" + H + "Connection: close\\r\\n\\r\\n",
  "encoded-slash": "GET /v1/items/a%2Fb HTTP/1.1\\r\\n" + H + "Connection: close\\r\\n\\r\\n",
  "duplicate-slashes": "GET /v1//items/1 HTTP/1.1\\r\\n" + H + "Connection: close\\r\\n\\r\\n",
  "absolute-form": "GET https://evil.example.net/v1/items/1 HTTP/1.1\\r\\n" + H + "Connection: close\\r\\n\\r\\n",
  "host-mismatch": "GET /v1/items/1 HTTP/1.1\\r\\nHost: admin.example.net\\r\\nConnection: close\\r\\n\\r\\n",
  "http2-preface": "PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n",
  "pipelined": "GET /v1/admin HTTP/1.1\\r\\n" + H + "\\r\\nGET /v1/items/7 HTTP/1.1\\r\\n" + H + "Connection: close\\r\\n\\r\\n",
  "cl-te": "POST /v1/items/1 HTTP/1.1\\r\\n" + H + "Content-Length: 5\\r\\nTransfer-Encoding: chunked\\r\\nConnection: close\\r\\n\\r\\n0\\r\\n\\r\\n",
  "upgrade": "GET /v1/items/1 HTTP/1.1\\r\\n" + H + "Connection: Upgrade\\r\\nUpgrade: websocket\\r\\n\\r\\n",
}
out = {}
for name, raw in cases.items():
    s = socket.create_connection((proxy.hostname, proxy.port), timeout=30)
    s.sendall(("CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n" % (target, target)).encode())
    head = b""
    while b"\\r\\n\\r\\n" not in head:
        chunk = s.recv(1)
        if not chunk: break
        head += chunk
    t = ctx.wrap_socket(s, server_hostname="127.0.0.1")
    t.sendall(raw.encode())
    answer = b""
    try:
        while True:
            chunk = t.recv(65536)
            if not chunk: break
            answer += chunk
    except (ssl.SSLError, ConnectionResetError, socket.timeout):
        pass
    t.close()
    text = answer.decode("utf-8", "replace")
    out[name] = {"statuses": [int(l.split(" ")[1]) for l in text.split("\\r\\n") if l.startswith("HTTP/1.1 ")], "body": text.split("\\r\\n\\r\\n", 1)[-1][:600]}
print(json.dumps(out))
`;

const RULES = (get: string) =>
  `version: 1\nrun:\n  - script: try.py\n    interpreter: python3\n    timeout: 90\negress:\n  - host: "127.0.0.1:PORT"\n    allow:\n      - { method: GET, path: "${get}" }\n      - { method: [POST, PUT], path: "/v1/items/**" }\n`;

let dir: string;
let ops: string;
let certs: TestCerts;
let api: Server;
let port: number;
/** What the API received: method and request-target, in order. */
const received: string[] = [];

function declare(get: string): void {
  writeFileSync(join(ops, 'rules.yaml'), RULES(get).replace('PORT', String(port)), { mode: 0o644 });
}

beforeAll(async () => {
  dir = tempDir('egress-rules-e2e');
  certs = makeTestCerts(dir, 'rules API CA');
  api = createServer({ key: readFileSync(certs.key), cert: readFileSync(certs.cert) }, (req, res) => {
    received.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => res.end('ok\n'));
  });
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  port = (api.address() as AddressInfo).port;
  const skill = join(dir, 'skills', 'rules');
  mkdirSync(skill, { recursive: true, mode: 0o755 });
  execFileSync('chmod', ['0755', join(dir, 'skills')]);
  writeFileSync(join(skill, 'SKILL.md'), '---\nname: rules\ndescription: Calls an API under request rules.\n---\nCall it.\n', {
    mode: 0o644,
  });
  writeFileSync(join(skill, 'try.py'), TRY_PY, { mode: 0o644 });
  ops = join(dir, 'ops');
  mkdirSync(ops, { mode: 0o755 });
  declare('/v1/items/*');
});
afterAll(async () => {
  api?.close();
  await expectNoLeftovers();
});

describe.each(namespaceVariants(40217))('a host with request rules sees only the declared calls: $name', (variant) => {
  const run = variant.run;
  let served: Served;
  let stateDir: string;

  beforeAll(async () => {
    if (!run) return;
    const own = tempDir('egress-rules-front');
    stateDir = join(own, 'state');
    if (variant.uid !== undefined) execFileSync('chown', ['-R', `${variant.uid}:${variant.uid}`, own]);
    served = await serve(
      {
        SKILLS_DIR: join(dir, 'skills'),
        SKILL_MCP_DECLARATIONS: ops,
        SKILL_MCP_STATE_DIR: stateDir,
        HOME: own,
        TMPDIR: own,
        MCP_CONFIRM_ELICITATION: 'off',
        SKILL_MCP_EGRESS_CA_FILE: certs.ca,
      },
      ERAS[0]!,
      variant.uid !== undefined ? { spawnPrefix: ['setpriv', `--reuid=${variant.uid}`, `--regid=${variant.uid}`, '--clear-groups'] } : {},
    );
  });
  afterAll(async () => {
    declare('/v1/items/*');
    await served?.close();
  });

  test.skipIf(!run)(
    'the preview lists the rules; the API gets only the allowed calls; every attack is a 403 naming the rule set; the audit has each decision',
    async () => {
      declare('/v1/items/*');
      const before = received.length;
      const args = [String(port)];
      const preview = await askToken(served.client, { name: 'rules', script: 'try.py', args });
      const willRun = preview.preview.willRun as unknown as { egressRules: unknown; envNames: string[] };
      expect(willRun.egressRules).toEqual([
        {
          entry: `127.0.0.1:${port}`,
          allow: [
            { methods: ['GET'], path: '/v1/items/*' },
            { methods: ['POST', 'PUT'], path: '/v1/items/**' },
          ],
        },
      ]);
      // skill_list shows them beside the script's destinations.
      const listed = (await skillList(served.client)).skills.find((x) => x.name === 'rules') as unknown as {
        scripts: { egressRules?: unknown }[];
      };
      expect(listed.scripts[0]!.egressRules).toEqual(willRun.egressRules);
      // The run trusts its CA for a host with rules exactly as for a bound host.
      expect(willRun.envNames).toEqual(
        expect.arrayContaining(['SSL_CERT_FILE', 'REQUESTS_CA_BUNDLE', 'NODE_EXTRA_CA_CERTS', 'PIP_CERT', 'CURL_CA_BUNDLE']),
      );

      const ran = await callTool(served.client, 'skill_run', { name: 'rules', script: 'try.py', args, confirmToken: preview.confirmToken });
      expect(ran.value['exitCode'], String(ran.value['stderr'])).toBe(0);
      const out = JSON.parse(String(ran.value['stdout'])) as Record<string, { statuses: number[]; body: string }>;
      expect(received.slice(before)).toEqual([`GET /v1/items/42?token=${QUERY_VALUE}`, 'POST /v1/items/4/parts']);
      expect(out['allowed-get']!.statuses).toEqual([200]);
      expect(out['allowed-post']!.statuses).toEqual([200]);
      for (const name of [
        'wrong-method',
        'traversal',
        'encoded-traversal',
        'encoded-slash',
        'duplicate-slashes',
        'absolute-form',
        'host-mismatch',
        'http2-preface',
        'pipelined',
        'cl-te',
        'upgrade',
      ]) {
        expect(out[name]!.statuses, `${name}: ${JSON.stringify(out[name])}`).toEqual([403]);
        expect(out[name]!.body, name).toContain(`request rules of 127.0.0.1:${port}`);
        expect(out[name]!.body, name).toContain('GET /v1/items/*; POST,PUT /v1/items/**');
      }
      // The run's result says requests were refused by the rules.
      expect(ran.text).toContain("a request the host's egress rules do not allow");

      const lines = audit(stateDir).filter((l) => l.event === 'egress.request' && l['run_id'] === ran.value['runId']);
      expect(lines).toContainEqual(
        expect.objectContaining({
          destination: `127.0.0.1:${port}`,
          method: 'GET',
          path: '/v1/items/42',
          decision: 'allowed',
          rule: 'GET /v1/items/*',
          status: 200,
          bytes_down: 3,
        }),
      );
      expect(lines).toContainEqual(
        expect.objectContaining({ method: 'POST', path: '/v1/items/4/parts', rule: 'POST,PUT /v1/items/**', status: 200, bytes_up: 5 }),
      );
      expect(lines).toContainEqual(expect.objectContaining({ method: 'DELETE', decision: 'refused', reason: 'no-rule', status: 403 }));
      expect(lines).toContainEqual(expect.objectContaining({ path: '/v1/items/../admin', reason: 'path-not-normal' }));
      expect(lines).toContainEqual(expect.objectContaining({ path: '/v1/items/%2e%2e/admin', reason: 'path-not-normal' }));
      expect(lines).toContainEqual(expect.objectContaining({ reason: 'not-origin-form' }));
      expect(lines).toContainEqual(expect.objectContaining({ reason: 'host-mismatch' }));
      expect(lines).toContainEqual(expect.objectContaining({ reason: 'upgrade' }));
      expect(lines.filter((l) => l.decision === 'allowed')).toHaveLength(2);
      // Each line fits docs/audit.schema.json.
      const ajv = new (
        (await import('ajv/dist/2020.js')) as unknown as { default: new (o: object) => { compile(s: object): (v: unknown) => boolean } }
      ).default({ strict: false });
      const validate = ajv.compile(JSON.parse(readFileSync(join(import.meta.dirname, '../../docs/audit.schema.json'), 'utf8')) as object);
      for (const line of lines) expect({ line, ok: validate(line) }).toMatchObject({ ok: true });
      // Never a query value (nor a body) in the log.
      expect(readFileSync(join(stateDir, 'audit.log'), 'utf8')).not.toContain(QUERY_VALUE);

      // The same run as OCSF: Process Activity for its launch and end, Authorize Session for its
      // approval, HTTP Activity for each request; every event has what its class requires.
      const ocsf = spawnSync(
        process.execPath,
        [BIN, 'audit', 'query', join(stateDir, 'audit.log'), '--run', String(ran.value['runId']), '--format', 'ocsf'],
        { encoding: 'utf8', timeout: 60_000 },
      );
      expect(ocsf.status, ocsf.stderr).toBe(0);
      const events = ocsf.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      for (const event of events) expect({ event, problems: ocsfProblems(event) }).toMatchObject({ problems: [] });
      const classes = events.map((e) => `${String(e['class_uid'])}/${String(e['activity_id'])}`);
      expect(classes).toEqual(expect.arrayContaining(['1007/1', '3003/1', '1007/2', '4001/2', '4002/3', '4002/6', '4002/2']));
      expect(events.filter((e) => e['class_uid'] === 4002)).toHaveLength(lines.length);
      expect(events.every((e) => (e['metadata'] as { product: { name: string } }).product.name === 'skill-mcp')).toBe(true);
      expect(ocsf.stdout).not.toContain(QUERY_VALUE);
      // Each proxied connection is Network Activity too.
      expect(classes).toContain('4001/2');
      expect(ocsf.stderr).not.toMatch(/egress(\.request)? ×/);
    },
  );

  test.skipIf(!run)('changing the rules after the preview invalidates the approval: DRAFT_CHANGED, nothing ran', async () => {
    declare('/v1/items/*');
    const args = [String(port)];
    const preview = await askToken(served.client, { name: 'rules', script: 'try.py', args });
    declare('/v1/**');
    const before = received.length;
    const changed = await callTool(served.client, 'skill_run', {
      name: 'rules',
      script: 'try.py',
      args,
      confirmToken: preview.confirmToken,
    });
    expect(changed.value, changed.text).toMatchObject({ status: 'draft-changed', error: { code: 'DRAFT_CHANGED' } });
    expect(received.length).toBe(before);
    declare('/v1/items/*');
  });
});
