/**
 * @module `node bench/walk.mjs` (after `npm run build`; issue 31): a client walking `skills/list`
 * from the first page to the last, warm, ours against the SDK reference (bench/ref-server.ts) on
 * the same folder. Both servers are up at once and walk in turns, walk by walk, so a busy moment on
 * the shared machine falls on both; the SDK's `Client` over stdio, as bench/session.mjs drives it.
 * Prints medians, ours/ref, pages per walk and the largest page's size, with load averages.
 *
 *   node bench/walk.mjs [--walks=N] [--only=small,large,huge] [--bin=PATH[,PATH]] [--prof=DIR]
 *
 * `--bin=A,B`: several builds of ours (say, a copy of dist/ from before a change, then dist/), all
 * up at once with the reference and walking in the same rotation; each is reported against it.
 *
 * Writes bench/out/walk.json. Numbers only: nothing here fails on speed.
 */
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { WORKLOADS, generate } from './generate.mjs';
import { buildRefServer } from './ref-bundle.mjs';
import { median, quantile } from './report.mjs';
import { Session } from './session.mjs';

const REPO = resolve(import.meta.dirname, '..');
const argv = process.argv.slice(2);
const opt = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const BINS = (opt('bin') ?? join(REPO, 'dist/skill-mcp.js')).split(',').map((b) => resolve(b));
const WALKS = Number(opt('walks') ?? 15);
const only = opt('only')?.split(',');
const prof = opt('prof');
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

/** One walk, and the size in bytes of each page as JSON (what the wire carried, near enough). */
async function walk(session) {
  const bytes = [];
  let cursor;
  let skills = 0;
  const t0 = performance.now();
  do {
    const page = await session.request('skills/list', cursor === undefined ? {} : { cursor });
    skills += page.skills.length;
    bytes.push(page);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  const ms = performance.now() - t0;
  return { ms, skills, pages: bytes.length, pageBytes: bytes.map((p) => Buffer.byteLength(JSON.stringify(p))) };
}

/**
 * Ours (each build in `bins`) and the reference up at once on `workload`, warmed by three untimed
 * walks each, then `walks` timed walks each in a rotating order. One row per build. `npm run bench`
 * calls it too (bench/run.mjs: the interleaved warm-walk rows, issue 31 item 3).
 */
export async function compareWalks({
  workload,
  bins = BINS,
  refBundle,
  walks = WALKS,
  node = process.execPath,
  profDir = prof,
  log = (m) => process.stderr.write(`${m}\n`),
}) {
  const { root } = await generate(workload);
  const profEnv = profDir ? { NODE_OPTIONS: `--require ${join(REPO, 'bench/prof-preload.cjs')}`, PROF_DIR: profDir } : {};
  const names = bins.map((_, i) => (bins.length === 1 ? 'ours' : `ours${i + 1}`));
  const sessions = {};
  const rows = [];
  try {
    for (const [i, bin] of bins.entries())
      sessions[names[i]] = await Session.open({
        command: node,
        args: [bin],
        env: { SKILLS_DIR: root, SKILL_MCP_MAX_SKILLS: String(workload.skills * 2), ...profEnv },
      });
    sessions.ref = await Session.open({ command: node, args: [refBundle], env: { SKILLS_DIR: root } });
    const everyone = [...names, 'ref'];
    // Untimed: our first walk waits for the digests; then all are warm.
    for (let i = 0; i < 3; i++) for (const who of everyone) await walk(sessions[who]);
    const samples = Object.fromEntries(everyone.map((who) => [who, []]));
    const shapes = {};
    const at = load();
    for (let i = 0; i < walks; i++) {
      // Rotate who goes first, and reverse every other round.
      const turn = everyone.map((_, k) => everyone[(k + i) % everyone.length]);
      for (const who of i % 2 === 0 ? turn : turn.reverse()) {
        const w = await walk(sessions[who]);
        samples[who].push(w.ms);
        shapes[who] = w;
      }
    }
    const end = load();
    for (const [i, name] of names.entries()) {
      const shape = shapes[name];
      const row = {
        skills: workload.skills,
        bin: bins[i],
        load: `${at} → ${end}`,
        oursMs: median(samples[name]),
        oursP90Ms: quantile(samples[name], 0.9),
        refMs: median(samples.ref),
        refP90Ms: quantile(samples.ref, 0.9),
        ratio: median(samples[name]) / median(samples.ref),
        pages: shape.pages,
        refPages: shapes.ref.pages,
        largestPageBytes: Math.max(...shape.pageBytes),
        totalBytes: shape.pageBytes.reduce((a, b) => a + b, 0),
        skillsSeen: shape.skills,
        samples: { ours: samples[name], ref: samples.ref },
      };
      rows.push(row);
      log(
        `${workload.skills} skills: ${name} ${row.oursMs.toFixed(1)} ms, ref ${row.refMs.toFixed(1)} ms, ×${row.ratio.toFixed(2)} (load ${end})`,
      );
    }
  } finally {
    for (const session of Object.values(sessions)) await session.close();
  }
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  if (prof) {
    mkdirSync(prof, { recursive: true });
    chmodSync(prof, 0o1777);
  }
  const refBundle = await buildRefServer();
  const rows = [];
  const loads = { start: load() };
  for (const workload of WORKLOADS.filter((w) => !only || only.includes(w.id))) rows.push(...(await compareWalks({ workload, refBundle })));
  mkdirSync(join(REPO, 'bench/out'), { recursive: true });
  writeFileSync(
    join(REPO, 'bench/out/walk.json'),
    JSON.stringify({ date: new Date().toISOString(), node: process.version, walks: WALKS, bins: BINS, loads, rows }, null, 2),
  );
  const kib = (b) => `${(b / 1024).toFixed(0)} KiB`;
  console.log(
    `${new Date().toISOString().slice(0, 16)} UTC, node ${process.version}, ${WALKS} warm walks each, interleaved; ${BINS.join(', ')}`,
  );
  console.log(
    '| skills | build | load average (1/5/15 min), start → end | ours median (p90) | ref median (p90) | ours/ref | pages: ours, ref | largest page (ours) | whole walk (ours) |',
  );
  console.log('|---:|---|---|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    console.log(
      `| ${r.skills} | ${BINS.length === 1 ? 'ours' : r.bin} | ${r.load} | ${r.oursMs.toFixed(1)} ms (${r.oursP90Ms.toFixed(1)}) | ${r.refMs.toFixed(1)} ms (${r.refP90Ms.toFixed(1)}) | ${r.ratio.toFixed(2)} | ${r.pages}, ${r.refPages} | ${kib(r.largestPageBytes)} | ${kib(r.totalBytes)} |`,
    );
  }
}
