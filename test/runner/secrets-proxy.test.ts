/**
 * The injecting proxy (issue 30) on its real unix socket, with real clients as child processes in
 * the environment a run gets (HTTPS_PROXY at a loopback bridge to the socket, the CA bundle
 * variables, the placeholder in the secret's variable): Python `requests` and `urllib`, Node
 * `fetch`, against real local HTTPS APIs whose certificates come from a test CA made here with
 * openssl and given to the proxy as SKILL_MCP_EGRESS_CA_FILE. Each test is named after what it
 * stops: the value leaving for anywhere but its declared header on its bound host, a placeholder
 * smuggled elsewhere going unnoticed, a forged upstream, an unbound host being intercepted, the
 * CA key reaching the disk. Network: loopback only.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import type { IncomingMessage, Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect, createServer as createNetServer } from 'node:net';
import type { AddressInfo, Server as NetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditLog } from '../../runner/audit/log.js';
import { type EgressRecord, HELPER_BUNDLE_NAME } from '../../runner/egress/helper-protocol.js';
import { openRunProxy } from '../../runner/helper/run-proxy.js';
import type { RunProxy } from '../../runner/helper/run-proxy.js';
import type { SecretBinding } from '../../runner/secrets/binding.js';
import { caBundleEnv } from '../../runner/secrets/trust.js';
import { makeTestCerts, openssl } from '../https-api.js';

const VALUE = 'sk-live-REAL-value-0123456789';
const PLACEHOLDER = 'skmcp_ph_API_TOKEN_5f0c2a9e7d41b3c8';
const OTHER_VALUE = 'other-secret-value-42';
const OTHER_PLACEHOLDER = 'skmcp_ph_WRONG_TOKEN_a1b2c3d4e5f6a7b8';

interface Seen {
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let dir: string;
let audit: AuditLog;

/** What the runner does with each record the helper reports: one `egress` line (runner/egress/run-egress.ts). */
const toAudit = (runId: string) => (record: EgressRecord) => void audit.append({ event: 'egress', run_id: runId, ...record });
let proxy: RunProxy | undefined;
let bridge: NetServer;
let bridgePort: number;
const servers: (HttpServer | ReturnType<typeof createHttpsServer>)[] = [];
/** What each API received, by port. */
const seen = new Map<number, Seen[]>();
let bound: number;
let unbound: number;
let forged: number;
let plain: number;
let runBundle: string;
/** The run's bundle plus the test CA: what a script needs to reach the *unbound* API through its blind tunnel. */
let widerBundle: string;

/** A test CA and a certificate for 127.0.0.1 signed by it (`api`), and one self-signed for 127.0.0.1 (`forged`). */
function makeCerts(): void {
  makeTestCerts(dir, 'skill-mcp test API CA', 'test-ca');
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'forged.key',
    '-out',
    'forged.pem',
    '-subj',
    '/CN=forged',
    '-days',
    '1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
  ]);
}

/** An API that records each request and answers with what it saw (echoing the Authorization header). */
async function api(tls: { key: string; cert: string } | undefined): Promise<number> {
  const handler = (req: IncomingMessage, res: import('node:http').ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const port = (req.socket.address() as AddressInfo).port;
      const record = { url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() };
      seen.get(port)!.push(record);
      const body = JSON.stringify({ youSent: req.headers.authorization ?? null });
      // Compresses when asked (as real APIs do), or always on /gzip-anyway (as some do).
      if (/gzip/.test(String(req.headers['accept-encoding'] ?? '')) || req.url === '/gzip-anyway') {
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' });
        res.end(gzipSync(body));
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/json', 'X-Echo': String(req.headers.authorization ?? '') });
      res.end(body);
    });
  };
  const server = tls
    ? createHttpsServer({ key: readFileSync(join(dir, tls.key)), cert: readFileSync(join(dir, tls.cert)) }, handler)
    : createHttpServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  const port = (server.address() as AddressInfo).port;
  seen.set(port, []);
  return port;
}

