/**
 * @module Runs at once over HTTP (issue #17): runs/second and p50/p99 latency of a whole confirmed
 * `skill_run` (the preview call, then the call with its token) with 1, 4 and 16 concurrent
 * clients, against the standalone HTTP server with the runner's limit at 1 and at its default
 * (from this machine's cores and memory). Two scripts: one that prints and exits (the cost of a
 * run) and one that sleeps 1 s (what overlapping buys). Numbers only; never fails on speed.
 *
 *   npm run build && node bench/parallel-runs.mjs [--seconds=10] [--clients=1,4,16] [--limits=1,default]
 *
 * The load generator is this process (node:http, keep-alive, one socket per client) and shares the
 * cores with the server, its runner and the scripts. A run refused BUSY (over the limit for longer
 * than the runner's queue wait, 10 s) counts in `busy`, not in the latencies.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const argv = process.argv.slice(2);
const option = (name, fallback) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const SECONDS = Number(option('seconds', '10'));
const CLIENTS = option('clients', '1,4,16').split(',').map(Number);
const LIMITS = option('limits', '1,default').split(',');
const MODERN = '2026-07-28';
const TOKEN = randomBytes(24).toString('hex');

/** A private tree: skills (readable by the front's and the runs' uids), state, HOME, TMPDIR. */
function makeTree() {
  const root = mkdtempSync(join(tmpdir(), 'skill-mcp-parallel-bench-'));
  chmodSync(root, 0o755);
  const skill = join(root, 'skills', 'par-bench');
  mkdirSync(join(skill, 'scripts'), { recursive: true, mode: 0o755 });
  chmodSync(join(root, 'skills'), 0o755);
  writeFileSync(
    join(skill, 'SKILL.md'),
    '---\nname: par-bench\ndescription: Scripts for the runs-at-once benchmark.\nmcp-host:\n  version: 1\n  run:\n    - script: scripts/quick.js\n      interpreter: node\n      timeout: 30\n    - script: scripts/sleep.js\n      interpreter: node\n      timeout: 30\n---\nBenchmark.\n',
    { mode: 0o644 },
  );
  writeFileSync(join(skill, 'scripts', 'quick.js'), "process.stdout.write('ok\\n');\n", { mode: 0o644 });
  writeFileSync(join(skill, 'scripts', 'sleep.js'), "setTimeout(() => process.stdout.write('slept\\n'), 1000);\n", { mode: 0o644 });
  return root;
}

function startServer(root, limit) {
  const env = {
    PATH: process.env.PATH,
    HOME: root,
    TMPDIR: root,
    SKILL_MCP_STATE_DIR: join(root, `state-${limit}`),
    SKILLS_DIR: join(root, 'skills'),
    MCP_CONFIRM_MODE: 'auto',
    SKILL_MCP_HTTP_TOKEN: TOKEN,
    ...(limit === 'default' ? {} : { SKILL_MCP_MAX_RUNS: limit }),
    ...(process.env.SKILL_MCP_BWRAP ? { SKILL_MCP_BWRAP: process.env.SKILL_MCP_BWRAP } : {}),
  };
  const child = spawn(process.execPath, [process.env.BENCH_BIN ?? join(REPO, 'dist/skill-mcp.js'), '--http', '--port', '0'], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  return new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match) resolve({ child, url: new URL(match[1]), stderr: () => stderr });
    });
    child.once('exit', (code) => reject(new Error(`server exited ${code}: ${stderr}`)));
  });
}

