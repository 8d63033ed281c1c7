/**
 * @module `npm run bench`: generates the workloads, bundles the reference server, measures ours
 * and the reference on the same folders, prints the table, writes bench/out/*.json and the
 * generated part of bench/RESULTS.md. Numbers only: nothing here fails on speed.
 *
 *   node bench/run.mjs [--only=small,large,huge,live,first,http,warm,floor,catalog,secrets] [--quick]
 *
 * `live` (bench/live.mjs: watch cost, write → notification, skill_search, skill_list size) runs on
 * the large and huge workloads; `--only=live` runs it alone and rewrites only its block of RESULTS.md.
 * `http` (bench/http-compare.mjs: Streamable HTTP beside the SDK reference on the 30-skill folder,
 * `resources/read` 10 KB and 1 MiB and `skills/list` at 1, 10 and 50 clients, in turns) reports
 * requests per second and p99 with issue 31's targets, with fewer and shorter slices than the
 * script's own defaults, so the whole run stays reasonable.
 * `warm` (bench/warm-start.mjs: spawn → whole skills/list on an unchanged catalog, with the digest
 * index, without, and the reference, interleaved) runs on the 553-skill collection, whose row
 * carries issue 31's target, and on the large and huge workloads.
 * `floor` (bench/run-floor.mjs: our run beside bare bubblewrap at each isolation level, issue 31
 * item 2) adds a row per level: ours − bare, median of the per-sample differences.
 * `catalog` (bench/run-catalog.mjs: 30, 1,000 and 5,000-skill servers up at once, one skill_run
 * each per round, issue 31 item 1) adds a row per larger catalog: its run − the 30-skill server's,
 * paired by round. Every workload also walks `skills/list` interleaved with the reference
 * (bench/walk.mjs, issue 31 item 3), and its first walk is set against the reference's first answer.
 */
import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { WORKLOADS, generate } from './generate.mjs';
import { BENCH_DIR as HERE, OUT, REPO, option, serverNode } from './lib.mjs';
import { liveRows } from './live.mjs';
import { firstListRows } from './first-list.mjs';
import { HTTP_TARGET, httpCompareRows, RSS_SAMPLE_MS } from './http-compare.mjs';
import { coldStart, rawSession, warmSession } from './measure.mjs';
import { readCompareRows } from './read-compare.mjs';
import { floorMarkdown, runFloorRows, TARGET_MS as FLOOR_TARGET_MS } from './run-floor.mjs';
import { measureSecretsProxy, summarize } from './secrets-proxy.mjs';
import { buildRefServer } from './ref-bundle.mjs';
import { measureWarmStart, warmStartRows } from './warm-start.mjs';
import { compareWalks } from './walk.mjs';
import { measureRunCatalog } from './run-catalog.mjs';
import { median, row, toMarkdown, toTerminal } from './report.mjs';

const argv = process.argv.slice(2);
const only = option(argv, 'only')?.split(',');
const quick = argv.includes('--quick');

/** Fresh processes per cold row, calls per warm row: sized so the whole run stays under ~5 min on 2 cores. */
const RUNS = { small: { cold: 15, warm: 20 }, large: { cold: 5, warm: 8 }, huge: { cold: 3, warm: 4 } };

/** Spawns per server for each first-list row (bundled and 30 skills × root and not × both eras). */
const FIRST_LIST_RUNS = 11;

/** Slices per server and row of the HTTP comparison, and their length in seconds (http-compare.mjs alone: 4 of 2 s). */
const HTTP_SLICES = { full: { slices: 4, sliceSeconds: 2 }, quick: { slices: 2, sliceSeconds: 0.5 } };

/** Issue 6 targets, in each row's unit; `{ratio}`: issue 9's, on ours/ref. */
const TARGETS = {
  firstList: { small: 300, huge: 2000 },
  page: 5,
  skillFile1MiB: 20,
  resourceRead1MiB: { ratio: 0.3 },
  rss: { small: 80, huge: 250 },
  peak: { small: 130 },
  skillRunAddedMs: 20,
  /** Issue 31 item 3: a warm whole walk, and the first walk after start against the ref's first answer. */
  walk: { ratio: 1 },
  /** Issue 31 item 1: a run at 5,000 skills within 1 ms of the 30-skill figure. */
  runCatalogMs: 1,
};
/** Timed interleaved walks per workload (bench/walk.mjs), each server. */
/** A 30-skill walk takes about a millisecond: 15 samples could not tell 0.97× from 1.04× (2026-12-04). */
const WALKS = { small: 61, large: 15, huge: 7 };

