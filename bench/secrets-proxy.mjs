/**
 * `node bench/secrets-proxy.mjs`: what injecting a secret costs a request (issue 30). A python3
 * client (http.client, as scripts use it) behind the real in-sandbox bridge (runner/egress/bridge.ts,
 * here on the host's loopback) sends HTTPS requests through one run's proxy (runner/egress/run-proxy.ts,
 * bundled here with esbuild) to two identical HTTPS APIs in another process: one bound to a secret
 * (the proxy ends TLS with the run CA's leaf, injects the header, opens its own verified TLS
 * upstream), one not (a blind CONNECT tunnel). Modes alternate sample by sample:
 *
 * - first request: a new CONNECT, TLS handshake and request each time;
 * - kept alive: one persistent connection per mode, request after request.
 *
 * Prints medians, p90s and the added ms (inject − blind), the load average before and after, and
 * writes bench/out/secrets-proxy.json. Targets (issue 30): ≤ +3 ms kept alive, ≤ +15 ms first.
 * BENCH_FIRST (default 100) and BENCH_KEPT (default 400) set the sample counts. Network: loopback only.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const REPO = resolve(import.meta.dirname, '..');
/** The bench's scratch folder (one per measurement). */
let dir = '';

const VALUE = 'sk-bench-value-0123456789abcdef';
const PLACEHOLDER = 'skill-mcp-placeholder-00112233445566778899aabbccddeeff';

// Both APIs in one process of their own: same code, same certificate, different ports.
const API_SOURCE = `
const https = require('node:https'); const fs = require('node:fs');
const opts = { key: fs.readFileSync(process.argv[1]), cert: fs.readFileSync(process.argv[2]), keepAlive: true };
const ports = [];
let left = 2;
for (let i = 0; i < 2; i++) {
  const s = https.createServer(opts, (req, res) => { req.resume(); req.on('end', () => { res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': 11 }); res.end('{"ok":true}'); }); });
  s.keepAliveTimeout = 60000;
  s.listen(0, '127.0.0.1', () => { ports[i] = s.address().port; if (--left === 0) process.stdout.write(ports.join(' ') + '\\n'); });
}
`;

// Alternates the two modes sample by sample; prints one JSON line of samples per mode and kind.
const CLIENT_PY = `import http.client, json, os, ssl, sys, time
proxy_port, bound, unbound, first, kept, ca = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
ctx = ssl.create_default_context(cafile=ca)
headers = {"Authorization": "Bearer " + os.environ["API_TOKEN"]}
def conn(port):
    c = http.client.HTTPSConnection("127.0.0.1", proxy_port, context=ctx, timeout=30)
    c.set_tunnel("127.0.0.1", port)
    return c
def once(c):
    c.request("GET", "/v1/me", headers=headers)
    r = c.getresponse(); body = r.read()
    assert r.status == 200 and body == b'{"ok":true}', (r.status, body[:200])
modes = {"inject": bound, "blind": unbound}
out = {m: {"first": [], "kept": []} for m in modes}
for i in range(first + 3):
    for m in (("inject", "blind") if i % 2 == 0 else ("blind", "inject")):
        t = time.perf_counter(); c = conn(modes[m]); once(c); dt = time.perf_counter() - t; c.close()
        if i >= 3: out[m]["first"].append(dt * 1000)
keep = {m: conn(p) for m, p in modes.items()}
for m in modes: once(keep[m])
for i in range(kept + 10):
    for m in (("inject", "blind") if i % 2 == 0 else ("blind", "inject")):
        t = time.perf_counter(); once(keep[m]); dt = time.perf_counter() - t
        if i >= 10: out[m]["kept"].append(dt * 1000)
print(json.dumps(out))
`;

function openssl(args) {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

function freePort() {
  return new Promise((done) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => done(port));
    });
  });
}

function quantile(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * q))];
}

/**
 * One whole measurement: `first` new-connection and `kept` kept-alive samples per mode, alternated.
 * Returns the samples (ms) paired by position, the run's setup costs, the load average before and
 * after, and the injections the audit lines recorded. bench/run.mjs uses it for its `secrets` rows.
 */
