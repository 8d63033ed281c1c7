/**
 * @module `node bench/run-catalog.mjs` (after `npm run build`; issue 31): does a run's cost depend on
 * the catalog's size? One server per workload (30 / 1,000 / 5,000 skills, bench/generate.mjs), all
 * up at once, each with its runner started and warmed; then rounds in which every server does one
 * `skill_run` on the token path (preview call, then run call, the SDK client over stdio) and a
 * small fresh process spawns the same probe script directly — each round in another order, every
 * order equally often (all permutations of the columns, in turn), so a busy moment on the shared
 * machine falls on every column alike and each column follows each other one equally often. What a
 * column follows matters: a request made right after another server's run competes with that run's
 * after-answer work (its spare walker's start, its reap) for the two cores. Rotating the columns
 * instead made the 5,000-skill server follow the 30-skill server's run in two rounds of three and
 * the reverse in none, which read as a catalog term of +12–16 ms on both calls; in balanced orders
 * it is gone (bench/RESULTS.md, "A run's cost against the catalog"). The catalog's term is
 * the difference of the medians against the 30-skill server's; the direct spawn says what the
 * script itself costs. Load averages are printed with the numbers (the machine is shared).
 *
 *   node bench/run-catalog.mjs [--rounds=N] [--only=small,huge] [--prof=DIR] [--bin=PATH]
 *
 * `--prof=DIR` profiles every process of every server (front, runner; bench/prof-preload.cjs)
 * and writes DIR/<pid>-<argv>.cpuprofile when each exits.
 * Writes bench/out/run-catalog.json. Numbers only: nothing here fails on speed.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PROBE, WORKLOADS, generate } from './generate.mjs';
import { directSpawner } from './lib.mjs';
import { median, quantile } from './report.mjs';
import { Session } from './session.mjs';

/** shared/folder-listing.ts's SETTLE_MS. */
const SETTLE_MS = 2_000;

const REPO = resolve(import.meta.dirname, '..');
const argv = process.argv.slice(2);
const opt = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
/**
 * `--bin=PATH[,PATH]`: the builds to measure (default dist/); two (say, a copy of dist/ from before
 * a change, then this one) run side by side, every server of both in the same rounds.
 */
const BINS = (opt('bin') ?? join(REPO, 'dist/skill-mcp.js')).split(',').map((b) => resolve(b));
/** Best a multiple of the number of orders (columns!: 24 for the three workloads and the direct spawn). */
const ROUNDS = Number(opt('rounds') ?? 48);
/** Preview calls alone (the runner's prepare: finding and re-deriving the skill, no spawn): cheap, so many more of them. */
const PREVIEWS = Number(opt('previews') ?? 100);
const only = opt('only')?.split(',');
const prof = opt('prof');
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

/** Clock ticks per second of /proc/<pid>/stat's CPU times (USER_HZ: 100 on Linux). */
const TICKS_PER_S = 100;

/** The pids of `pid` and everything under it now (front, guard, runner; a script that is running). */
function tree(pid) {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    for (const task of safe(() => readdirSync(`/proc/${out[i]}/task`), [])) {
      out.push(
        ...safe(() => readFileSync(`/proc/${out[i]}/task/${task}/children`, 'utf8'), '')
          .split(' ')
          .filter(Boolean)
          .map(Number),
      );
    }
  }
  return out;
}
function safe(fn, fallback) {
  try {
    return fn();
  } catch {
    return fallback;
  }
}
/**
 * CPU time (user + system, ms) the server's own processes have used: load on the machine stretches
 * wall time, not this. Scripts the runner spawned and reaped are not in it (their time is the
 * runner's cutime), so it is the front's and the runner's share alone.
 */
