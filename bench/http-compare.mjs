/**
 * @module Streamable HTTP, ours against the reference (bench/ref-server.ts `--http`: the SDK's
 * `createMcpHandler` behind a bare node:http adapter), on the same folder (the 30-skill workload
 * of bench/generate.mjs), interleaved: for each request and concurrency the two servers take turns
 * in short slices (ours, ref, ref, ours, ...), so a busy moment on the machine hits both alike.
 * Requests: `resources/read` of a 10 KB text file and of a 1 MiB binary, and `skills/list` (one
 * page of 30 skills / 450 files in both). Reports req/s, p50 and p99 for each, and ours/ref.
 *
 *   npm run build && node bench/http-compare.mjs [--slice=2] [--slices=4] [--clients=1,10,50] [--only=read10k,read1m,list] [--base=DIST/skill-mcp.js]
 *
 * `--base=PATH[,PATH]`: also previous builds of ours (say, a copy of dist/ from before a change), in
 * the same rotation, reported as ours/base (the first; the others are printed as base2, ...). `npm run bench` runs the same rows (`httpCompareRows`) with
 * fewer, shorter slices.
 *
 * Writes bench/out/http-compare.json. The load generator is this process (node:http, keep-alive,
 * one socket per client, stateless 2026-07-28 POSTs), on the same cores as the servers: a floor
 * for a dedicated server, and the same floor for both. `BENCH_NODE_FLAGS` goes to our server's
 * node (e.g. `--cpu-prof --cpu-prof-dir=DIR`; our front drops root, so DIR must be writable by
 * its uid), `BENCH_REF_NODE_FLAGS` to the reference's. Numbers only: nothing here fails on speed.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROBE, WORKLOADS, generate } from './generate.mjs';
import { flagsFrom, loop, mcpPost, option, percentile, post, startHttpServer } from './lib.mjs';
import { buildRefServer } from './ref-bundle.mjs';
import { memoryOf } from './session.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = join(HERE, '..');
const OUT = join(HERE, 'out');
/** Issue 31 item 5: ours ≥ 1.5× the reference's requests per second, p99 no worse. */
export const HTTP_TARGET = { rps: 1.5, p99: 1 };

export const HTTP_CASES = [
  {
    id: 'read10k',
    label: 'resources/read 10 KB (text)',
    method: 'resources/read',
    params: { uri: `skill://${PROBE.name}/${PROBE.tenKB}` },
  },
  {
    id: 'read1m',
    label: 'resources/read 1 MiB (binary)',
    method: 'resources/read',
    params: { uri: `skill://${PROBE.name}/${PROBE.oneMiB}` },
  },
  { id: 'list', label: 'skills/list (30 skills, 450 files, one page)', method: 'skills/list', params: {} },
];

/** How often the servers' RSS is sampled while a row runs (VmRSS of the process serving HTTP). */
export const RSS_SAMPLE_MS = 50;

/** The servers' requests per second, p50 and p99 for one request at one concurrency, in turns; and the highest RSS each reached. */
async function cell(servers, testCase, clients, { slices, sliceSeconds }) {
  const request_ = mcpPost(testCase.method, testCase.params, { client: 'http-compare' });
  const state = Object.fromEntries(
    servers.map((s) => [
      s.name,
      {
        agent: new Agent({ keepAlive: true, maxSockets: clients }),
        latencies: [],
        elapsed: 0,
        errors: 0,
        errorMessages: [],
        bytes: 0,
        rssMaxMB: 0,
      },
    ]),
  );
  const sample = () => {
    for (const s of servers) {
      const m = memoryOf(s.child.pid);
      if (m && m.rssMB > state[s.name].rssMaxMB) state[s.name].rssMaxMB = m.rssMB;
    }
  };
  const sampler = setInterval(sample, RSS_SAMPLE_MS);
  try {
    for (const s of servers) {
      const st = state[s.name];
      // Warm-up: JIT, one socket per client; also checks the answer is what we think it is.
      const first = await post(s.url, st.agent, request_);
      st.bytes = first.bytes;
      await loop(s.url, st.agent, request_, clients, Math.min(1, sliceSeconds), []);
    }
    for (let i = 0; i < slices; i++) {
      // ABBA order: neither server always goes first after a pause.
      const order = i % 2 === 0 ? servers : [...servers].reverse();
      for (const s of order) {
        const st = state[s.name];
        const r = await loop(s.url, st.agent, request_, clients, sliceSeconds, st.latencies, st.errorMessages);
        st.elapsed += r.elapsed;
        st.errors += r.errors;
      }
    }
  } finally {
    clearInterval(sampler);
  }
  sample();
  const out = {};
  for (const s of servers) {
    const st = state[s.name];
    st.agent.destroy();
    st.latencies.sort((a, b) => a - b);
    out[s.name] = {
      requests: st.latencies.length,
      errors: st.errors,
      rps: st.latencies.length / st.elapsed,
      p50: percentile(st.latencies, 50),
      p99: percentile(st.latencies, 99),
      rssMaxMB: st.rssMaxMB,
      responseBytes: st.bytes,
      ...(st.errors ? { errorMessages: st.errorMessages } : {}),
    };
  }
  return out;
}

