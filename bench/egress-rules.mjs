/**
 * `node bench/egress-rules.mjs`: what checking a request against its host's egress rules costs
 * (docs/egress-rules.md). A python3 client (http.client, as scripts use it) behind the real
 * in-sandbox bridge (runner/egress/bridge.ts, here on the host's loopback) sends HTTPS requests
 * through one run's proxy (runner/helper/run-proxy.ts, bundled here with esbuild) to two identical
 * HTTPS APIs in another process: one with request rules (the proxy ends TLS with the run CA's leaf,
 * judges the request, forwards it over its own verified TLS), one host-only (a blind CONNECT
 * tunnel). Modes alternate sample by sample, each on one kept-alive connection, and the first
 * request of a new connection is measured the same way.
 *
 * Prints medians, p90s and the added ms (rules − tunnel, paired), the load average before and after,
 * and writes bench/out/egress-rules.json. Target: ≤ +3 ms on a kept-alive connection.
 * BENCH_FIRST (default 60) and BENCH_KEPT (default 400) set the sample counts. Network: loopback only.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const REPO = resolve(import.meta.dirname, '..');
const FIRST = Number(process.env.BENCH_FIRST ?? 60);
const KEPT = Number(process.env.BENCH_KEPT ?? 400);

// Both APIs in one process of their own: same code, same certificate, different ports.
const API_SOURCE = `
const https = require('node:https'); const fs = require('node:fs');
const opts = { key: fs.readFileSync(process.argv[1]), cert: fs.readFileSync(process.argv[2]), keepAlive: true };
const ports = []; let left = 2;
for (let i = 0; i < 2; i++) {
  const s = https.createServer(opts, (req, res) => { req.resume(); req.on('end', () => { res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': 11 }); res.end('{"ok":true}'); }); });
  s.keepAliveTimeout = 60000;
  s.listen(0, '127.0.0.1', () => { ports[i] = s.address().port; if (--left === 0) process.stdout.write(ports.join(' ') + '\\n'); });
}
`;

// Alternates the two modes sample by sample; prints one JSON object of samples (ms) per mode and kind.
const CLIENT_PY = `import http.client, json, ssl, sys, time
proxy_port, ruled, tunnel, first, kept, ca = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
ctx = ssl.create_default_context(cafile=ca)
def conn(port):
    c = http.client.HTTPSConnection("127.0.0.1", proxy_port, context=ctx, timeout=30)
    c.set_tunnel("127.0.0.1", port)
    return c
def once(c):
    c.request("GET", "/v1/items/42?fields=all")
    r = c.getresponse(); body = r.read()
    assert r.status == 200 and body == b'{"ok":true}', (r.status, body[:300])
modes = {"rules": ruled, "tunnel": tunnel}
out = {m: {"first": [], "kept": []} for m in modes}
for i in range(first + 3):
    for m in (("rules", "tunnel") if i % 2 == 0 else ("tunnel", "rules")):
        t = time.perf_counter(); c = conn(modes[m]); once(c); dt = time.perf_counter() - t; c.close()
        if i >= 3: out[m]["first"].append(dt * 1000)
keep = {m: conn(p) for m, p in modes.items()}
for m in modes: once(keep[m])
for i in range(kept + 10):
    for m in (("rules", "tunnel") if i % 2 == 0 else ("tunnel", "rules")):
        t = time.perf_counter(); once(keep[m]); dt = time.perf_counter() - t
        if i >= 10: out[m]["kept"].append(dt * 1000)
print(json.dumps(out))
`;

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

async function measure(dir) {
  const openssl = (args) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  openssl(['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-subj', '/CN=bench CA', '-days', '1']);
  openssl(['req', ...ec, '-keyout', 'api.key', '-out', 'api.csr', '-subj', '/CN=api']);
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
  const [ruled, tunnel] = await new Promise((done) => api.stdout.once('data', (d) => done(String(d).trim().split(' ').map(Number))));

  // The helper's proxy and the bridge, from the sources the helper and the runner are built from.
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
  const socketPath = join(dir, 'egress.sock');
  const bundlePath = join(dir, 'ca-bundle.pem');
  const decided = { allowed: 0, refused: 0 };
  const proxy = await openRunProxy({
    socketPath,
    entries: [`127.0.0.1:${ruled}`, `127.0.0.1:${tunnel}`],
    rules: [
      {
        entry: `127.0.0.1:${ruled}`,
        allow: [
          { methods: ['GET'], path: '/v1/items/*' },
          { methods: ['POST', 'PUT'], path: '/v1/items/**' },
        ],
      },
    ],
    intercept: { bundlePath, timeoutMs: 600_000, upstreamCa: readFileSync(join(dir, 'ca.pem'), 'utf8') },
    onRecord: () => undefined,
    onRequest: (record) => {
      decided[record.decision] += 1;
    },
  });
  // The client trusts the run's bundle (for the host with rules) and the bench CA (for the tunnel).
  const clientCa = join(dir, 'client-ca.pem');
  writeFileSync(clientCa, readFileSync(bundlePath, 'utf8') + readFileSync(join(dir, 'ca.pem'), 'utf8'));

  const load = [loadavg()];
  const bridgePort = await freePort();
  const args = [String(bridgePort), String(ruled), String(tunnel), String(FIRST), String(KEPT), clientCa];
  const client = spawn(process.execPath, ['-e', BRIDGE_SOURCE, '--', String(bridgePort), socketPath, 'python3', '-c', CLIENT_PY, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { PATH: process.env.PATH },
  });
  let text = '';
  client.stdout.on('data', (d) => {
    text += d;
  });
  const code = await new Promise((done) => client.once('exit', done));
  load.push(loadavg());
  await proxy.close();
  api.kill();
  if (code !== 0) throw new Error(`the client failed (exit ${code})`);
  return { samples: JSON.parse(text), load, decided };
}

const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-rules-'));
let result;
try {
  result = await measure(dir);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const { samples, load, decided } = result;
const rows = ['first', 'kept'].map((kind) => {
  const rules = samples.rules[kind];
  const tunnel = samples.tunnel[kind];
  // Paired by position: sample i of each mode ran back to back.
  const added = rules.map((x, i) => x - tunnel[i]);
  return {
    kind,
    n: rules.length,
    rules_median_ms: quantile(rules, 0.5),
    tunnel_median_ms: quantile(tunnel, 0.5),
    added_median_ms: quantile(added, 0.5),
    rules_p90_ms: quantile(rules, 0.9),
    tunnel_p90_ms: quantile(tunnel, 0.9),
    target_added_ms: kind === 'kept' ? 3 : undefined,
  };
});
const fmt = (x) => x.toFixed(2).padStart(7);
process.stdout.write('request           n    rules  tunnel  added (paired median)  target  p90 rules/tunnel\n');
for (const r of rows)
  process.stdout.write(
    `${(r.kind === 'first' ? 'first (new conn)' : 'kept alive').padEnd(16)} ${String(r.n).padStart(3)} ${fmt(r.rules_median_ms)} ${fmt(r.tunnel_median_ms)} ${fmt(r.added_median_ms)} ms             ${r.target_added_ms ? `≤ +${r.target_added_ms}` : '  -  '}   ${r.rules_p90_ms.toFixed(2)}/${r.tunnel_p90_ms.toFixed(2)}\n`,
  );
process.stdout.write(
  `load average before ${load[0].map((x) => x.toFixed(2)).join(' ')}, after ${load[1].map((x) => x.toFixed(2)).join(' ')}; requests judged: ${decided.allowed} allowed, ${decided.refused} refused; node ${process.version}\n`,
);
mkdirSync(join(REPO, 'bench/out'), { recursive: true });
writeFileSync(
  join(REPO, 'bench/out/egress-rules.json'),
  JSON.stringify({ date: new Date().toISOString(), node: process.version, load, rows, decided }, null, 2),
);
