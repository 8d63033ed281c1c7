/**
 * @module The cost curves: how each cost grows with the catalog, ours against the reference
 * (bench/ref-server.ts), on 30, 1,000, 5,000 and 20,000 skills (bench/generate.mjs, cached).
 * Per size, spawns alternating ours / ref, each sample:
 *   - spawn → first `skills/list` answer (SDK client over stdio, timed from just before the spawn);
 *   - a whole `skills/list` walk, warm: after a first walk, once the server is idle (its CPU under
 *     5 % of a core for half a second: ours finishes digests and its watch in the background) and
 *     one more untimed walk; every page, cursor to cursor;
 *   - RSS (VmRSS) of the server after those walks;
 * and on ours only, once per size: `skill_run` of the probe script on the token path (both calls)
 * against spawning the same script with node directly, alternating call by call; the overhead is
 * the difference of the medians.
 *
 *   npm run build && node bench/curves.mjs [--only=small,large,huge,giant] [--quick]
 *   node bench/curves.mjs --redraw    (the chart again from bench/out/curves.json)
 *
 * Writes bench/out/curves.json and bench/curves.svg (hand-written SVG: log-x catalog size, one
 * panel per measure). Takes ~6-10 minutes on 2 shared cores, most of it the reference's start on
 * 20,000 skills. Numbers only: nothing here fails on speed.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { GIANT, PROBE, WORKLOADS, generate } from './generate.mjs';
import { BENCH_DIR as HERE, OUT, REPO, option, serverNode } from './lib.mjs';
import { skillRunOnce, spawnDirect } from './measure.mjs';
import { buildRefServer } from './ref-bundle.mjs';
import { Session, now } from './session.mjs';

const argv = process.argv.slice(2);
const only = option(argv, 'only')?.split(',');
const quick = argv.includes('--quick');

const ALL = [...WORKLOADS, GIANT].filter((w) => !only || only.includes(w.id));
/** Spawns per server; the reference's start on 20,000 skills is ~1 min, so fewer there. */
const SAMPLES = quick ? { small: 1, large: 1, huge: 1, giant: 1 } : { small: 5, large: 3, huge: 3, giant: 2 };
const WARM_WALKS = quick ? 1 : 3;
const RUNS = quick ? 2 : 6;

const log = (message) => process.stderr.write(`${message}\n`);

const NODE = serverNode();

function servers(refBundle, root, workload) {
  return {
    ours: {
      command: NODE,
      args: [join(REPO, 'dist/skill-mcp.js')],
      env: {
        SKILLS_DIR: root,
        SKILL_MCP_MAX_SKILLS: String(workload.skills * 2),
        MCP_CONFIRM_ELICITATION: 'off',
        SKILL_MCP_STATE_DIR: join(OUT, 'state'),
      },
    },
    ref: { command: NODE, args: [refBundle], env: { SKILLS_DIR: root } },
  };
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** CPU time (user + system) of a process so far, in ms; undefined once it has exited. */
function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return undefined;
  }
}

/**
 * Waits until the server is idle: under 5 % of a core over half a second (ours digests, sets up
 * its watch and catches up in the background after the first answers; the reference has no
 * background work). At most 60 s; returns how long it waited.
 */
async function settle(pid) {
  const started = now();
  let before = cpuMs(pid);
  while (now() - started < 60_000) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const after = cpuMs(pid);
    if (after === undefined || before === undefined || after - before < 25) break;
    before = after;
  }
  return now() - started;
}

/** One spawn: first answer, then (settled) warm walks, then memory; `withRuns` adds skill_run samples (ours). */
async function sample(server, withRuns, root) {
  const session = await Session.open(server);
  try {
    const first = await session.request('skills/list');
    const firstMs = now() - session.startedAt;
    const firstWalk = await session.walkSkills();
    const settledMs = await settle(session.pid);
    await session.walkSkills(); // untimed: the walk's own code warm
    const walks = [];
    for (let i = 0; i < WARM_WALKS; i++) walks.push(await session.walkSkills());
    const memory = session.memory();
    const out = {
      firstMs,
      settledMs,
      firstPageSkills: first.skills.length,
      firstWalkMs: firstWalk.ms,
      walkMs: walks.map((w) => w.ms),
      skills: firstWalk.skills,
      pages: firstWalk.pages.length,
      undigested: walks.at(-1).undigested,
      rssMB: memory?.rssMB,
    };
    if (withRuns) out.run = await runSamples(session, server.command, join(root, PROBE.name, PROBE.script));
    return out;
  } finally {
    await session.close();
  }
}

