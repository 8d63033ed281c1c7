/**
 * @module Streamable HTTP, ours against the reference (bench/ref-server.ts `--http`: the SDK's
 * `createMcpHandler` behind a bare node:http adapter), on the same folder (the 30-skill workload
 * of bench/generate.mjs), interleaved: for each request and concurrency the two servers take turns
 * in short slices (ours, ref, ref, ours, ...), so a busy moment on the machine hits both alike.
 * Requests: `resources/read` of a 10 KB text file and of a 1 MiB binary, and `skills/list` (one
 * page of 30 skills / 450 files in both). Reports req/s, p50 and p99 for each, and ours/ref.
 *
 *   npm run build && node bench/http-compare.mjs [--slice=2] [--slices=4] [--clients=1,10,50] [--only=read10k,read1m,list]
 *
 * Writes bench/out/http-compare.json. The load generator is this process (node:http, keep-alive,
 * one socket per client, stateless 2026-07-28 POSTs), on the same cores as the servers: a floor
 * for a dedicated server, and the same floor for both. `BENCH_NODE_FLAGS` goes to our server's
 * node (e.g. `--cpu-prof --cpu-prof-dir=DIR`; our front drops root, so DIR must be writable by
 * its uid), `BENCH_REF_NODE_FLAGS` to the reference's. Numbers only: nothing here fails on speed.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROBE, WORKLOADS, generate } from './generate.mjs';
import { buildRefServer } from './ref-bundle.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = join(HERE, '..');
const OUT = join(HERE, 'out');
const argv = process.argv.slice(2);
const option = (name, fallback) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const SLICE_S = Number(option('slice', '2'));
const SLICES = Number(option('slices', '4'));
const CLIENTS = option('clients', '1,10,50').split(',').map(Number);
const ONLY = option('only', 'read10k,read1m,list').split(',');
const MODERN = '2026-07-28';
const TARGET = { rps: 1.5 };

const CASES = [
  { id: 'read10k', label: 'resources/read 10 KB (text)', method: 'resources/read', params: { uri: `skill://${PROBE.name}/${PROBE.tenKB}` } },
  { id: 'read1m', label: 'resources/read 1 MiB (binary)', method: 'resources/read', params: { uri: `skill://${PROBE.name}/${PROBE.oneMiB}` } },
  { id: 'list', label: 'skills/list (30 skills, 450 files, one page)', method: 'skills/list', params: {} },
].filter((c) => ONLY.includes(c.id));

function startServer(name, args, env, nodeFlags = []) {
  const child = spawn(process.execPath, [...nodeFlags, ...args, '--http', '--port', '0'], { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  return new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      const match = /listening on (http:\/\/[^\s"]+)/.exec(stderr);
      if (match) resolve({ name, child, url: new URL(match[1]) });
    });
    child.once('exit', (code) => reject(new Error(`${name} exited ${code}: ${stderr.slice(-500)}`)));
  });
}

function payloadOf(method, params) {
  const _meta = {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientInfo': { name: 'http-compare', version: '0' },
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  const payload = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta } });
  const name = params.uri ?? params.name;
  const head = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': Buffer.byteLength(payload), 'mcp-protocol-version': MODERN, 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}) };
  return { payload, head };
}

/** One request; resolves with latency (ms) and body bytes, rejects on a non-200 or a JSON-RPC error. */
function once(url, agent, { payload, head }) {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent, headers: head }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        // The error member, if any, comes right after the id; a result never starts that way.
        const head200 = body.subarray(0, 200).toString('utf8');
        if (res.statusCode !== 200 || /"error"\s*:/.test(head200)) reject(new Error(`HTTP ${res.statusCode}: ${head200}`));
        else resolve({ ms: performance.now() - started, bytes: body.length, body });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** `clients` loops for `seconds` against one server; latencies appended to `into`. */
async function slice(server, agent, request_, clients, seconds, into, errorSeen) {
  let errors = 0;
  let count = 0;
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < deadline) {
        try {
          into.push((await once(server.url, agent, request_)).ms);
          count += 1;
        } catch (error) {
          errors += 1;
          if (errorSeen && errorSeen.length < 3) errorSeen.push(String(error.message).slice(0, 160));
        }
      }
    }),
  );
  return { elapsed: (performance.now() - started) / 1000, count, errors };
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function cell(servers, testCase, clients) {
  const request_ = payloadOf(testCase.method, testCase.params);
  const state = Object.fromEntries(servers.map((s) => [s.name, { agent: new Agent({ keepAlive: true, maxSockets: clients }), latencies: [], elapsed: 0, errors: 0, errorMessages: [], bytes: 0 }]));
  for (const s of servers) {
    const st = state[s.name];
    // Warm-up: JIT, one socket per client; also checks the answer is what we think it is.
    const first = await once(s.url, st.agent, request_);
    st.bytes = first.bytes;
    await slice(s, st.agent, request_, clients, Math.min(1, SLICE_S), []);
  }
  for (let i = 0; i < SLICES; i++) {
    // ABBA order: neither server always goes first after a pause.
    const order = i % 2 === 0 ? servers : [...servers].reverse();
    for (const s of order) {
      const st = state[s.name];
      const r = await slice(s, st.agent, request_, clients, SLICE_S, st.latencies, st.errorMessages);
      st.elapsed += r.elapsed;
      st.errors += r.errors;
    }
  }
  const out = {};
  for (const s of servers) {
    const st = state[s.name];
    st.agent.destroy();
    st.latencies.sort((a, b) => a - b);
    out[s.name] = { requests: st.latencies.length, errors: st.errors, rps: st.latencies.length / st.elapsed, p50: percentile(st.latencies, 50), p99: percentile(st.latencies, 99), responseBytes: st.bytes, ...(st.errors ? { errorMessages: st.errorMessages } : {}) };
  }
  return out;
}

