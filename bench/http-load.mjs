/**
 * @module HTTP load: requests/second and p50/p99 latency of the HTTP front for `resources/read`
 * of a 10 KB file and for `skills/list`, at several client concurrencies. Loopback only, bounded
 * duration, numbers only (never fails on speed).
 *
 *   npm run build && node bench/http-load.mjs [--seconds=5] [--clients=1,10,50] [--era=modern|legacy]
 *
 * The load generator is this process (node:http, keep-alive, one socket per client); it shares the
 * machine's cores with the server, so the numbers are a floor for a dedicated server. Each request
 * is one stateless 2026-07-28 POST (`--era=legacy`: a 2025-era POST without a session, which the
 * stateless fallback serves the same way).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const argv = process.argv.slice(2);
const option = (name, fallback) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const SECONDS = Number(option('seconds', '5'));
const CLIENTS = option('clients', '1,10,50').split(',').map(Number);
const ERA = option('era', 'modern');
const MODERN = '2026-07-28';
const FILE_BYTES = 10 * 1024;

/** One skill with a 10 KB text file, in a temp folder. */
function makeSkills() {
  const root = mkdtempSync(join(tmpdir(), 'skill-mcp-http-load-'));
  const dir = join(root, 'load-test');
  mkdirSync(join(dir, 'data'), { recursive: true });
  writeFileSync(join(dir, 'SKILL.md'), '---\nname: load-test\ndescription: A skill with a 10 KB file, for the HTTP load benchmark.\n---\n\nRead data/ten-kb.txt.\n');
  const line = 'The quick brown fox jumps over the lazy dog. 0123456789 abcdefghijklmnopqrstuvwxyz\n';
  writeFileSync(join(dir, 'data', 'ten-kb.txt'), line.repeat(Math.ceil(FILE_BYTES / line.length)).slice(0, FILE_BYTES));
  return root;
}

function startServer(skillsDir) {
  const child = spawn(process.execPath, [join(REPO, 'dist/skill-mcp.js'), '--http', '--port', '0'], {
    env: { PATH: process.env.PATH, SKILLS_DIR: skillsDir },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  return new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match) resolve({ child, url: new URL(match[1]) });
    });
    child.once('exit', (code) => reject(new Error(`server exited ${code}: ${stderr}`)));
  });
}

function body(method, params) {
  if (ERA === 'legacy') return JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
  const _meta = {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientInfo': { name: 'http-load', version: '0' },
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  return JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta } });
}

function headers(method, params, payload) {
  const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': Buffer.byteLength(payload) };
  if (ERA === 'legacy') return { ...base, 'mcp-protocol-version': '2025-11-25' };
  // 2026-07-28 over HTTP: Mcp-Method always, Mcp-Name for requests that name a resource or tool.
  const name = params.uri ?? params.name;
  return { ...base, 'mcp-protocol-version': MODERN, 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}) };
}

/** One request; resolves with its latency in ms, rejects on a non-200 or a JSON-RPC error. */
function once(url, agent, payload, head) {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent, headers: head }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200 || text.includes('"error"')) reject(new Error(`HTTP ${res.statusCode}: ${text.slice(0, 200)}`));
        else resolve(performance.now() - started);
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function measure(url, method, params, clients) {
  const payload = body(method, params);
  const head = headers(method, params, payload);
  const agent = new Agent({ keepAlive: true, maxSockets: clients });
  // Warm-up: JIT, the catalog's digests, one socket per client.
  await Promise.all(Array.from({ length: clients }, () => once(url, agent, payload, head)));
  const latencies = [];
  let errors = 0;
  const deadline = performance.now() + SECONDS * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < deadline) {
        try {
          latencies.push(await once(url, agent, payload, head));
        } catch {
          errors += 1;
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return { method, clients, requests: latencies.length, errors, rps: latencies.length / elapsed, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

const skillsDir = makeSkills();
const { child, url } = await startServer(skillsDir);
const rows = [];
try {
  const cases = [
    ['resources/read', { uri: 'skill://load-test/data/ten-kb.txt' }, 'resources/read 10 KB'],
    ['skills/list', {}, 'skills/list (1 skill)'],
  ];
  for (const [method, params, label] of cases) {
    for (const clients of CLIENTS) {
      const row = await measure(url, method, params, clients);
      rows.push({ label, ...row });
      process.stderr.write(`${label} c=${clients}: ${row.rps.toFixed(0)} req/s p50 ${row.p50.toFixed(2)} ms p99 ${row.p99.toFixed(2)} ms errors ${row.errors}\n`);
    }
  }
} finally {
  child.kill('SIGTERM');
  rmSync(skillsDir, { recursive: true, force: true });
}

const cpu = cpus();
console.log(`HTTP load, ${ERA} era, ${SECONDS} s per row, loopback; node ${process.version}, ${cpu.length} x ${cpu[0]?.model ?? 'cpu'} (load generator on the same cores)\n`);
console.log('| request | clients | req/s | p50 ms | p99 ms | requests | errors |');
console.log('|---|---:|---:|---:|---:|---:|---:|');
for (const r of rows) console.log(`| ${r.label} | ${r.clients} | ${r.rps.toFixed(0)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.requests} | ${r.errors} |`);