async function runSamples(session, node, script) {
  try {
    await skillRunOnce(session); // the runner's first start pays for its own warm-up
    await spawnDirect(node, script);
    const run = [];
    const direct = [];
    for (let i = 0; i < RUNS; i++) {
      let t = now();
      await skillRunOnce(session);
      run.push(now() - t);
      t = now();
      await spawnDirect(node, script);
      direct.push(now() - t);
    }
    return { skillRunMs: run, directMs: direct };
  } catch (error) {
    return { error: error.message.slice(0, 300) };
  }
}

async function measure(workload, refBundle) {
  const t = performance.now();
  const { root, cached } = await generate(workload);
  log(
    `${workload.id}: ${workload.skills} skills / ${workload.files} files ${cached ? '(cached)' : `generated in ${Math.round(performance.now() - t)} ms`}`,
  );
  const server = servers(refBundle, root, workload);
  const raw = { ours: [], ref: [] };
  const load = [loadavg()[0]];
  for (let i = 0; i < SAMPLES[workload.id]; i++) {
    // Alternating which goes first, so neither always follows the other's exit.
    const order = i % 2 === 0 ? ['ours', 'ref'] : ['ref', 'ours'];
    for (const kind of order) {
      const s = await sample(server[kind], kind === 'ours' && i === 0, root);
      raw[kind].push(s);
      log(
        `  ${kind} ${i + 1}/${SAMPLES[workload.id]}: first list ${s.firstMs.toFixed(0)} ms, settled after ${(s.settledMs / 1000).toFixed(1)} s, warm walk ${median(s.walkMs).toFixed(1)} ms (${s.skills} skills, ${s.pages} pages), RSS ${s.rssMB?.toFixed(0)} MB${s.run ? `, ${s.run.error ?? `skill_run ${median(s.run.skillRunMs).toFixed(1)} vs direct ${median(s.run.directMs).toFixed(1)} ms`}` : ''}`,
      );
    }
    load.push(loadavg()[0]);
  }
  const summary = (kind) => {
    const list = raw[kind];
    return {
      firstListMs: median(list.map((s) => s.firstMs)),
      warmWalkMs: median(list.flatMap((s) => s.walkMs)),
      rssAfterWalkMB: median(list.map((s) => s.rssMB)),
      skills: list[0].skills,
      pages: list[0].pages,
    };
  };
  const ours = summary('ours');
  const ref = summary('ref');
  const run = raw.ours[0].run;
  if (run && !run.error) {
    ours.skillRunMs = median(run.skillRunMs);
    ref.directSpawnMs = median(run.directMs);
    ours.skillRunOverheadMs = ours.skillRunMs - ref.directSpawnMs;
  } else if (run?.error) ours.skillRunError = run.error;
  return { id: workload.id, skills: workload.skills, files: workload.files, samples: SAMPLES[workload.id], load1: load, ours, ref, raw };
}

// ---- the chart -------------------------------------------------------------------------------

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fmt = (v, unit) => {
  if (unit === 'ms' && v >= 1000) return `${(v / 1000).toFixed(v >= 10_000 ? 0 : 1)} s`;
  return `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)} ${unit}`;
};
/** An axis tick: round numbers as they are (1 ms, 10 ms, 1 s, 250 MB). */
const tickFmt = (v, unit) =>
  unit === 'ms' && v >= 1000 ? `${Number((v / 1000).toPrecision(3))} s` : `${Number(v.toPrecision(3))} ${unit}`;

