/**
 * `node bench/egress.mjs` (after `npm run build`): what a run's egress proxy costs a script. A
 * python3 script makes N sequential requests (each on a new connection, as urllib does) to an
 * HTTP server on this machine's 127.0.0.1, then downloads one large body, and reports medians and
 * MB/s. It runs twice per launch: inside the sandbox through the proxy (the real server with the
 * SDK client over stdio, the skill declaring `127.0.0.1:<port>`: bridge on the sandbox's loopback →
 * unix socket → the runner's proxy → the server, one audit line per connection), and spawned
 * directly on the host with no proxy. Plain-HTTP forwarding (urllib) and CONNECT tunnels
 * (http.client) are measured separately. As root (namespace-uid) and as an ordinary uid
 * (namespace; setpriv to 40100 when root). Writes bench/out/egress.json. Network: loopback only.
 */
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const REPO = resolve(import.meta.dirname, '..');
const BIN = join(REPO, 'dist/skill-mcp.js');
const N = Number(process.env.BENCH_RUNS ?? 200);
const BIG_MIB = Number(process.env.BENCH_BIG_MIB ?? 64);
const asRoot = process.getuid() === 0;
const USER = 40100;

// Each request on a new connection; prints {"latency_ms": median, "p90_ms", "mb_s"} for one mode.
const BENCH_PY = `import http.client, json, os, sys, time, urllib.request, urllib.parse
mode, host, port, n, big = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
proxy = os.environ.get("HTTPS_PROXY")
def connection():
    if mode == "connect":
        p = urllib.parse.urlsplit(proxy)
        c = http.client.HTTPConnection(p.hostname, p.port, timeout=30)
        c.set_tunnel(host, port)
        return c
    return None
def get(path):
    if mode == "connect":
        c = connection(); c.request("GET", path); r = c.getresponse(); body = r.read(); c.close(); return body
    with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=30) as r:
        return r.read()
times = []
for i in range(n + 5):
    t = time.perf_counter(); body = get("/small"); dt = time.perf_counter() - t
    assert body == b"ok", body[:200]
    if i >= 5: times.append(dt * 1000)
times.sort()
t = time.perf_counter(); size = len(get(big)); dt = time.perf_counter() - t
print(json.dumps({"latency_ms": times[len(times) // 2], "p90_ms": times[int(len(times) * 0.9)], "mb_s": size / dt / 1e6, "bytes": size}))
`;

function makeSkill(port) {
  const root = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-egress-'));
  chmodSync(root, 0o755);
  mkdirSync(join(root, 'egress'), { mode: 0o755 });
  writeFileSync(
    join(root, 'egress', 'SKILL.md'),
    `---\nname: egress\ndescription: bench egress\nmcp-host:\n  version: 1\n  run:\n    - script: bench.py\n      interpreter: python3\n      timeout: 300\n  egress: [127.0.0.1:${port}]\n---\nbench\n`,
    { mode: 0o644 },
  );
  writeFileSync(join(root, 'egress', 'bench.py'), BENCH_PY, { mode: 0o644 });
  return root;
}

function direct(prefix, script, args) {
  return new Promise((done, fail) => {
    const [command, ...pre] = prefix.length > 0 ? prefix : ['/usr/bin/python3'];
    const argv = prefix.length > 0 ? [...pre, '/usr/bin/python3', script, ...args] : [script, ...args];
    const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'inherit'], env: { PATH: '/usr/bin:/bin' } });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.on('error', fail);
    child.on('close', (code) => (code === 0 ? done(JSON.parse(out)) : fail(new Error(`direct run exited ${code}`))));
  });
}