function cpuMs(pid) {
  let ticks = 0;
  for (const p of tree(pid)) {
    const stat = safe(() => readFileSync(`/proc/${p}/stat`, 'utf8'), undefined);
    if (stat === undefined) continue;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cmd = safe(() => readFileSync(`/proc/${p}/cmdline`, 'utf8'), '');
    // Only our node processes: a running script (or bubblewrap) is the run's, not ours.
    if (!cmd.includes('skill-mcp')) continue;
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return (ticks * 1000) / TICKS_PER_S;
}

/** Every order of `items` (all permutations), in a fixed sequence. */
function orders(items) {
  if (items.length <= 1) return [items];
  return items.flatMap((first, i) => orders([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [first, ...rest]));
}

/** One skill_run on the token path: the preview call's and the run call's times. */
async function runOnce(session) {
  const args = { name: PROBE.name, script: PROBE.script, args: [] };
  const t0 = performance.now();
  const first = await session.callTool('skill_run', args);
  const t1 = performance.now();
  const token = first.structuredContent?.confirmToken;
  if (typeof token !== 'string') throw new Error(`no confirmation token: ${JSON.stringify(first.structuredContent).slice(0, 300)}`);
  const second = await session.callTool('skill_run', { ...args, confirmToken: token });
  const t2 = performance.now();
  if (second.structuredContent?.exitCode !== 0)
    throw new Error(`the probe did not exit 0: ${JSON.stringify(second.structuredContent).slice(0, 300)}`);
  return { preview: t1 - t0, run: t2 - t1, both: t2 - t0 };
}

/**
 * Measures every build on every workload (the rounds above), and returns what the CLI prints and
 * writes: `rows` per build and workload, the direct spawn's median, the load averages.
 * `npm run bench` calls it too (bench/run.mjs, the `catalog` part).
 */
export async function measureRunCatalog({
  bins = BINS,
  ids = only,
  rounds = ROUNDS,
  previews: previewRounds = PREVIEWS,
  prof: profDir = prof,
  node = process.execPath,
  log = (m) => process.stderr.write(`${m}\n`),
} = {}) {
  const workloads = WORKLOADS.filter((w) => !ids || ids.includes(w.id));
  const state = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-runcat-'));
  if (profDir) {
    mkdirSync(profDir, { recursive: true });
    chmodSync(profDir, 0o1777); // the front drops to its own uid when started as root
  }
  const servers = [];
  let spawner;
  const loads = { start: load() };
  try {
    for (const [b, bin] of bins.entries())
      for (const workload of workloads) {
        const { root } = await generate(workload);
        const session = await Session.open({
          command: node,
          args: [bin],
          env: {
            SKILLS_DIR: root,
            SKILL_MCP_MAX_SKILLS: String(workload.skills * 2),
            MCP_CONFIRM_ELICITATION: 'off',
            SKILL_MCP_STATE_DIR: join(state, `${b}-${workload.id}`),
            // The launcher starts the runner with its own node and environment: both are profiled
            // (--cpu-prof is not allowed in NODE_OPTIONS; a preload running V8's profiler is).
            ...(profDir ? { NODE_OPTIONS: `--require ${join(REPO, 'bench/prof-preload.cjs')}`, PROF_DIR: profDir } : {}),
          },
        });
        // The catalog first (its digest pass), then the runner's first runs (its warm-up).
        await session.walkSkills();
        for (let i = 0; i < 3; i++) await runOnce(session);
        servers.push({ bin, build: b, workload, root, session, samples: [] });
        log(`${bin}: ${workload.skills} skills up, runner warm (load ${load()})`);
      }
    // A runner reuses a root's listing once the root has been still for SETTLE_MS (shared/folder-listing.ts):
    // measure the steady state of a runner that has been up a while, not its first seconds.
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS + 500));
    spawner = directSpawner([], join(servers[0].root, PROBE.name, PROBE.script));
    for (let i = 0; i < 3; i++) await spawner.time();
    const direct = [];
    loads.measuring = load();
    for (const s of servers) s.cpuBefore = cpuMs(s.session.pid);
    // Every order in turn: each column follows each other one (a run's after-answer work) equally often.
    const runOrders = orders([...servers, 'direct']);
    if (rounds % runOrders.length !== 0)
      log(`note: ${rounds} rounds is not a multiple of the ${runOrders.length} orders: some columns follow others more often`);
    for (let round = 0; round < rounds; round++) {
      for (const who of runOrders[round % runOrders.length]) {
        if (who === 'direct') direct.push(await spawner.time());
        else who.samples.push(await runOnce(who.session));
      }
      if ((round + 1) % 5 === 0) log(`  round ${round + 1}/${rounds} (load ${load()})`);
    }
    for (const s of servers) s.cpuRuns = cpuMs(s.session.pid) - s.cpuBefore;
    // The preview call alone, interleaved the same way: the catalog's term without the spawn's noise.
    const previews = servers.map(() => []);
    for (const s of servers) s.cpuBefore = cpuMs(s.session.pid);
    const previewOrders = orders(servers.map((_, i) => i));
    for (let round = 0; round < previewRounds; round++) {
      for (const i of previewOrders[round % previewOrders.length]) {
        const t0 = performance.now();
        const first = await servers[i].session.callTool('skill_run', { name: PROBE.name, script: PROBE.script, args: [] });
        previews[i].push(performance.now() - t0);
        if (typeof first.structuredContent?.confirmToken !== 'string') throw new Error('no confirmation token');
      }
    }
    for (const s of servers) s.cpuPreviews = cpuMs(s.session.pid) - s.cpuBefore;
    loads.end = load();
    const m = (s, k) => median(s.samples.map((x) => x[k]));
    const rows = servers.map((s, i) => {
      // Differences are against the smallest workload of the same build.
      const base = servers.find((o) => o.build === s.build);
      const baseAt = servers.indexOf(base);
      return {
        bin: s.bin,
        workload: s.workload.id,
        skills: s.workload.skills,
        previewMs: m(s, 'preview'),
        runMs: m(s, 'run'),
        bothMs: m(s, 'both'),
        bothP90Ms: quantile(
          s.samples.map((x) => x.both),
          0.9,
        ),
        addedOverDirectMs: m(s, 'both') - median(direct),
        cpuPerRunMs: s.cpuRuns / rounds,
        cpuPerPreviewMs: s.cpuPreviews / previewRounds,
        cpuPerRunOverSmallestMs: s.cpuRuns / rounds - base.cpuRuns / rounds,
        cpuPerPreviewOverSmallestMs: s.cpuPreviews / previewRounds - base.cpuPreviews / previewRounds,
        previewAloneMs: median(previews[i]),
        previewAloneOverSmallestMs: median(previews[i]) - median(previews[baseAt]),
        overSmallestMs: {
          preview: m(s, 'preview') - m(base, 'preview'),
          run: m(s, 'run') - m(base, 'run'),
          both: m(s, 'both') - m(base, 'both'),
        },
        // Paired by round (each round runs every server once, back to back): the catalog's term with the round's load taken out.
        pairedOverSmallestMs: {
          both: median(s.samples.map((x, r) => x.both - base.samples[r].both)),
          run: median(s.samples.map((x, r) => x.run - base.samples[r].run)),
        },
        pairedBothSamplesMs: s.samples.map((x, r) => x.both - base.samples[r].both),
      };
    });
    const out = {
      date: new Date().toISOString(),
      node: process.version,
      rounds,
      previews: previewRounds,
      loads,
      directMs: median(direct),
      rows,
      raw: servers.map((s, i) => ({ bin: s.bin, workload: s.workload.id, samples: s.samples, previews: previews[i] })),
      direct,
    };
    return out;
  } finally {
    spawner?.close();
    for (const s of servers) await s.session.close();
    rmSync(state, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const out = await measureRunCatalog();
  const { rows, loads } = out;
  const direct = out.direct;
  mkdirSync(join(REPO, 'bench/out'), { recursive: true });
  writeFileSync(join(REPO, 'bench/out/run-catalog.json'), JSON.stringify(out, null, 2));
  const f = (x) => `${x.toFixed(2)} ms`;
  const signed = (x) => `${x >= 0 ? '+' : ''}${x.toFixed(2)} ms`;
  console.log(
    `${new Date().toISOString().slice(0, 16)} UTC, node ${process.version}, ${out.rounds} skill_run rounds then ${out.previews} preview rounds, interleaved; load average (1/5/15 min) ${loads.start} at start, ${loads.measuring} when measuring began, ${loads.end} at the end`,
  );
  console.log(`direct spawn of the probe: median ${f(median(direct))}`);
  for (const [b, bin] of BINS.entries()) console.log(`build ${b + 1}: ${bin}`);
  console.log(
    "| build | skills | preview call | run call | both calls (p90) | added over a direct spawn | both calls − the 30-skill server's (preview, run) | preview alone, median of many | − the 30-skill server's | CPU of front + runner per skill_run (− 30 skills') | per preview alone (− 30 skills') |",
  );
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    console.log(
      `| ${BINS.indexOf(r.bin) + 1} | ${r.skills} | ${f(r.previewMs)} | ${f(r.runMs)} | ${f(r.bothMs)} (${f(r.bothP90Ms)}) | ${signed(r.addedOverDirectMs)} | ${signed(r.overSmallestMs.both)} (${signed(r.overSmallestMs.preview)}, ${signed(r.overSmallestMs.run)}) | ${f(r.previewAloneMs)} | ${signed(r.previewAloneOverSmallestMs)} | ${f(r.cpuPerRunMs)} (${signed(r.cpuPerRunOverSmallestMs)}) | ${f(r.cpuPerPreviewMs)} (${signed(r.cpuPerPreviewOverSmallestMs)}) |`,
    );
  }
}