/** One panel: log-x catalog size; y log or linear; one polyline per series, values labelled. */
function panel({ x0, y0, w, h, title, unit, logY, series, sizes }) {
  const pad = { l: 58, r: 16, t: 34, b: 40 };
  const pw = w - pad.l - pad.r;
  const ph = h - pad.t - pad.b;
  const xmin = Math.log10(20);
  const xmax = Math.log10(30_000);
  const X = (size) => x0 + pad.l + ((Math.log10(size) - xmin) / (xmax - xmin)) * pw;
  const values = series.flatMap((s) => s.points.map((p) => p[1])).filter((v) => Number.isFinite(v) && v > 0);
  let ymin;
  let ymax;
  let ticks;
  if (logY) {
    ymin = 10 ** Math.floor(Math.log10(Math.min(...values)));
    ymax = 10 ** Math.ceil(Math.log10(Math.max(...values)));
    ticks = [];
    for (let v = ymin; v <= ymax; v *= 10) ticks.push(v);
  } else {
    ymin = 0;
    const top = Math.max(...values) * 1.15;
    const step = 10 ** Math.floor(Math.log10(top / 4));
    const nice = [1, 2, 5, 10].map((m) => m * step).find((s) => top / s <= 6) ?? step * 10;
    ymax = Math.ceil(top / nice) * nice;
    ticks = [];
    for (let v = 0; v <= ymax + 1e-9; v += nice) ticks.push(v);
  }
  const Y = (v) => {
    const f = logY ? (Math.log10(v) - Math.log10(ymin)) / (Math.log10(ymax) - Math.log10(ymin)) : (v - ymin) / (ymax - ymin);
    return y0 + pad.t + ph - f * ph;
  };
  // Per catalog size, the higher point's label goes above it and the lower's below: no overlap where the lines meet.
  const highest = new Map();
  for (const s of series)
    for (const [size, v] of s.points) if (Number.isFinite(v)) highest.set(size, Math.max(highest.get(size) ?? -Infinity, v));
  const parts = [];
  parts.push(`<text x="${x0 + w / 2}" y="${y0 + 20}" text-anchor="middle" class="title">${esc(title)}</text>`);
  parts.push(`<rect x="${x0 + pad.l}" y="${y0 + pad.t}" width="${pw}" height="${ph}" class="frame"/>`);
  for (const t of ticks) {
    const y = Y(t);
    parts.push(`<line x1="${x0 + pad.l}" x2="${x0 + pad.l + pw}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}" class="grid"/>`);
    parts.push(`<text x="${x0 + pad.l - 6}" y="${(y + 4).toFixed(1)}" text-anchor="end" class="tick">${esc(tickFmt(t, unit))}</text>`);
  }
  for (const size of sizes) {
    const x = X(size);
    parts.push(`<line x1="${x.toFixed(1)}" x2="${x.toFixed(1)}" y1="${y0 + pad.t}" y2="${y0 + pad.t + ph}" class="grid"/>`);
    parts.push(
      `<text x="${x.toFixed(1)}" y="${y0 + pad.t + ph + 16}" text-anchor="middle" class="tick">${size.toLocaleString('en-US')}</text>`,
    );
  }
  parts.push(
    `<text x="${x0 + pad.l + pw / 2}" y="${y0 + h - 6}" text-anchor="middle" class="axis">skills in the catalog (log scale)${logY ? '; y log scale' : ''}</text>`,
  );
  for (const s of series) {
    const pts = s.points.filter((p) => Number.isFinite(p[1]) && p[1] > 0);
    parts.push(`<polyline points="${pts.map(([size, v]) => `${X(size).toFixed(1)},${Y(v).toFixed(1)}`).join(' ')}" class="${s.cls}"/>`);
    for (const [index, [size, v]] of pts.entries()) {
      // The last point's label goes to its left, inside the frame.
      const last = index === pts.length - 1;
      parts.push(
        s.cls === 'ours'
          ? `<circle cx="${X(size).toFixed(1)}" cy="${Y(v).toFixed(1)}" r="3.5" class="ours-pt"/>`
          : `<rect x="${(X(size) - 3.5).toFixed(1)}" y="${(Y(v) - 3.5).toFixed(1)}" width="7" height="7" class="ref-pt"/>`,
      );
      parts.push(
        `<text x="${(X(size) + (last ? -6 : 5)).toFixed(1)}" y="${(Y(v) + (v === highest.get(size) ? -7 : 14)).toFixed(1)}"${last ? ' text-anchor="end"' : ''} class="val ${s.cls}-val">${esc(fmt(v, unit))}</text>`,
      );
    }
  }
  return parts.join('\n');
}