/** One 2026-07-28 `tools/call` of skill_run; resolves with the tool's structured result. */
function callRun(url, agent, args) {
  const params = {
    name: 'skill_run',
    arguments: args,
    _meta: {
      'io.modelcontextprotocol/protocolVersion': MODERN,
      'io.modelcontextprotocol/clientInfo': { name: 'parallel-runs', version: '0' },
      'io.modelcontextprotocol/clientCapabilities': {},
    },
  };
  const payload = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params });
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'content-length': Buffer.byteLength(payload),
    'mcp-protocol-version': MODERN,
    'mcp-method': 'tools/call',
    'mcp-name': 'skill_run',
    authorization: `Bearer ${TOKEN}`,
  };
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        // A JSON body, or an SSE stream whose last data line is the answer.
        const json = text.trimStart().startsWith('{')
          ? text
          : (text
              .split('\n')
              .filter((l) => l.startsWith('data:'))
              .at(-1)
              ?.slice(5) ?? '');
        try {
          const message = JSON.parse(json);
          if (message.error) return reject(new Error(`JSON-RPC ${message.error.code}: ${message.error.message}`));
          resolve(message.result.structuredContent ?? JSON.parse(message.result.content[0].text));
        } catch (error) {
          reject(new Error(`HTTP ${res.statusCode}: ${text.slice(0, 300)}`, { cause: error }));
        }
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** A whole confirmed run: the preview (token), then the run. Resolves with `busy` or the latency in ms. */
async function oneRun(url, agent, script) {
  const started = performance.now();
  const base = { name: 'par-bench', script, args: [] };
  const preview = await callRun(url, agent, base);
  if (!preview.confirmToken) throw new Error(`no token: ${JSON.stringify(preview).slice(0, 300)}`);
  const ran = await callRun(url, agent, { ...base, confirmToken: preview.confirmToken });
  if (ran.error?.code === 'BUSY') return 'busy';
  if (ran.status !== 'completed' || ran.exitCode !== 0) throw new Error(`run failed: ${JSON.stringify(ran).slice(0, 300)}`);
  return performance.now() - started;
}

function percentile(sorted, p) {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function measure(url, script, clients) {
  const agent = new Agent({ keepAlive: true, maxSockets: clients * 2 });
  await oneRun(url, agent, script); // warm-up: the runner started, JIT, the catalog
  const latencies = [];
  let busy = 0;
  let errors = 0;
  let lastError = '';
  const deadline = performance.now() + SECONDS * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < deadline) {
        try {
          const outcome = await oneRun(url, agent, script);
          if (outcome === 'busy') busy += 1;
          else latencies.push(outcome);
        } catch (error) {
          errors += 1;
          lastError = error.message;
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  if (lastError) process.stderr.write(`  last error: ${lastError}\n`);
  return {
    runs: latencies.length,
    busy,
    errors,
    perSecond: latencies.length / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

const root = makeTree();
const rows = [];
try {
  for (const limit of LIMITS) {
    const server = await startServer(root, limit);
    try {
      for (const [script, label] of [
        ['scripts/quick.js', 'print and exit'],
        ['scripts/sleep.js', 'sleep 1 s'],
      ]) {
        for (const clients of CLIENTS) {
          const row = await measure(server.url, script, clients);
          const ready = /(\d+) run\(s\) at once/.exec(server.stderr());
          rows.push({ limit: limit === 'default' ? `default (${ready?.[1] ?? '?'})` : limit, label, clients, ...row });
          process.stderr.write(
            `limit ${limit} ${label} c=${clients}: ${row.perSecond.toFixed(2)} runs/s p50 ${row.p50.toFixed(0)} ms p99 ${row.p99.toFixed(0)} ms busy ${row.busy} errors ${row.errors}\n`,
          );
        }
      }
    } finally {
      server.child.kill('SIGTERM');
      await new Promise((resolve) => server.child.once('exit', resolve));
    }
  }
} finally {
  // The runner (its guard's child) may still be writing its stop line just after the front exits.
  rmSync(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
}

const cpu = cpus();
console.log(
  `Runs at once over HTTP, ${SECONDS} s per row, loopback, standalone runner; node ${process.version}, ${cpu.length} x ${cpu[0]?.model ?? 'cpu'}, ${(totalmem() / 1024 ** 3).toFixed(0)} GiB (load generator, front, runner and scripts on the same cores)\n`,
);
console.log('| runs at once | script | clients | runs/s | p50 ms | p99 ms | runs | busy | errors |');
console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows)
  console.log(
    `| ${r.limit} | ${r.label} | ${r.clients} | ${r.perSecond.toFixed(2)} | ${r.p50.toFixed(0)} | ${r.p99.toFixed(0)} | ${r.runs} | ${r.busy} | ${r.errors} |`,
  );