/**
 * Rounds of the run-against-catalog part: its per-round differences spread by ±10 ms on a shared
 * machine, so 21 rounds left a median about ±2 ms wide around a 1 ms target; 61 narrow it (~45 s).
 */
const RUN_CATALOG_ROUNDS = 61;
/** Rounds per isolation level of the run-floor part (its target is a 5 ms median of per-round differences). */
const FLOOR_RUNS = 41;

const log = (message) => process.stderr.write(`${message}\n`);

const NODE = serverNode();

/** A private copy of dist/: a rebuild in the same checkout during the run must not pull the rug. */
async function snapshotOurs() {
  const dir = join(OUT, 'dist');
  await rm(dir, { recursive: true, force: true });
  await cp(join(REPO, 'dist'), dir, { recursive: true });
  return join(dir, 'skill-mcp.js');
}

function servers(ourBin, refBundle, root, workload) {
  return {
    ours: {
      command: NODE,
      args: [ourBin],
      // A private state dir: the runner it starts must not write the real ~/.local/state/skill-mcp
      // (a test suite running beside a bench fails when that changes).
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

async function measureWorkload(workload, ourBin, refBundle) {
  const runs = quick ? { cold: 2, warm: 2 } : RUNS[workload.id];
  const t = performance.now();
  const { root, cached } = await generate(workload);
  log(
    `${workload.id}: ${workload.skills} skills / ${workload.files} files ${cached ? '(cached)' : `generated in ${Math.round(performance.now() - t)} ms`} at ${root}`,
  );
  const server = servers(ourBin, refBundle, root, workload);
  const cold = { ours: { list: [], tools: [], rss: [] }, ref: { list: [], rss: [] } };
  let firstPageUndigested = 0;
  for (let i = 0; i < runs.cold; i++) {
    // Interleaved, so a noisy moment on the machine hits both servers alike.
    const ours = await coldStart(server.ours, 'skills/list');
    cold.ours.list.push(ours.ms);
    cold.ours.rss.push(ours.memory?.rssMB);
    firstPageUndigested += ours.undigested;
    cold.ours.tools.push((await coldStart(server.ours, 'tools/list')).ms);
    const ref = await coldStart(server.ref, 'skills/list');
    cold.ref.list.push(ref.ms);
    cold.ref.rss.push(ref.memory?.rssMB);
    log(`  cold ${i + 1}/${runs.cold}: ours ${ours.ms.toFixed(0)} ms, ref ${ref.ms.toFixed(0)} ms`);
  }
  const warm = {
    ours: await warmSession(server.ours, 'ours', root, runs.warm),
    ref: await warmSession(server.ref, 'ref', root, runs.warm),
  };
  const raw = { ours: await rawSession(server.ours, 'ours', runs.warm), ref: await rawSession(server.ref, 'ref', runs.warm) };
  const compared = await readCompareRows({ workload, servers: server, times: runs.warm, targets: TARGETS });
  // Both servers up at once, walking in turns (bench/walk.mjs): a busy moment falls on both alike.
  const [walked] = await compareWalks({
    workload,
    bins: [ourBin],
    refBundle,
    walks: quick ? 2 : WALKS[workload.id],
    node: NODE,
    log: (line) => log(`  walk: ${line}`),
  });
  return { workload, runs, cold, warm, raw, firstPageUndigested, compared, walked };
}

function rowsOf({ workload, cold, warm, raw, firstPageUndigested, compared, walked }) {
  const id = workload.id;
  const w = `${workload.skills} skills`;
  const { ours, ref } = warm;
  const one = (v) => (v === undefined ? undefined : [v]);
  const digestNote = (walk) =>
    `${walk.skills} skills in ${walk.pages} pages, ${walk.undigested === 0 ? 'all with digests' : `${walk.undigested} WITHOUT digests`}`;
  const rows = [
    row(
      w,
      'spawn → first skills/list',
      'ms',
      cold.ours.list,
      cold.ref.list,
      TARGETS.firstList[id],
      firstPageUndigested === 0 ? 'first page fully digested' : 'first page NOT digested',
    ),
    row(w, 'spawn → first tools/list', 'ms', cold.ours.tools, undefined),
    row(
      w,
      'skills/list full walk, first (right after start)',
      'ms',
      ours.firstWalkMs,
      ref.firstWalkMs,
      undefined,
      `ours: ${digestNote(ours.walk)}; ref: ${ref.walk.skills} skills`,
    ),
    row(w, 'skills/list full walk, warm', 'ms', ours.walkMs, ref.walkMs),
    row(
      w,
      'skills/list full walk, warm, interleaved with the ref',
      'ms',
      walked.samples.ours,
      walked.samples.ref,
      TARGETS.walk,
      `ours ${walked.pages} pages (largest ${Math.round(walked.largestPageBytes / 1024)} KiB), ref ${walked.refPages}; load ${walked.load}`,
    ),
    row(
      w,
      'skills/list full walk right after start',
      'ms',
      ours.firstWalkMs,
      cold.ref.list,
      TARGETS.walk,
      "ref column: the ref's spawn → first skills/list",
    ),
    row(w, 'skills/list one page, warm', 'ms', ours.pageMs, ref.pageMs, TARGETS.page),
    row(w, 'skills/list first page, bare JSON-RPC client', 'ms', raw.ours.pageMs, raw.ref.pageMs, undefined, 'no SDK client parsing'),
    row(w, 'skill_list', 'ms', ours.skillListMs, undefined),
    row(w, 'skill_load', 'ms', ours.skillLoadMs, undefined),
    row(w, 'skill_file 1 MiB (binary)', 'ms', ours.skillFile1MiBMs, undefined, TARGETS.skillFile1MiB),
    row(
      w,
      'skill_file 1 MiB (binary), bare JSON-RPC client',
      'ms',
      raw.ours.skillFile1MiBMs,
      undefined,
      undefined,
      'no SDK client parsing',
    ),
    row(w, 'skill_file 4 × 1 MiB', 'ms', ours.batch4MiBMs, ref.batch4MiBMs, undefined, 'ref: 4 parallel resources/read'),
    row(w, 'resources/read 1 MiB (binary)', 'ms', ours.resourceRead1MiBMs, ref.resourceRead1MiBMs),
    row(
      w,
      'resources/read 1 MiB (binary), bare JSON-RPC client',
      'ms',
      raw.ours.resourceRead1MiBMs,
      raw.ref.resourceRead1MiBMs,
      undefined,
      'no SDK client parsing',
    ),
    row(w, 'resources/read 10 KB', 'ms', ours.resourceRead10KBMs, ref.resourceRead10KBMs),
    ...compared,
    row(w, 'RSS at first skills/list answer', 'MB', cold.ours.rss.filter(Number.isFinite), cold.ref.rss.filter(Number.isFinite)),
    row(w, 'RSS after startup and a full walk', 'MB', one(ours.startupMemory?.rssMB), one(ref.startupMemory?.rssMB), TARGETS.rss[id]),
    row(
      w,
      'peak RSS (VmHWM) after the 4 MiB batch',
      'MB',
      one(ours.afterBatchMemory?.peakMB),
      one(ref.afterBatchMemory?.peakMB),
      TARGETS.peak[id],
    ),
  ];
  if (ours.skillRunMs) {
    const added = median(ours.skillRunMs) - median(ours.directSpawnMs);
    rows.push(
      row(
        w,
        'skill_run, token path (both calls)',
        'ms',
        ours.skillRunMs,
        ours.directSpawnMs,
        undefined,
        'ref column: node spawned directly',
      ),
    );
    rows.push(row(w, 'skill_run added over a direct spawn', 'ms', [added], undefined, TARGETS.skillRunAddedMs));
  } else {
    const why = ours.skillRunError
      ? `not measured: skill_run failed: ${ours.skillRunError}`
      : 'not measured: skill_run not built yet (fills in once tools/list lists it)';
    rows.push({ workload: w, label: 'skill_run', unit: 'ms', runs: 0, note: why });
  }
  return rows;
}

/** The HTTP comparison as table rows: req/s (ours/ref at least the target) and p99 (no worse than the reference's). */
function httpRows(http) {
  const loadNote = (r) => `load ${r.load1.map((l) => l.toFixed(1)).join('→')}`;
  return http.flatMap((r) => {
    const workload = `HTTP, ${r.clients} client${r.clients === 1 ? '' : 's'}`;
    const errors = r.ours.errors + r.ref.errors > 0 ? `, errors ours/ref ${r.ours.errors}/${r.ref.errors}` : '';
    return [
      row(
        workload,
        `${r.label} req/s`,
        'req/s',
        [r.ours.rps],
        [r.ref.rps],
        { atLeast: HTTP_TARGET.rps },
        `${r.ours.requests}/${r.ref.requests} requests, ${loadNote(r)}${errors}`,
      ),
      row(workload, `${r.label} p99`, 'ms', [r.ours.p99], [r.ref.p99], { ratio: HTTP_TARGET.p99 }),
      // No target: the HTTP front keeps V8's default heap growth (server/start.ts), so its RSS under load is shown beside the reference's.
      row(
        workload,
        `${r.label}: highest RSS while the row ran`,
        'MB',
        [r.ours.rssMaxMB],
        [r.ref.rssMaxMB],
        undefined,
        `VmRSS of the process serving HTTP, sampled every ${RSS_SAMPLE_MS} ms`,
      ),
    ];
  });
}

async function machine() {
  const cpuinfo = await readFile('/proc/cpuinfo', 'utf8').catch(() => '');
  const node = execFileSync(NODE, ['--version'], { encoding: 'utf8' }).trim();
  return { nproc: cpus().length, cpu: /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? cpus()[0]?.model ?? 'unknown', node };
}

const BEGIN = '<!-- bench:begin (written by npm run bench) -->';
const END = '<!-- bench:end -->';
const LIVE_BEGIN = '<!-- bench:live:begin (written by npm run bench and node bench/run.mjs --only=live) -->';
const LIVE_END = '<!-- bench:live:end -->';

/** Replaces a generated block of RESULTS.md, keeping the hand-written notes around it. */
async function writeResults(markdown, BEGIN_MARK = BEGIN, END_MARK = END) {
  const BEGIN = BEGIN_MARK;
  const END = END_MARK;
  const path = join(HERE, 'RESULTS.md');
  const old = await readFile(path, 'utf8').catch(() => `# Benchmark results\n\n${BEGIN}\n${END}\n`);
  const start = old.indexOf(BEGIN);
  const end = old.indexOf(END);
  const next =
    start >= 0 && end > start
      ? `${old.slice(0, start)}${BEGIN}\n${markdown}\n${old.slice(end)}`
      : `${old}\n${BEGIN}\n${markdown}\n${END}\n`;
  await writeFile(path, next);
}

const started = performance.now();
await mkdir(OUT, { recursive: true });
const refBundle = await buildRefServer();
const ourBin = await snapshotOurs();
const results = [];
for (const workload of WORKLOADS.filter((w) => !only || only.includes(w.id)))
  results.push(await measureWorkload(workload, ourBin, refBundle));
const rows = results.flatMap(rowsOf);
const live = [];
if (!only || only.includes('live')) {
  for (const workload of WORKLOADS.filter((w) => w.id !== 'small')) {
    const { root } = await generate(workload);
    log(`live ${workload.id}:`);
    live.push(...(await liveRows(workload, servers(ourBin, refBundle, root, workload).ours, root, log, quick)));
  }
  rows.push(...live);
}
if (!only || only.includes('first')) {
  log('first answer: bundled and 30 skills, as root and not, both eras (bare JSON-RPC client)');
  rows.push(...(await firstListRows({ node: NODE, servers: { ours: ourBin, ref: refBundle }, runs: quick ? 2 : FIRST_LIST_RUNS, log })));
}
if (!only || only.includes('http')) {
  log('Streamable HTTP beside the reference: 30 skills, 1/10/50 clients, in turns');
  const { rows: http } = await httpCompareRows({
    ours: ourBin,
    ref: refBundle,
    node: NODE,
    ...(quick ? HTTP_SLICES.quick : HTTP_SLICES.full),
    log: (line) => log(`  ${line}`),
  });
  rows.push(...httpRows(http));
}
if (!only || only.includes('warm')) {
  log('warm start: spawn → whole skills/list on an unchanged catalog, with and without the digest index, and the reference');
  const warm = await measureWarmStart({
    ids: ['collection', 'large', 'huge'],
    starts: quick ? 2 : 7,
    bin: ourBin,
    node: NODE,
    refBundle,
    log,
  });
  rows.push(...warmStartRows(warm));
}
if (!only || only.includes('floor')) {
  log('run floor: our run beside bare bubblewrap, each isolation level (bench/run-floor.mjs)');
  const floor = await runFloorRows({ runs: quick ? 3 : FLOOR_RUNS, log });
  await writeFile(join(OUT, 'run-floor.json'), JSON.stringify({ date: new Date().toISOString(), rows: floor }, null, 2));
  log(floorMarkdown(floor));
  for (const r of floor) {
    if (r.error)
      rows.push({
        workload: 'run floor',
        label: `skill_run over bare bubblewrap (${r.label})`,
        unit: 'ms',
        runs: 0,
        note: `not measured: ${r.error}`,
      });
    else
      rows.push(
        row(
          'run floor',
          `skill_run over bare bubblewrap, \`${r.level}\``,
          'ms',
          [r.oursOverBareMs],
          undefined,
          r.level === 'namespace' ? FLOOR_TARGET_MS : undefined,
          `ours ${r.oursMs.toFixed(1)} / bare ${r.bareMs.toFixed(1)} ms; runner − bare ${r.runnerOverBareMs.toFixed(1)}, chain − bare ${r.chainOverBareMs.toFixed(1)}, front + wire ${r.frontWireMs.toFixed(1)} ms; load ${r.loadBefore}`,
        ),
      );
  }
}
if (!only || only.includes('catalog')) {
  // Issue 31 item 1: does a run's cost grow with the catalog? 30 / 1,000 / 5,000-skill servers up
  // at once, one skill_run each per round in a rotating order (bench/run-catalog.mjs).
  log('run against the catalog: skill_run on 30, 1,000 and 5,000-skill servers, in turns (bench/run-catalog.mjs)');
  const cat = await measureRunCatalog({
    bins: [ourBin],
    ids: ['small', 'large', 'huge'],
    rounds: quick ? 3 : RUN_CATALOG_ROUNDS,
    previews: quick ? 10 : 60,
    node: NODE,
    log: (line) => log(`  ${line}`),
  });
  await writeFile(join(OUT, 'run-catalog.json'), JSON.stringify(cat, null, 2));
  for (const r of cat.rows.filter((x) => x.skills !== 30)) {
    const signed = (x) => `${x >= 0 ? '+' : ''}${x.toFixed(2)}`;
    rows.push(
      row(
        `${r.skills} skills`,
        "skill_run (both calls) − the 30-skill server's, paired by round",
        'ms',
        r.pairedBothSamplesMs,
        undefined,
        r.skills === 5000 ? TARGETS.runCatalogMs : undefined,
        `${r.bothMs.toFixed(1)} ms against ${(r.bothMs - r.overSmallestMs.both).toFixed(1)}; preview alone ${signed(r.previewAloneOverSmallestMs)} ms; front + runner CPU per run ${signed(r.cpuPerRunOverSmallestMs)} ms; load ${cat.loads.measuring} → ${cat.loads.end}`,
      ),
    );
  }
}
if (!only || only.includes('secrets')) {
  // Issue 30: an HTTPS request through the injecting proxy, the same through a blind tunnel (bench/secrets-proxy.mjs).
  log('secrets: HTTPS through the injecting proxy vs a blind tunnel (python http.client, alternated)');
  const { samples } = await measureSecretsProxy(quick ? { first: 5, kept: 20 } : { first: 100, kept: 400 });
  for (const r of summarize(samples)) {
    const what = r.kind === 'first' ? 'first request (new CONNECT)' : 'request on a kept-alive connection';
    rows.push(
      row(
        'secrets',
        `HTTPS ${what}: injecting proxy`,
        'ms',
        r.inject,
        r.blind,
        undefined,
        'ref column: the same request through a blind tunnel',
      ),
    );
    rows.push(row('secrets', `HTTPS ${what}: added by injecting (paired)`, 'ms', r.added, undefined, r.target_added_ms));
  }
}
const info = await machine();
const seconds = (performance.now() - started) / 1000;
process.stdout.write(`${toTerminal(rows)}\n\n${info.nproc} × ${info.cpu}, node ${info.node}; ${seconds.toFixed(0)} s\n`);

const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const json = JSON.stringify({ date: new Date().toISOString(), machine: info, seconds, argv, rows, raw: results }, null, 2);
await writeFile(join(OUT, `results-${stamp}.json`), json);
await writeFile(join(OUT, 'latest.json'), json);
if (live.length > 0 && !quick) {
  await writeResults(
    [
      `Run ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC with \`${only ? 'node bench/run.mjs --only=live' : 'npm run bench'}\` on ${info.nproc} × ${info.cpu}, node ${info.node}.`,
      '',
      toMarkdown(live),
    ].join('\n'),
    LIVE_BEGIN,
    LIVE_END,
  );
}
if (!only && !quick) {
  const command = 'npm run bench';
  await writeResults(
    [
      `Run ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC with \`${command}\` in ${seconds.toFixed(0)} s on ${info.nproc} × ${info.cpu}, node ${info.node}.`,
      `Cold rows: a fresh server per sample (${Object.entries(RUNS)
        .map(([k, v]) => `${k}: ${v.cold}`)
        .join(', ')}; first-list rows: ${FIRST_LIST_RUNS} per server, interleaved); warm rows: repeated calls on one running server.`,
      '',
      toMarkdown(rows),
    ].join('\n'),
  );
}