async function proxied(skills, prefix, args) {
  const home = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-home-'));
  chmodSync(home, 0o755);
  if (prefix.length > 0) chownSync(home, USER, USER);
  const [command, ...pre] = prefix.length > 0 ? prefix : [process.execPath];
  const transport = new StdioClientTransport({
    command,
    args: prefix.length > 0 ? [...pre, process.execPath, BIN] : [BIN],
    env: { PATH: process.env.PATH, HOME: home, TMPDIR: home, SKILLS_DIR: skills, MCP_CONFIRM_MODE: 'auto' },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'bench-egress', version: '0' }, { capabilities: {} });
  await client.connect(transport);
  try {
    const call = async (extra) =>
      (await client.callTool({ name: 'skill_run', arguments: { name: 'egress', script: 'bench.py', args, ...extra } })).structuredContent;
    const first = await call({});
    if (typeof first?.confirmToken !== 'string') throw new Error(`no token: ${JSON.stringify(first).slice(0, 300)}`);
    const ran = await call({ confirmToken: first.confirmToken });
    if (ran?.exitCode !== 0) throw new Error(`run failed: ${JSON.stringify(ran).slice(0, 500)}`);
    return { level: first.preview.willRun.isolation, ...JSON.parse(ran.stdout) };
  } finally {
    await client.close();
    rmSync(home, { recursive: true, force: true });
  }
}

const chunk = Buffer.alloc(1024 * 1024, 0x61);
const server = createServer((req, res) => {
  if (req.url === '/big') {
    res.setHeader('Content-Length', BIG_MIB * chunk.length);
    let left = BIG_MIB;
    const pump = () => {
      while (left > 0) {
        left -= 1;
        if (!res.write(chunk)) return res.once('drain', pump);
      }
      res.end();
    };
    return pump();
  }
  res.end('ok');
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const port = server.address().port;
const skills = makeSkill(port);
const script = join(skills, 'egress', 'bench.py');
const launches = [
  ['root', [], asRoot],
  ['ordinary user', asRoot ? ['setpriv', `--reuid=${USER}`, `--regid=${USER}`, '--clear-groups'] : [], true],
];
const rows = [];
try {
  for (const [label, prefix, enabled] of launches) {
    if (!enabled) continue;
    for (const mode of ['http', 'connect']) {
      const args = [mode, '127.0.0.1', String(port), String(N), '/big'];
      try {
        const via = await proxied(skills, prefix, args);
        const base = await direct(prefix, script, ['http', '127.0.0.1', String(port), String(N), '/big']);
        rows.push({ label, mode, level: via.level, via, base });
      } catch (error) {
        rows.push({ label, mode, error: error.message.slice(0, 300) });
      }
    }
  }
} finally {
  server.close();
  rmSync(skills, { recursive: true, force: true });
}
const out = join(REPO, 'bench/out');
mkdirSync(out, { recursive: true });
writeFileSync(
  join(out, 'egress.json'),
  JSON.stringify({ node: process.version, n: N, bigMiB: BIG_MIB, cores: (await import('node:os')).cpus().length, rows }, null, 2),
);
console.log(
  `python3 script, ${N} sequential GETs (new connection each; median, p90) and one ${BIG_MIB} MiB download; through the run's proxy vs spawned directly on the host; ${process.version}`,
);
console.log('| launch | level | path | request (median / p90) | direct (median / p90) | added | download | direct download |');
console.log('|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  if (r.error) {
    console.log(`| ${r.label} | not measured: ${r.error} | ${r.mode} | | | | | |`);
    continue;
  }
  const f = (x) => x.toFixed(2);
  console.log(
    `| ${r.label} | \`${r.level}\` | ${r.mode === 'http' ? 'plain HTTP (urllib)' : 'CONNECT tunnel'} | ${f(r.via.latency_ms)} / ${f(r.via.p90_ms)} ms | ${f(r.base.latency_ms)} / ${f(r.base.p90_ms)} ms | +${f(r.via.latency_ms - r.base.latency_ms)} ms | ${r.via.mb_s.toFixed(0)} MB/s | ${r.base.mb_s.toFixed(0)} MB/s |`,
  );
}