function chart(results, meta) {
  const sizes = results.map((r) => r.skills);
  const pts = (pick) => results.map((r) => [r.skills, pick(r)]);
  const W = 440;
  const H = 300;
  const panels = [
    {
      title: 'spawn → first skills/list answer',
      unit: 'ms',
      logY: true,
      series: [
        { cls: 'ours', points: pts((r) => r.ours.firstListMs) },
        { cls: 'ref', points: pts((r) => r.ref.firstListMs) },
      ],
    },
    {
      title: 'whole skills/list walk, warm',
      unit: 'ms',
      logY: true,
      series: [
        { cls: 'ours', points: pts((r) => r.ours.warmWalkMs) },
        { cls: 'ref', points: pts((r) => r.ref.warmWalkMs) },
      ],
    },
    {
      title: 'server RSS after the walks',
      unit: 'MB',
      logY: false,
      series: [
        { cls: 'ours', points: pts((r) => r.ours.rssAfterWalkMB) },
        { cls: 'ref', points: pts((r) => r.ref.rssAfterWalkMB) },
      ],
    },
    {
      title: 'skill_run (both calls) vs a direct node spawn',
      unit: 'ms',
      logY: false,
      series: [
        { cls: 'ours', points: pts((r) => r.ours.skillRunMs) },
        { cls: 'ref', points: pts((r) => r.ref.directSpawnMs) },
      ],
    },
  ];
  const TOP = 62;
  const body = panels.map((p, i) => panel({ ...p, sizes, x0: (i % 2) * W, y0: TOP + Math.floor(i / 2) * H, w: W, h: H })).join('\n');
  const height = TOP + 2 * H + 30;
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${2 * W} ${height}" width="${2 * W}" height="${height}" font-family="system-ui, -apple-system, 'Segoe UI', sans-serif">
<style>
  .title { font-size: 14px; font-weight: 600; fill: #222; }
  .tick, .axis { font-size: 11px; fill: #555; }
  .val { font-size: 10px; }
  .frame { fill: #fff; stroke: #999; }
  .grid { stroke: #e4e4e4; }
  .ours { fill: none; stroke: #1f6fd1; stroke-width: 2.2; }
  .ref { fill: none; stroke: #d9730d; stroke-width: 2.2; stroke-dasharray: 6 4; }
  .ours-pt { fill: #1f6fd1; } .ref-pt { fill: #d9730d; }
  .ours-val { fill: #1f6fd1; } .ref-val { fill: #b35c00; }
</style>
<rect width="100%" height="100%" fill="#fafafa"/>
<text x="12" y="18" class="title">Cost curves: skill-mcp (ours) against a bare SDK loadSkills server (ref)</text>
<text x="12" y="33" class="tick">${esc(meta)}</text>
<line x1="12" x2="42" y1="50" y2="50" class="ours"/><circle cx="27" cy="50" r="3.5" class="ours-pt"/><text x="48" y="54" class="tick">ours: skill-mcp (skill_run panel: skill_run on the token path, both calls)</text>
<line x1="460" x2="490" y1="50" y2="50" class="ref"/><rect x="471.5" y="46.5" width="7" height="7" class="ref-pt"/><text x="496" y="54" class="tick">ref: SDK loadSkills server (skill_run panel: node spawned directly)</text>
${body}
<text x="12" y="${height - 10}" class="tick">Medians. Generated by bench/curves.mjs; raw samples in bench/out/curves.json.</text>
</svg>
`;
}

// ---- main ------------------------------------------------------------------------------------

function metaOf({ started, node, elapsedS, results }) {
  const loads = results.flatMap((r) => r.load1);
  const cpu = cpus();
  return `${started.slice(0, 16).replace('T', ' ')} UTC, node ${node}, ${cpu.length} × ${cpu[0]?.model ?? 'cpu'}, shared machine: load average ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}; ${elapsedS.toFixed(0)} s`;
}

if (argv.includes('--redraw')) {
  // Only the chart again, from the last run's numbers.
  const run = JSON.parse(readFileSync(join(OUT, 'curves.json'), 'utf8'));
  writeFileSync(join(HERE, 'curves.svg'), chart(run.results, metaOf(run)));
  process.exit(0);
}

const refBundle = await buildRefServer();
const started = new Date();
const results = [];
for (const workload of ALL) results.push(await measure(workload, refBundle));
const run = { started: started.toISOString(), node: process.version, elapsedS: (Date.now() - started.getTime()) / 1000, results };
const meta = metaOf(run);
mkdirSync(OUT, { recursive: true });
writeFileSync(join(OUT, 'curves.json'), `${JSON.stringify(run, null, 2)}\n`);
if (results.length > 1) writeFileSync(join(HERE, 'curves.svg'), chart(results, meta));
console.log(`Cost curves, ${meta}\n`);
console.log(
  '| skills | files | spawn → first skills/list ours / ref | warm walk ours / ref (ours pages) | RSS after walk ours / ref | skill_run ours / direct spawn (overhead) |',
);
console.log('|---:|---:|---:|---:|---:|---:|');
for (const r of results) {
  const o = r.ours;
  const f = r.ref;
  const runCell =
    o.skillRunMs === undefined
      ? `– (${o.skillRunError ?? 'not measured'})`
      : `${o.skillRunMs.toFixed(1)} / ${f.directSpawnMs.toFixed(1)} ms (${o.skillRunOverheadMs >= 0 ? '+' : ''}${o.skillRunOverheadMs.toFixed(1)} ms)`;
  console.log(
    `| ${r.skills.toLocaleString('en-US')} | ${r.files.toLocaleString('en-US')} | ${fmt(o.firstListMs, 'ms')} / ${fmt(f.firstListMs, 'ms')} | ${fmt(o.warmWalkMs, 'ms')} / ${fmt(f.warmWalkMs, 'ms')} (${o.pages}) | ${fmt(o.rssAfterWalkMB, 'MB')} / ${fmt(f.rssAfterWalkMB, 'MB')} | ${runCell} |`,
  );
}