export async function measureSecretsProxy({ first = 100, kept = 400 } = {}) {
  dir = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-secrets-'));
  try {
    return await measure(first, kept);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function measure(FIRST, KEPT) {
  openssl([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-subj',
    '/CN=bench CA',
    '-days',
    '1',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
  ]);
  openssl([
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'api.key',
    '-out',
    'api.csr',
    '-subj',
    '/CN=api',
  ]);
  writeFileSync(join(dir, 'api.ext'), 'subjectAltName=IP:127.0.0.1\n');
  openssl([
    'x509',
    '-req',
    '-in',
    'api.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'api.pem',
    '-days',
    '1',
    '-extfile',
    'api.ext',
  ]);

  const api = spawn(process.execPath, ['-e', API_SOURCE, join(dir, 'api.key'), join(dir, 'api.pem')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [bound, unbound] = await new Promise((done) => api.stdout.once('data', (d) => done(String(d).trim().split(' ').map(Number))));

  // The runner's proxy and bridge, from the sources the runner is built from.
  const out = join(dir, 'pieces.mjs');
  await build({
    stdin: {
      contents: "export { openRunProxy } from './runner/helper/run-proxy.ts'; export { BRIDGE_SOURCE } from './runner/egress/bridge.ts';",
      resolveDir: REPO,
      loader: 'ts',
    },
    bundle: true,
    format: 'esm',
    platform: 'node',
    outfile: out,
    logLevel: 'warning',
    banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
  });
  const { openRunProxy, BRIDGE_SOURCE } = await import(pathToFileURL(out).href);
  // What a run with bindings pays once, before its script starts: the X.509 code's first load, then per run the CA and its first leaf.
  const caOut = join(dir, 'ca.mjs');
  await build({
    stdin: { contents: "export { makeRunCa } from './runner/helper/ca.ts';", resolveDir: REPO, loader: 'ts' },
    bundle: true,
    format: 'esm',
    platform: 'node',
    outfile: caOut,
    logLevel: 'warning',
    banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
  });
  let t = performance.now();
  const { makeRunCa } = await import(pathToFileURL(caOut).href);
  const loadMs = performance.now() - t;
  const caMs = [];
  const leafMs = [];
  for (let i = 0; i < 30; i++) {
    t = performance.now();
    const ca = await makeRunCa(['api.example.com', '127.0.0.1'], 600_000);
    caMs.push(performance.now() - t);
    t = performance.now();
    await ca.contextFor('api.example.com');
    leafMs.push(performance.now() - t);
  }

  // What the helper reports to the runner, one record per connection (the runner writes them as egress lines).
  const records = [];
  const socketPath = join(dir, 'egress.sock');
  const bundlePath = join(dir, 'ca-bundle.pem');
  const binding = {
    name: 'API_TOKEN',
    hosts: [`127.0.0.1:${bound}`],
    header: 'Authorization',
    format: 'Bearer {value}',
    placeholder: PLACEHOLDER,
    value: VALUE,
  };
  const proxy = await openRunProxy({
    socketPath,
    onRecord: (record) => records.push(record),
    entries: [`127.0.0.1:${bound}`, `127.0.0.1:${unbound}`],
    secrets: [binding],
    intercept: { bundlePath, timeoutMs: 600_000, upstreamCa: readFileSync(join(dir, 'ca.pem'), 'utf8') },
  });
  // The client trusts the run's bundle (for the intercepted API) and the bench CA (for the blind tunnel).
  const clientCa = join(dir, 'client-ca.pem');
  writeFileSync(clientCa, readFileSync(bundlePath, 'utf8') + readFileSync(join(dir, 'ca.pem'), 'utf8'));

  const load = [loadavg()];
  const bridgePort = await freePort();
  const client = spawn(
    process.execPath,
    [
      '-e',
      BRIDGE_SOURCE,
      '--',
      String(bridgePort),
      socketPath,
      'python3',
      '-c',
      CLIENT_PY,
      String(bridgePort),
      String(bound),
      String(unbound),
      String(FIRST),
      String(KEPT),
      clientCa,
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { PATH: process.env.PATH, API_TOKEN: PLACEHOLDER },
    },
  );
  let text = '';
  client.stdout.on('data', (d) => {
    text += d;
  });
  const code = await new Promise((done) => client.once('exit', done));
  load.push(loadavg());
  await proxy.close();
  if (code !== 0) throw new Error(`the client failed (exit ${code})`);
  const samples = JSON.parse(text);
  const injected = records.reduce((n, r) => n + (r.injected?.API_TOKEN ?? 0), 0);

  // A whole proxy's opening, with and without a binding (what the run path waits for before the spawn), alternated.
  const openMs = { with: [], without: [] };
  for (let i = 0; i < 20; i++) {
    for (const withSecrets of i % 2 === 0 ? [true, false] : [false, true]) {
      const sock = join(dir, `open-${i}-${withSecrets}.sock`);
      const b = join(dir, `open-${i}-${withSecrets}.pem`);
      const t0 = performance.now();
      const p = await openRunProxy({
        socketPath: sock,
        onRecord: () => undefined,
        entries: [`127.0.0.1:${bound}`],
        ...(withSecrets ? { secrets: [binding], intercept: { bundlePath: b, timeoutMs: 600_000 } } : {}),
      });
      (withSecrets ? openMs.with : openMs.without).push(performance.now() - t0);
      await p.close();
    }
  }
  api.kill();
  const setup = {
    open_with_secrets_median_ms: quantile(openMs.with, 0.5),
    open_without_median_ms: quantile(openMs.without, 0.5),
    x509_load_ms: loadMs,
    ca_median_ms: quantile(caMs, 0.5),
    first_leaf_median_ms: quantile(leafMs, 0.5),
  };
  return { samples, setup, load, injected };
}

/** The summary rows: medians per mode, and the paired difference against its target. */
export function summarize(samples) {
  return ['first', 'kept'].map((kind) => {
    const inject = samples.inject[kind];
    const blind = samples.blind[kind];
    // Paired by position: sample i of each mode ran back to back.
    const added = inject.map((x, i) => x - blind[i]);
    return {
      kind,
      n: inject.length,
      inject,
      blind,
      added,
      inject_median_ms: quantile(inject, 0.5),
      blind_median_ms: quantile(blind, 0.5),
      added_median_ms: quantile(added, 0.5),
      inject_p90_ms: quantile(inject, 0.9),
      blind_p90_ms: quantile(blind, 0.9),
      target_added_ms: kind === 'first' ? 15 : 3,
    };
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { samples, setup, load, injected } = await measureSecretsProxy({
    first: Number(process.env.BENCH_FIRST ?? 100),
    kept: Number(process.env.BENCH_KEPT ?? 400),
  });
  const rows = summarize(samples);
  const fmt = (x) => x.toFixed(2).padStart(7);
  process.stdout.write('request          n   inject  blind   added(paired median)  target   p90 inject/blind\n');
  for (const r of rows)
    process.stdout.write(
      `${(r.kind === 'first' ? 'first (new conn)' : 'kept alive').padEnd(16)} ${String(r.n).padStart(3)} ${fmt(r.inject_median_ms)} ${fmt(r.blind_median_ms)} ${fmt(r.added_median_ms)} ms           ≤ +${r.target_added_ms}   ${r.inject_p90_ms.toFixed(2)}/${r.blind_p90_ms.toFixed(2)}\n`,
    );
  process.stdout.write(
    `per run, before the script starts: openRunProxy ${setup.open_with_secrets_median_ms.toFixed(2)} ms with a binding vs ${setup.open_without_median_ms.toFixed(2)} ms without (medians of 20, alternated); of it the CA ${setup.ca_median_ms.toFixed(2)} ms, its first leaf ${setup.first_leaf_median_ms.toFixed(2)} ms (medians of 30); the X.509 code's first load ${setup.x509_load_ms.toFixed(1)} ms (once per runner)\n`,
  );
  process.stdout.write(
    `load average before ${load[0].map((x) => x.toFixed(2)).join(' ')}, after ${load[1].map((x) => x.toFixed(2)).join(' ')}; ${injected} injections audited; node ${process.version}\n`,
  );
  mkdirSync(join(REPO, 'bench/out'), { recursive: true });
  writeFileSync(
    join(REPO, 'bench/out/secrets-proxy.json'),
    JSON.stringify(
      {
        date: new Date().toISOString(),
        node: process.version,
        load,
        rows: rows.map(({ inject, blind, added, ...r }) => r),
        setup,
        injected,
      },
      null,
      2,
    ),
  );
}