/** The run's bindings: API_TOKEN for the bound API, WRONG_TOKEN for the forged one. */
function bindings(): SecretBinding[] {
  return [
    {
      name: 'API_TOKEN',
      hosts: [`127.0.0.1:${bound}`],
      header: 'Authorization',
      format: 'Bearer {value}',
      placeholder: PLACEHOLDER,
      value: VALUE,
    },
    {
      name: 'WRONG_TOKEN',
      hosts: [`127.0.0.1:${forged}`],
      header: 'X-Api-Key',
      format: '{value}',
      placeholder: OTHER_PLACEHOLDER,
      value: OTHER_VALUE,
    },
  ];
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'skill-mcp-secproxy-'));
  makeCerts();
  bound = await api({ key: 'api.key', cert: 'api.pem' });
  unbound = await api({ key: 'api.key', cert: 'api.pem' });
  forged = await api({ key: 'forged.key', cert: 'forged.pem' });
  plain = await api(undefined);
  audit = new AuditLog({ path: join(dir, 'audit.log'), anchorPath: join(dir, 'audit.head') });
  audit.begin(() => ({ event: 'runner.start' }));
  runBundle = join(dir, HELPER_BUNDLE_NAME);
  proxy = await openRunProxy({
    socketPath: join(dir, 'egress.sock'),
    onRecord: toAudit('r-secrets'),
    entries: [`127.0.0.1:${bound}`, `127.0.0.1:${unbound}`, `127.0.0.1:${forged}`, `127.0.0.1:${plain}`],
    secrets: bindings(),
    intercept: { bundlePath: runBundle, timeoutMs: 60_000, upstreamCa: readFileSync(join(dir, 'test-ca.pem'), 'utf8') },
  });
  widerBundle = join(dir, 'wider.pem');
  writeFileSync(widerBundle, readFileSync(runBundle, 'utf8') + readFileSync(join(dir, 'test-ca.pem'), 'utf8'));
  // The bridge a run's sandbox has (runner/egress/bridge.ts), here on the host's loopback.
  bridge = createNetServer({ allowHalfOpen: true }, (inside) => {
    const out = connect({ path: join(dir, 'egress.sock'), allowHalfOpen: true });
    inside.pipe(out);
    out.pipe(inside);
    inside.on('error', () => out.destroy());
    out.on('error', () => inside.destroy());
  });
  await new Promise<void>((resolve) => bridge.listen(0, '127.0.0.1', resolve));
  bridgePort = (bridge.address() as AddressInfo).port;
});

