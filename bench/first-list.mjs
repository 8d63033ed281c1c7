/**
 * @module Spawn → first `skills/list` answer, ours against the reference (ref-server.ts: the SDK's
 * own `loadSkills`), on the bundled skill and the 30-skill workload, in both eras, started as root
 * and as an unprivileged uid (when run as root). Each sample spawns a fresh server and drives it
 * with bare JSON-RPC lines (no SDK client in the timing) and waits for it to exit before the next;
 * ours and the reference alternate sample by sample, so a noisy moment on a shared machine hits
 * both. `npm run bench` puts these rows in bench/RESULTS.md; on its own this prints them and writes
 * bench/out/first-list.json. Never fails on speed.
 *
 *   npm run build && node bench/first-list.mjs [--runs=N] [--era=legacy|modern|both]
 */
import { spawn } from 'node:child_process';
import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { WORKLOADS, generate } from './generate.mjs';
import { buildRefServer } from './ref-bundle.mjs';
import { row, toTerminal } from './report.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const OUT = join(HERE, 'out');
/** Who the server is started as besides root, when this runs as root: nobody, a uid with no rights at all. */
const UNPRIVILEGED = { uid: 65534, gid: 65534 };
/** Issue 9 item 11: the first answer at most 0.6× the reference's. */
const TARGET = { ratio: 0.6 };

const MODERN_META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
export const ERAS = {
  // 2025: initialize, initialized, then skills/list (what the SDK's Client does by default).
  legacy: [
    {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'first-list', version: '0' } },
    },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 1, method: 'skills/list', params: {} },
  ],
  // 2026-07-28: stateless, the very first request is skills/list.
  modern: [{ jsonrpc: '2.0', id: 1, method: 'skills/list', params: { _meta: MODERN_META } }],
};

/**
 * One fresh server: ms from just before the spawn to the complete skills/list answer. `env` is added
 * to the server's environment (bench/compile-cache.mjs uses it to switch caches).
 */
export function once(node, server, root, era, as, env = {}) {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(node, [server], {
      env: { PATH: process.env.PATH, SKILLS_DIR: root, HOME: as ? '/nonexistent' : (process.env.HOME ?? '/root'), ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(as ?? {}),
    });
    for (const message of ERAS[era]) child.stdin.write(`${JSON.stringify(message)}\n`);
    let buffer = '';
    let stderr = '';
    let answered = false;
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.stdout.on('data', (chunk) => {
      buffer += chunk;
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const message = JSON.parse(buffer.slice(0, nl));
        buffer = buffer.slice(nl + 1);
        if (message.id !== 1) continue;
        const ms = performance.now() - start;
        answered = true;
        child.stdin.end();
        if (!message.result) return reject(new Error(JSON.stringify(message.error)));
        const { skills } = message.result;
        const undigested = skills.filter((s) => !Array.isArray(s.resources)).length;
        // Wait for the exit, so the next sample does not share the CPU with this one's shutdown.
        child.once('exit', () =>
          resolve({ ms, skills: skills.length, files: skills.reduce((n, s) => n + (s.resources?.length ?? 0), 0), undigested }),
        );
      }
    });
    child.on('error', reject);
    // Before an answer, an exit is a failure (after one, the promise is already settled).
    child.on('exit', (code, signal) => answered || reject(new Error(`${server} exited (${signal ?? code}) before answering: ${stderr}`)));
  });
}

/**
 * The rows: for each folder, user and era, `runs` interleaved spawns of each server. `servers`:
 * `{ours, ref}` script paths, run with `node`.
 */
export async function firstListRows({ node, servers, runs, eras = Object.keys(ERAS), log = () => undefined }) {
  const small = WORKLOADS.find((w) => w.id === 'small');
  const folders = { 'bundled (1 skill)': fileURLToPath(new URL('../skills', import.meta.url)), '30 skills': (await generate(small)).root };
  const users =
    process.getuid?.() === 0
      ? { root: undefined, [`uid ${UNPRIVILEGED.uid}`]: UNPRIVILEGED }
      : { [`uid ${process.getuid?.()}`]: undefined };
  const rows = [];
  for (const [folder, root] of Object.entries(folders)) {
    for (const [user, as] of Object.entries(users)) {
      for (const era of eras) {
        const samples = { ours: [], ref: [] };
        let shape;
        for (let i = 0; i < runs; i++) {
          // Alternate who goes first: the second of a pair inherits the first one's exit.
          for (const kind of i % 2 === 0 ? ['ours', 'ref'] : ['ref', 'ours']) {
            const r = await once(node, servers[kind], root, era, as);
            samples[kind].push(r.ms);
            if (kind === 'ours') shape = r;
          }
        }
        const digests = shape.undigested === 0 ? `${shape.files} files, all digested` : `${shape.undigested} skills WITHOUT digests`;
        const label = `spawn → first skills/list, started as ${user}, ${era === 'legacy' ? '2025 initialize' : '2026-07-28'}`;
        rows.push(row(folder, label, 'ms', samples.ours, samples.ref, TARGET, `bare JSON-RPC client, ${digests}`));
        log(`  ${folder}, ${user}, ${era}: ours ${Math.round(rows.at(-1).ours)} ms, ref ${Math.round(rows.at(-1).ref)} ms`);
      }
    }
  }
  return rows;
}

/** A private copy of dist/, so a rebuild in this checkout during the run cannot change what is measured. */
async function snapshotOurs() {
  const dir = join(OUT, 'first-list-dist');
  await rm(dir, { recursive: true, force: true });
  await cp(join(HERE, '..', 'dist'), dir, { recursive: true });
  return join(dir, 'skill-mcp.js');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const argv = process.argv.slice(2);
  const option = (name, fallback) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
  const runs = Number(option('runs', 9));
  const era = option('era', 'both');
  await mkdir(OUT, { recursive: true });
  const servers = { ours: await snapshotOurs(), ref: await buildRefServer() };
  const rows = await firstListRows({
    node: process.execPath,
    servers,
    runs,
    eras: era === 'both' ? undefined : [era],
    log: (m) => process.stderr.write(`${m}\n`),
  });
  const load = (await readFile('/proc/loadavg', 'utf8').catch(() => '')).split(' ').slice(0, 3).join(' ');
  process.stdout.write(`${toTerminal(rows)}\n\nmedians of ${runs} interleaved spawns per row; load average at the end ${load}\n`);
  await writeFile(
    join(OUT, 'first-list.json'),
    JSON.stringify({ date: new Date().toISOString(), node: process.version, load, rows }, null, 2),
  );
}