/** What a skills/list page holds, so the table can say both servers did the same work. */
async function listShape(server) {
  const agent = new Agent({ keepAlive: false });
  const { body } = await once(server.url, agent, payloadOf('skills/list', {}));
  const text = body.toString('utf8');
  const json = JSON.parse(text.startsWith('{') ? text : text.split('\n').find((l) => l.startsWith('data: ')).slice(6));
  const skills = json.result.skills ?? [];
  return { skills: skills.length, files: skills.reduce((n, s) => n + (Array.isArray(s.resources) ? s.resources.length : 0), 0), nextCursor: json.result.nextCursor ?? null };
}

const workload = WORKLOADS.find((w) => w.id === 'small');
const { root } = await generate(workload);
const refBundle = await buildRefServer();
const ourFlags = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter((f) => f !== '');
const servers = [
  await startServer('ours', [join(REPO, 'dist/skill-mcp.js')], { SKILLS_DIR: root, SKILL_MCP_MAX_SKILLS: String(workload.skills * 2), SKILL_MCP_STATE_DIR: join(OUT, 'state') }, ourFlags),
  await startServer('ref', [refBundle], { SKILLS_DIR: root }, (process.env.BENCH_REF_NODE_FLAGS ?? '').split(' ').filter((f) => f !== '')),
];
const load = [];
const rows = [];
const started = new Date();
try {
  const shapes = Object.fromEntries(await Promise.all(servers.map(async (s) => [s.name, await listShape(s)])));
  process.stderr.write(`skills/list: ours ${JSON.stringify(shapes.ours)}, ref ${JSON.stringify(shapes.ref)}\n`);
  for (const testCase of CASES) {
    for (const clients of CLIENTS) {
      const before = loadavg()[0];
      const r = await cell(servers, testCase, clients);
      const after = loadavg()[0];
      load.push(before, after);
      const row = { id: testCase.id, label: testCase.label, clients, ours: r.ours, ref: r.ref, rpsRatio: r.ours.rps / r.ref.rps, p99Ratio: r.ours.p99 / r.ref.p99, load1: [before, after] };
      rows.push(row);
      process.stderr.write(
        `${testCase.label} c=${clients}: ours ${r.ours.rps.toFixed(0)} req/s p99 ${r.ours.p99.toFixed(2)} ms | ref ${r.ref.rps.toFixed(0)} req/s p99 ${r.ref.p99.toFixed(2)} ms | ×${row.rpsRatio.toFixed(2)} req/s, p99 ×${row.p99Ratio.toFixed(2)} | errors ${r.ours.errors}/${r.ref.errors} | load ${before.toFixed(1)}→${after.toFixed(1)}\n`,
      );
    }
  }
  mkdirSync(OUT, { recursive: true });
  writeFileSync(join(OUT, 'http-compare.json'), `${JSON.stringify({ started: started.toISOString(), node: process.version, cpus: cpus().length, sliceSeconds: SLICE_S, slices: SLICES, listShape: shapes, rows }, null, 2)}\n`);
} finally {
  for (const s of servers) s.child.kill('SIGTERM');
}

const cpu = cpus();
console.log(`Streamable HTTP, ours vs the reference, interleaved (${SLICES} slices of ${SLICE_S} s each per server and row), loopback, 2026-07-28 stateless POSTs; ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC, node ${process.version}, ${cpu.length} × ${cpu[0]?.model ?? 'cpu'}, load average ${Math.min(...load).toFixed(1)}-${Math.max(...load).toFixed(1)} (load generator on the same cores)\n`);
console.log('| request | clients | ours req/s | ref req/s | ours/ref req/s (target ≥ 1.5) | ours p50 ms | ref p50 ms | ours p99 ms | ref p99 ms | p99 ours/ref (target ≤ 1) | errors ours/ref |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  const met = (ok) => (ok ? '' : ' **(missed)**');
  console.log(
    `| ${r.label} | ${r.clients} | ${r.ours.rps.toFixed(0)} | ${r.ref.rps.toFixed(0)} | ${r.rpsRatio.toFixed(2)}${met(r.rpsRatio >= TARGET.rps)} | ${r.ours.p50.toFixed(2)} | ${r.ref.p50.toFixed(2)} | ${r.ours.p99.toFixed(2)} | ${r.ref.p99.toFixed(2)} | ${r.p99Ratio.toFixed(2)}${met(r.p99Ratio <= 1)} | ${r.ours.errors}/${r.ref.errors} |`,
  );
}