afterAll(async () => {
  await proxy?.close();
  bridge?.close();
  for (const server of servers) server.close();
  await audit?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The environment a proxied run with this binding gets (plan.ts, trust.ts), the bundle optionally swapped. */
function runEnv(bundle = runBundle): Record<string, string> {
  const proxyUrl = `http://127.0.0.1:${bridgePort}`;
  return {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: dir,
    LANG: 'C.UTF-8',
    HTTP_PROXY: proxyUrl,
    HTTPS_PROXY: proxyUrl,
    http_proxy: proxyUrl,
    https_proxy: proxyUrl,
    NO_PROXY: '',
    no_proxy: '',
    NODE_USE_ENV_PROXY: '1',
    ...Object.fromEntries(Object.entries(caBundleEnv(true)).map(([name]) => [name, bundle])),
    API_TOKEN: PLACEHOLDER,
    WRONG_TOKEN: OTHER_PLACEHOLDER,
  };
}

function run(command: string, args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { env, timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const PY_REQUESTS = `
import os, sys, requests
url = sys.argv[1]
s = requests.Session()
for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 1):
    r = s.get(url, headers={"Authorization": "Bearer " + os.environ["API_TOKEN"]})
    print(r.status_code, r.headers.get("X-Echo"), r.text)
`;

const PY_URLLIB = `
import os, sys, urllib.request
req = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + os.environ["API_TOKEN"]})
with urllib.request.urlopen(req) as r:
    print(r.status, r.headers.get("X-Echo"), r.read().decode())
`;

const NODE_FETCH = `
const r = await fetch(process.argv[1], { headers: { Authorization: 'Bearer ' + process.env.API_TOKEN } });
console.log(r.status, r.headers.get('x-echo'), await r.text());
`;

/** The audit lines written so far about connections. */
async function egressLines(): Promise<Record<string, unknown>[]> {
  await audit.flush();
  return readFileSync(join(dir, 'audit.log'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l['event'] === 'egress');
}

/** Waits until an egress line about `port` with `n` requests or more is on disk (the line is written when the connection closes). */
async function lineFor(port: number, match: (l: Record<string, unknown>) => boolean = () => true): Promise<Record<string, unknown>> {
  for (;;) {
    const line = (await egressLines()).reverse().find((l) => l['destination'] === `127.0.0.1:${port}` && match(l));
    if (line) return line;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/**
 * Whether this uid's python3 has `requests` (root's here does; /usr/bin/python3, which an ordinary
 * uid finds first, may not): without it, the tests written with requests skip and say why — the
 * urllib and Node fetch ones still run.
 */
const hasRequests = (() => {
  try {
    execFileSync('python3', ['-c', 'import requests'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
if (!hasRequests)
  console.warn(
    "skipped: this uid's python3 has no `requests` module, so the tests written with requests do not run (urllib and Node fetch ones do)",
  );
const withRequests = it.skipIf(!hasRequests);

describe("the injecting proxy, with real clients in a run's environment", () => {
  withRequests(
    'Python requests: the bound API receives the real value in the declared header; the script sees only the placeholder, even where the API echoes it',
    async () => {
      const before = seen.get(bound)!.length;
      const out = await run('python3', ['-c', PY_REQUESTS, `https://127.0.0.1:${bound}/v1/me`, '2'], runEnv());
      expect(out.stderr).toBe('');
      const got = seen.get(bound)!.slice(before);
      expect(got.map((r) => r.headers.authorization)).toEqual([`Bearer ${VALUE}`, `Bearer ${VALUE}`]);
      // Security: Host is the CONNECT destination, whatever the script wrote; requests asks for gzip, the proxy for identity.
      expect(got[0]!.headers.host).toBe(`127.0.0.1:${bound}`);
      expect(got[0]!.headers['accept-encoding']).toBe('identity');
      expect(out.stdout).not.toContain(VALUE);
      expect(out.stdout).toContain(`200 Bearer ${PLACEHOLDER} {"youSent":"Bearer ${PLACEHOLDER}"}`);
      // Kept alive: both requests on one intercepted connection, one audit line, counts and names only.
      const line = await lineFor(bound, (l) => l['requests'] === 2);
      expect(line).toMatchObject({
        decision: 'allowed',
        intercepted: true,
        requests: 2,
        injected: { API_TOKEN: 2 },
        value_echoed: { API_TOKEN: 4 },
      });
      expect(JSON.stringify(line)).not.toContain(VALUE);
      expect(JSON.stringify(line)).not.toContain(PLACEHOLDER);
    },
  );

  it('Python urllib: the same injection through the standard library', async () => {
    const before = seen.get(bound)!.length;
    const out = await run('python3', ['-c', PY_URLLIB, `https://127.0.0.1:${bound}/v1/urllib`], runEnv());
    expect(out.stderr).toBe('');
    expect(
      seen
        .get(bound)!
        .slice(before)
        .map((r) => r.headers.authorization),
    ).toEqual([`Bearer ${VALUE}`]);
    expect(out.stdout).toContain(`200 Bearer ${PLACEHOLDER}`);
    expect(out.stdout).not.toContain(VALUE);
  });

  const nodes = [
    ['22', join(import.meta.dirname, '../../tools/node-versions/node_modules/node22/bin/node')],
    ['24', join(import.meta.dirname, '../../tools/node-versions/node_modules/node24/bin/node')],
  ] as const;
  it.each(nodes)('Node %s fetch (NODE_USE_ENV_PROXY=1): the same injection', async (_major, node) => {
    // NODE_USE_ENV_PROXY needs Node ≥ 22.21 / 24.5; the project's own Node 20 ignores it, so these binaries (tools/node-versions, as CI installs them) are used.
    if (!existsSync(node)) {
      console.warn(`skipped: ${node} is not installed (cd tools/node-versions && npm ci); Node 20 has no NODE_USE_ENV_PROXY`);
      return;
    }
    const before = seen.get(bound)!.length;
    const out = await run(
      node,
      ['--no-warnings', '--input-type=module', '-e', NODE_FETCH, `https://127.0.0.1:${bound}/v1/fetch`],
      runEnv(),
    );
    expect(out.stderr).toBe('');
    expect(
      seen
        .get(bound)!
        .slice(before)
        .map((r) => r.headers.authorization),
    ).toEqual([`Bearer ${VALUE}`]);
    expect(out.stdout).toContain(`200 Bearer ${PLACEHOLDER}`);
    expect(out.stdout).not.toContain(VALUE);
  });

  withRequests(
    'a placeholder put in the URL, another header or the body of a request to the bound host stays the placeholder and is audited',
    async () => {
      const before = seen.get(bound)!.length;
      const code = `
import os, requests
t = os.environ["API_TOKEN"]
r = requests.post("https://127.0.0.1:${bound}/leak?k=" + t, headers={"X-Note": t}, data=("x" * 70000) + t + ("y" * 70000))
print(r.status_code)
`;
      const out = await run('python3', ['-c', code], runEnv());
      expect(out.stdout.trim()).toBe('200');
      const got = seen.get(bound)!.slice(before);
      expect(got).toHaveLength(1);
      expect(got[0]!.url).toBe(`/leak?k=${PLACEHOLDER}`);
      expect(got[0]!.headers['x-note']).toBe(PLACEHOLDER);
      expect(got[0]!.body).toContain(PLACEHOLDER);
      expect(JSON.stringify(got[0])).not.toContain(VALUE);
      const line = await lineFor(bound, (l) => (l['placeholder_elsewhere'] as Record<string, number> | undefined)?.['API_TOKEN'] === 3);
      expect(line['injected']).toBeUndefined();
    },
  );

  withRequests(
    "another secret's placeholder in the declared header is not injected, and a Host naming another virtual host is replaced (domain fronting)",
    async () => {
      const before = seen.get(bound)!.length;
      const code = `
import os, requests
r = requests.get("https://127.0.0.1:${bound}/front", headers={"Authorization": "Bearer " + os.environ["WRONG_TOKEN"], "Host": "evil.example"})
print(r.status_code)
`;
      const out = await run('python3', ['-c', code], runEnv());
      expect(out.stdout.trim()).toBe('200');
      const got = seen.get(bound)!.slice(before);
      expect(got.map((r) => [r.headers.authorization, r.headers.host])).toEqual([[`Bearer ${OTHER_PLACEHOLDER}`, `127.0.0.1:${bound}`]]);
      expect(JSON.stringify(got)).not.toContain(OTHER_VALUE);
      const line = await lineFor(bound, (l) => (l['placeholder_elsewhere'] as Record<string, number> | undefined)?.['WRONG_TOKEN'] === 1);
      expect(line['injected']).toBeUndefined();
    },
  );

  withRequests(
    'the placeholder sent to a second declared host without the binding reaches it as the placeholder: the connection is a blind tunnel',
    async () => {
      const before = seen.get(unbound)!.length;
      // This script trusts the test CA as well: only then can it reach the unbound API through its tunnel.
      const out = await run('python3', ['-c', PY_REQUESTS, `https://127.0.0.1:${unbound}/v1/me`], runEnv(widerBundle));
      // Through the blind tunnel the script's own gzip request reaches the API untouched.
      expect(out.stdout).toContain(`{"youSent":"Bearer ${PLACEHOLDER}"}`);
      expect(seen.get(unbound)!.at(-1)!.headers['accept-encoding']).toMatch(/gzip/);
      expect(
        seen
          .get(unbound)!
          .slice(before)
          .map((r) => r.headers.authorization),
      ).toEqual([`Bearer ${PLACEHOLDER}`]);
      const line = await lineFor(unbound);
      expect(line['intercepted']).toBeUndefined();
    },
  );

  withRequests(
    "an unbound host is never intercepted: a script trusting only the run's bundle sees the real server's certificate, and refuses it",
    async () => {
      const before = seen.get(unbound)!.length;
      const out = await run('python3', ['-c', PY_REQUESTS, `https://127.0.0.1:${unbound}/v1/me`], runEnv());
      // Had the proxy answered with a run-CA leaf, the bundle would have trusted it.
      expect(out.code).not.toBe(0);
      expect(out.stderr).toMatch(/CERTIFICATE_VERIFY_FAILED/);
      expect(seen.get(unbound)!.length).toBe(before);
    },
  );

  withRequests('a bound host that compresses its echo anyway is passed on unscanned, and the audit line counts it', async () => {
    const code = `
import os, requests
r = requests.get("https://127.0.0.1:${bound}/gzip-anyway", headers={"Authorization": "Bearer " + os.environ["API_TOKEN"]})
print(r.status_code)
`;
    const out = await run('python3', ['-c', code], runEnv());
    expect(out.stdout.trim()).toBe('200');
    const line = await lineFor(bound, (l) => l['responses_unscanned'] === 1);
    expect(line).toMatchObject({ intercepted: true, injected: { API_TOKEN: 1 }, responses_unscanned: 1 });
  });

  withRequests('a bound host whose certificate the proxy cannot verify gets the script a 502 saying why, and is sent nothing', async () => {
    const code = `
import os, requests
r = requests.get("https://127.0.0.1:${forged}/x", headers={"X-Api-Key": os.environ["WRONG_TOKEN"]})
print(r.status_code, r.headers.get("X-Skill-Mcp-Egress"), r.text.strip())
`;
    const out = await run('python3', ['-c', code], runEnv());
    expect(out.stdout).toMatch(
      /^502 upstream-failed skill-mcp egress proxy: the certificate of 127\.0\.0\.1:\d+ \(127\.0\.0\.1\) was refused \(DEPTH_ZERO_SELF_SIGNED_CERT\); nothing was sent to it/,
    );
    expect(seen.get(forged)).toEqual([]);
    const line = await lineFor(forged);
    expect(line).toMatchObject({ intercepted: true, upstream_error: 'certificate: DEPTH_ZERO_SELF_SIGNED_CERT' });
    expect(JSON.stringify(line)).not.toContain(OTHER_VALUE);
  });

  it('a plain-HTTP request carrying the placeholder is forwarded as it is, never injected, and audited', async () => {
    const code = `
import os, urllib.request
req = urllib.request.Request("http://127.0.0.1:${plain}/p?t=" + os.environ["API_TOKEN"], headers={"Authorization": "Bearer " + os.environ["API_TOKEN"]})
print(urllib.request.urlopen(req).status)
`;
    const out = await run('python3', ['-c', code], runEnv());
    expect(out.stdout.trim()).toBe('200');
    const got = seen.get(plain)!;
    expect(got.map((r) => r.headers.authorization)).toEqual([`Bearer ${PLACEHOLDER}`]);
    const line = await lineFor(plain);
    expect(line).toMatchObject({ decision: 'allowed', placeholder_elsewhere: { API_TOKEN: 2 } });
    expect(line['intercepted']).toBeUndefined();
  });

  it("the run CA's key is on no file the run folder holds: the bundle has the system CAs and the run CA's certificate only", () => {
    const bundle = readFileSync(runBundle, 'utf8');
    expect(bundle).toMatch(/BEGIN CERTIFICATE/);
    expect(bundle).toContain('-----END CERTIFICATE-----');
    for (const name of readdirSync(dir)) {
      // The test's own CA and API keys are the test's; nothing the proxy wrote holds a key.
      if (/^(test-ca|api|forged)\.key$/.test(name)) continue;
      if (name === 'egress.sock') continue;
      expect({ name, key: /PRIVATE KEY/.test(readFileSync(join(dir, name), 'latin1')) }).toEqual({ name, key: false });
    }
    const subjects = execFileSync('openssl', ['crl2pkcs7', '-nocrl', '-certfile', runBundle], { encoding: 'utf8' });
    expect(subjects.length).toBeGreaterThan(0);
    expect(bundle.split('-----BEGIN CERTIFICATE-----').length - 1).toBeGreaterThan(10);
  });

  it('a run with secrets but nowhere to put its bundle is refused at the proxy, never run with its secrets uninjected', async () => {
    await expect(
      openRunProxy({
        socketPath: join(dir, 'other.sock'),
        onRecord: toAudit('r2'),
        entries: [`127.0.0.1:${bound}`],
        secrets: bindings(),
      }),
    ).rejects.toThrow(/needs `intercept`/);
  });

  it('a run that ends while an intercepted connection is still open reports the requests it carried (the proxy closes first)', async () => {
    // Its own proxy, closed with the connection kept alive: the record is written by close(), not by the socket's close.
    const socketPath = join(dir, 'ends-open.sock');
    const own = await openRunProxy({
      socketPath,
      onRecord: toAudit('r-ends-open'),
      entries: [`127.0.0.1:${bound}`],
      secrets: bindings(),
      intercept: { bundlePath: join(dir, 'ends-open.pem'), timeoutMs: 60_000, upstreamCa: readFileSync(join(dir, 'test-ca.pem'), 'utf8') },
    });
    const raw = connect({ path: socketPath });
    await new Promise<void>((resolve) => raw.once('connect', () => resolve()));
    raw.write(`CONNECT 127.0.0.1:${bound} HTTP/1.1\r\nHost: 127.0.0.1:${bound}\r\n\r\n`);
    await new Promise<void>((resolve) => raw.once('data', () => resolve()));
    const { connect: tlsConnect } = await import('node:tls');
    const secure = tlsConnect({
      socket: raw,
      ca: readFileSync(join(dir, 'ends-open.pem'), 'utf8'),
      servername: '',
      checkServerIdentity: () => undefined,
    });
    await new Promise<void>((resolve) => secure.once('secureConnect', () => resolve()));
    secure.write(
      `GET /v1/me HTTP/1.1\r\nHost: 127.0.0.1:${bound}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\nConnection: keep-alive\r\n\r\n`,
    );
    let answer = '';
    await new Promise<void>((resolve) => {
      secure.on('data', (chunk: Buffer) => {
        answer += chunk.toString('latin1');
        if (answer.includes('youSent')) resolve();
      });
    });
    await own.close();
    secure.destroy();
    const line = (await egressLines()).find((l) => l['run_id'] === 'r-ends-open');
    expect(line).toMatchObject({ decision: 'allowed', intercepted: true, requests: 1, injected: { API_TOKEN: 1 } });
  });

  it('every line the proxy wrote validates against docs/audit.schema.json', async () => {
    type Validator = ((value: unknown) => boolean) & { errors?: unknown };
    const mod = (await import('ajv/dist/2020.js')) as unknown as {
      default: new (options: object) => { compile(schema: object): Validator };
    };
    const validate = new mod.default({ strict: false }).compile(
      JSON.parse(readFileSync(join(import.meta.dirname, '../../docs/audit.schema.json'), 'utf8')) as object,
    );
    const lines = await egressLines();
    expect(lines.some((l) => l['intercepted'] === true)).toBe(true);
    for (const line of lines) expect({ line, ok: validate(line), errors: validate.errors ?? null }).toMatchObject({ ok: true });
    // Not a blank check: a count that is not a number is refused.
    expect(validate({ ...lines.find((l) => l['injected'])!, injected: { API_TOKEN: 'two' } })).toBe(false);
  });
});
