/**
 * @module What the benchmarks share: the node that serves (run.mjs, curves.mjs), timing a direct
 * spawn from a small fresh process (isolation.mjs, run-catalog.mjs), and for the HTTP benchmarks
 * (http-compare.mjs, http-load.mjs) starting a server that announces `listening on URL` on stderr,
 * one stateless MCP POST as a load generator sends it, closed loops of clients for a while, and
 * percentiles. Loopback only; node:http keep-alive.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** bench/ itself, the repository, and bench/out (git ignores it), where the benches write. */
export const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
export const REPO = join(BENCH_DIR, '..');
export const OUT = join(BENCH_DIR, 'out');

export const MODERN = '2026-07-28';

/** `--name=value` from argv, else `fallback`. */
export const option = (argv, name, fallback) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;

/** Space-separated node flags from an environment variable (e.g. `--cpu-prof --cpu-prof-dir=DIR`). */
export const flagsFrom = (value) => (value ?? '').split(' ').filter((f) => f !== '');

/**
 * The node that serves: BENCH_NODE, else the first on PATH outside node_modules (npm puts
 * node_modules/.bin first, and a devDependency may ship another node there), else this one.
 */
export function serverNode() {
  if (process.env.BENCH_NODE) return process.env.BENCH_NODE;
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir.includes('node_modules') || dir === '') continue;
    if (existsSync(join(dir, 'node'))) return join(dir, 'node');
  }
  return process.execPath;
}

/** Spawns `command ...args` (JSON in argv[1]) once per line on stdin; writes each spawn-to-close time in ms. */
const SPAWNER = `const { spawn } = require('node:child_process');
const [command, ...args] = JSON.parse(process.argv[1]);
require('node:readline').createInterface({ input: process.stdin }).on('line', () => {
  const t0 = performance.now();
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: '/usr/bin:/bin', HOME: '/tmp', LANG: 'C.UTF-8' } });
  child.stdout.resume(); child.stderr.resume();
  child.on('close', () => process.stdout.write((performance.now() - t0) + '\\n'));
});`;

/**
 * Times `node script` spawned from a small, fresh node process (as the same uid the server runs as,
 * through the same setpriv `prefix`, if any), with an environment as small as a run's: spawning
 * from the bench's own large process, or with the shell's variables (NODE_EXTRA_CA_CERTS loads a
 * certificate file at every start), would time something else than what the runner adds.
 * `time()` resolves with one spawn's ms; `close()` ends the spawner.
 */
export function directSpawner(prefix, script) {
  const child = spawn(process.execPath, ['-e', SPAWNER, JSON.stringify([...prefix, process.execPath, script])], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const waiting = [];
  let buffered = '';
  child.stdout.on('data', (chunk) => {
    buffered += chunk;
    for (let at = buffered.indexOf('\n'); at >= 0; at = buffered.indexOf('\n')) {
      waiting.shift()?.(Number(buffered.slice(0, at)));
      buffered = buffered.slice(at + 1);
    }
  });
  return {
    time: () =>
      new Promise((done) => {
        waiting.push(done);
        child.stdin.write('go\n');
      }),
    close: () => child.kill(),
  };
}

/** Spawns `node [flags] script --http --port 0 [args]` and resolves once it says where it listens. */
export function startHttpServer({ name, script, args = [], env, nodeFlags = [], node = process.execPath }) {
  const child = spawn(node, [...nodeFlags, script, '--http', ...args], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
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

/**
 * The body and headers of one MCP request: 2026-07-28 (envelope in `_meta`, `Mcp-Method` and, for
 * a request naming a resource or tool, `Mcp-Name`), or 2025-era (`era: 'legacy'`, no session).
 */
export function mcpPost(method, params, { era = 'modern', client = 'bench', authorization } = {}) {
  const modern = era !== 'legacy';
  const _meta = {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientInfo': { name: client, version: '0' },
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  const payload = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: modern ? { ...params, _meta } : params });
  const name = params.uri ?? params.name;
  const head = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'content-length': Buffer.byteLength(payload),
    ...(modern
      ? { 'mcp-protocol-version': MODERN, 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}) }
      : { 'mcp-protocol-version': '2025-11-25' }),
    ...(authorization ? { authorization } : {}),
  };
  return { payload, head };
}

/** One POST; resolves with latency (ms) and the body, rejects on a non-200 or a JSON-RPC error. */
export function post(url, agent, { payload, head }) {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent, headers: head }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        // The error member, if any, comes right after the id; a result never starts that way.
        const start = body.subarray(0, 200).toString('utf8');
        if (res.statusCode !== 200 || /"error"\s*:/.test(start)) reject(new Error(`HTTP ${res.statusCode}: ${start}`));
        else resolve({ ms: performance.now() - started, bytes: body.length, body });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * `clients` closed loops of `request_` for `seconds`; each latency (ms) is pushed to `into`, the
 * first few error messages to `errorSeen`. Resolves with the elapsed seconds and the counts.
 */
export async function loop(url, agent, request_, clients, seconds, into, errorSeen) {
  let errors = 0;
  let count = 0;
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < deadline) {
        try {
          into.push((await post(url, agent, request_)).ms);
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

/** Nearest-rank percentile of an ascending array. */
export const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