/** What a skills/list page holds, so the table can say both servers did the same work. */
async function listShape(server) {
  const agent = new Agent({ keepAlive: false });
  const { body } = await post(server.url, agent, mcpPost('skills/list', {}));
  const text = body.toString('utf8');
  const json = JSON.parse(
    text.startsWith('{')
      ? text
      : text
          .split('\n')
          .find((l) => l.startsWith('data: '))
          .slice(6),
  );
  const skills = json.result.skills ?? [];
  return {
    skills: skills.length,
    files: skills.reduce((n, s) => n + (Array.isArray(s.resources) ? s.resources.length : 0), 0),
    nextCursor: json.result.nextCursor ?? null,
  };
}

/**
 * Starts ours (and `base`, a previous build, when given) and the reference over Streamable HTTP on
 * the 30-skill workload and measures every case at every concurrency in turns. Resolves with one
 * row per case and concurrency: each server's numbers, ours/ref (and ours/base), the load average.
 */
export async function httpCompareRows({
  ours = join(REPO, 'dist/skill-mcp.js'),
  base,
  ref,
  node = process.execPath,
  cases = HTTP_CASES,
  clients = [1, 10, 50],
  slices = 4,
  sliceSeconds = 2,
  log = () => undefined,
}) {
  const workload = WORKLOADS.find((w) => w.id === 'small');
  const { root } = await generate(workload);
  const refBundle = ref ?? (await buildRefServer());
  const ourEnv = { SKILLS_DIR: root, SKILL_MCP_MAX_SKILLS: String(workload.skills * 2), SKILL_MCP_STATE_DIR: join(OUT, 'state') };
  const ourFlags = flagsFrom(process.env.BENCH_NODE_FLAGS);
  const servers = [];
  try {
    servers.push(await startHttpServer({ name: 'ours', script: ours, args: ['--port', '0'], env: ourEnv, nodeFlags: ourFlags, node }));
    const bases = base === undefined ? [] : String(base).split(',');
    for (const [i, script] of bases.entries())
      servers.push(
        await startHttpServer({
          name: i === 0 ? 'base' : `base${i + 1}`,
          script,
          args: ['--port', '0'],
          env: ourEnv,
          nodeFlags: ourFlags,
          node,
        }),
      );
    servers.push(
      await startHttpServer({
        name: 'ref',
        script: refBundle,
        args: ['--port', '0'],
        env: { SKILLS_DIR: root },
        nodeFlags: flagsFrom(process.env.BENCH_REF_NODE_FLAGS),
        node,
      }),
    );
    const shapes = Object.fromEntries(await Promise.all(servers.map(async (s) => [s.name, await listShape(s)])));
    log(`skills/list: ${servers.map((s) => `${s.name} ${JSON.stringify(shapes[s.name])}`).join(', ')}`);
    const rows = [];
    for (const testCase of cases) {
      for (const count of clients) {
        const before = loadavg()[0];
        const r = await cell(servers, testCase, count, { slices, sliceSeconds });
        const after = loadavg()[0];
        const row = {
          id: testCase.id,
          label: testCase.label,
          clients: count,
          ...r,
          rpsRatio: r.ours.rps / r.ref.rps,
          p99Ratio: r.ours.p99 / r.ref.p99,
          ...(r.base ? { rpsOverBase: r.ours.rps / r.base.rps, p99OverBase: r.ours.p99 / r.base.p99 } : {}),
          load1: [before, after],
        };
        rows.push(row);
        const each = servers.map((s) => `${s.name} ${r[s.name].rps.toFixed(0)} req/s p99 ${r[s.name].p99.toFixed(2)} ms`).join(' | ');
        log(
          `${testCase.label} c=${count}: ${each} | ours/ref ×${row.rpsRatio.toFixed(2)} req/s, p99 ×${row.p99Ratio.toFixed(2)}${r.base ? ` | ours/base ×${row.rpsOverBase.toFixed(2)} req/s, p99 ×${row.p99OverBase.toFixed(2)}` : ''} | errors ${servers.map((s) => r[s.name].errors).join('/')} | load ${before.toFixed(1)}→${after.toFixed(1)}`,
        );
      }
    }
    return { rows, listShape: shapes };
  } finally {
    for (const s of servers) s.child.kill('SIGTERM');
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const sliceSeconds = Number(option(argv, 'slice', '2'));
  const slices = Number(option(argv, 'slices', '4'));
  const only = option(argv, 'only', 'read10k,read1m,list').split(',');
  const base = option(argv, 'base', undefined);
  const started = new Date();
  const { rows, listShape: shapes } = await httpCompareRows({
    base,
    cases: HTTP_CASES.filter((c) => only.includes(c.id)),
    clients: option(argv, 'clients', '1,10,50').split(',').map(Number),
    slices,
    sliceSeconds,
    log: (line) => process.stderr.write(`${line}\n`),
  });
  mkdirSync(OUT, { recursive: true });
  writeFileSync(
    join(OUT, 'http-compare.json'),
    `${JSON.stringify({ started: started.toISOString(), node: process.version, cpus: cpus().length, sliceSeconds, slices, listShape: shapes, rows }, null, 2)}\n`,
  );
  const load = rows.flatMap((r) => r.load1);
  const cpu = cpus();
  console.log(
    `Streamable HTTP, ours vs the reference, interleaved (${slices} slices of ${sliceSeconds} s each per server and row), loopback, 2026-07-28 stateless POSTs; ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC, node ${process.version}, ${cpu.length} × ${cpu[0]?.model ?? 'cpu'}, load average ${Math.min(...load).toFixed(1)}-${Math.max(...load).toFixed(1)} (load generator on the same cores)\n`,
  );
  const baseCols = base ? ' base req/s | ours/base req/s | base p99 ms |' : '';
  console.log(
    `| request | clients | ours req/s | ref req/s | ours/ref req/s (target ≥ ${HTTP_TARGET.rps}) | ours p50 ms | ref p50 ms | ours p99 ms | ref p99 ms | p99 ours/ref (target ≤ ${HTTP_TARGET.p99}) | errors ours/ref | highest RSS ours / ref MB |${baseCols}`,
  );
  console.log(`|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|${base ? '---:|---:|---:|' : ''}`);
  for (const r of rows) {
    const met = (ok) => (ok ? '' : ' **(missed)**');
    const extra = r.base ? ` ${r.base.rps.toFixed(0)} | ${r.rpsOverBase.toFixed(2)} | ${r.base.p99.toFixed(2)} |` : '';
    console.log(
      `| ${r.label} | ${r.clients} | ${r.ours.rps.toFixed(0)} | ${r.ref.rps.toFixed(0)} | ${r.rpsRatio.toFixed(2)}${met(r.rpsRatio >= HTTP_TARGET.rps)} | ${r.ours.p50.toFixed(2)} | ${r.ref.p50.toFixed(2)} | ${r.ours.p99.toFixed(2)} | ${r.ref.p99.toFixed(2)} | ${r.p99Ratio.toFixed(2)}${met(r.p99Ratio <= HTTP_TARGET.p99)} | ${r.ours.errors}/${r.ref.errors} | ${r.ours.rssMaxMB.toFixed(0)} / ${r.ref.rssMaxMB.toFixed(0)} |${extra}`,
    );
  }
}
