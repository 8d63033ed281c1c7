/**
 * `node bench/run-floor.mjs` (after `npm run build`): our run beside bare bubblewrap (issue 31
 * item 2). For every isolation level this machine gives (as bench/isolation.mjs picks them: as
 * root namespace-uid and, with SKILL_MCP_BWRAP=off, uid-sandbox; as an ordinary uid — setpriv to
 * 40100 when root — namespace and same-uid) it starts, side by side:
 *
 *   ours  — the real server, SDK client over stdio; timed: the run call with the token in hand
 *           (client → front → runner → sandbox → the probe script → back), one preview per sample;
 *   bare  — bubblewrap alone with a run's binds and syscall filter, the same script (bench/floor-spawner.ts,
 *           the runner's own probe and bwrapArgs; as root after a setpriv to a bench uid);
 *   chain — the runner's whole spawn command line (setpriv, bwrap, env, prlimit…) alone, spawned by
 *           the runner's own runProcess from the same small process.
 *
 * interleaved sample by sample (the order rotates each round), and prints per level the medians,
 * ours − bare (median of the per-sample differences), and the median of each phase of ours from
 * its run.exit audit line (`phases_ms`, runner/requests/phases.ts) with "front + wire" = the client's
 * time − the runner's phases. Target (issue 31): ours − bare ≤ 5 ms median at the namespace level.
 *
 *   node bench/run-floor.mjs [--runs=N] [--only=namespace,namespace-uid,...] [--prof=DIR] [--bin=A[,B…]]
 *
 * `--bin=A,B`: several builds (e.g. before and after a change), each its own server, all in the
 * same rounds beside the same bare runs: their rows compare sample by sample (each build after the
 * first also gets the median of its per-round differences to build 1).
 *
 * Writes bench/out/run-floor.json. Wall clock on a shared machine: the load average is printed.
 */
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { build } from 'esbuild';

const REPO = resolve(import.meta.dirname, '..');
const OUT = join(REPO, 'bench/out');
const argOf = (name) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const DEFAULT_RUNS = 21;
const asRoot = process.getuid() === 0;
const USER = 40100;
/** The uid bare and chain runs take as root: outside the runner's run-uid range (61184-61439). */
const BARE_UID = 40200;
export const TARGET_MS = 5;

const median = (xs) => (xs.length === 0 ? Number.NaN : [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

/** The probe prints when it started (its process's time origin) and when it ended, epoch ms. */
const PROBE = 'process.stdout.write(JSON.stringify({ start: performance.timeOrigin, end: performance.timeOrigin + performance.now() }))\n';

function makeSkill() {
  const root = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-floor-'));
  chmodSync(root, 0o755);
  mkdirSync(join(root, 'probe'), { mode: 0o755 });
  writeFileSync(
    join(root, 'probe', 'SKILL.md'),
    '---\nname: probe\ndescription: bench probe\nmcp-host:\n  version: 1\n  run:\n    - script: run.js\n      interpreter: node\n---\nprobe\n',
    { mode: 0o644 },
  );
  writeFileSync(join(root, 'probe', 'run.js'), PROBE, { mode: 0o644 });
  return root;
}

async function bundleSpawner() {
  const outfile = join(OUT, 'floor-spawner.cjs');
  mkdirSync(OUT, { recursive: true });
  // import.meta.url as the runner bundle's: the launcher is found beside it in dist/ (hardening.ts).
  await build({
    entryPoints: [join(REPO, 'bench/floor-spawner.ts')],
    outfile,
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    external: ['koffi'],
    define: { 'import.meta.url': JSON.stringify(pathToFileURL(join(REPO, 'dist/skill-mcp-runner.cjs')).href) },
    logLevel: 'warning',
  });
  return outfile;
}

/** The floor-spawner as a line protocol: one request, one JSON answer. */
function startSpawner(spawnerJs, prefix, env, config) {
  const [command, ...pre] = prefix.length > 0 ? prefix : [process.execPath];
  const args = [...(prefix.length > 0 ? [...pre, process.execPath] : []), spawnerJs, JSON.stringify(config)];
  // NODE_PATH: the bundle leaves koffi out; the launcher's probe needs it from our node_modules.
  const child = spawn(command, args, {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', NODE_PATH: join(REPO, 'node_modules'), ...env },
  });
  const waiting = [];
  let buffered = '';
  child.stdout.on('data', (chunk) => {
    buffered += chunk;
    for (let at = buffered.indexOf('\n'); at >= 0; at = buffered.indexOf('\n')) {
      const value = JSON.parse(buffered.slice(0, at));
      buffered = buffered.slice(at + 1);
      waiting.shift()?.(value);
    }
  });
  const next = () => new Promise((done) => waiting.push(done));
  return {
    ready: next(),
    time: async (kind) => {
      const answer = next();
      child.stdin.write(`${kind}\n`);
      const value = await answer;
      if (value.error) throw new Error(value.error);
      return value;
    },
    close: () => child.kill(),
  };
}

function findFile(dir, name) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isFile() && entry.name === name) return path;
    if (entry.isDirectory()) {
      const found = findFile(path, name);
      if (found) return found;
    }
  }
  return undefined;
}

/** The phases of `runId` from its run.exit line. */
function phasesOf(home, runId) {
  const log = findFile(home, 'audit.log');
  if (!log) throw new Error('no audit.log under the bench home');
  const lines = readFileSync(log, 'utf8').split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    if (!lines[i].includes(runId)) continue;
    const line = JSON.parse(lines[i]);
    if (line.event === 'run.exit' && line.run_id === runId) return line.phases_ms ?? {};
  }
  throw new Error(`no run.exit line for ${runId}`);
}

/** Clock ticks per second of /proc/<pid>/stat's CPU times (USER_HZ: 100 on Linux). */
const TICKS_PER_S = 100;

function safe(fn, fallback) {
  try {
    return fn();
  } catch {
    return fallback;
  }
}

/**
 * CPU time (user + system, ms) the server's own node processes (front, guard, runner) have used so
 * far: load on the machine stretches wall time, not this. Reaped scripts are not in it (their time
 * is the runner's cutime), so it is our share alone. Read between rounds, when no run is alive.
 */
function serverCpuMs(pid) {
  const pids = [pid];
  for (let i = 0; i < pids.length; i++) {
    for (const task of safe(() => readdirSync(`/proc/${pids[i]}/task`), [])) {
      pids.push(
        ...safe(() => readFileSync(`/proc/${pids[i]}/task/${task}/children`, 'utf8'), '')
          .split(' ')
          .filter(Boolean)
          .map(Number),
      );
    }
  }
  let ticks = 0;
  for (const p of pids) {
    const stat = safe(() => readFileSync(`/proc/${p}/stat`, 'utf8'), undefined);
    if (stat === undefined || !safe(() => readFileSync(`/proc/${p}/cmdline`, 'utf8'), '').includes('skill-mcp')) continue;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return (ticks * 1000) / TICKS_PER_S;
}

/** One server of build `bin` (SDK client over stdio) and its timed run call. */
async function startOurs(bin, skills, env, prefix, prof) {
  const home = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-home-'));
  // As root the front drops to its own uid and must traverse TMPDIR to reach the runner's socket.
  chmodSync(home, 0o755);
  if (prefix.length > 0) chownSync(home, USER, USER);
  const [command, ...pre] = prefix.length > 0 ? prefix : [process.execPath];
  const args = prefix.length > 0 ? [...pre, process.execPath, bin] : [bin];
  const transport = new StdioClientTransport({
    command,
    args,
    env: {
      PATH: process.env.PATH,
      HOME: home,
      TMPDIR: home,
      SKILLS_DIR: skills,
      MCP_CONFIRM_MODE: 'auto',
      // Under the bench home at every uid (root's default state folder is /var/lib/skill-mcp).
      SKILL_MCP_STATE_DIR: join(home, 'state'),
      ...env,
      ...(prof ? { NODE_OPTIONS: `--require ${join(REPO, 'bench/prof-preload.cjs')}`, PROF_DIR: prof } : {}),
    },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'bench-run-floor', version: '0' }, { capabilities: {} });
  await client.connect(transport);
  const call = async (extra) =>
    (await client.callTool({ name: 'skill_run', arguments: { name: 'probe', script: 'run.js', args: [], ...extra } })).structuredContent;
  return {
    cpuMs: () => serverCpuMs(transport.pid),
    async time() {
      const first = await call({});
      if (typeof first?.confirmToken !== 'string') throw new Error(`no token: ${JSON.stringify(first).slice(0, 300)}`);
      const t0 = performance.now();
      const second = await call({ confirmToken: first.confirmToken });
      const ms = performance.now() - t0;
      if (second?.exitCode !== 0) throw new Error(`run failed: ${JSON.stringify(second).slice(0, 300)}`);
      const stamp = JSON.parse(second.stdout);
      return {
        ms,
        level: first.preview.willRun.isolation,
        sandbox: first.preview.willRun.sandbox,
        life: stamp.end - stamp.start,
        phases: phasesOf(home, second.runId),
      };
    },
    async close() {
      await client.close();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** One level: every build's server, bare bubblewrap and the chain alone, interleaved round by round. */
async function measure(label, skills, env, prefix, spawnerJs, { bins, runs: RUNS, prof }) {
  const floorDir = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-floor-run-'));
  chmodSync(floorDir, 0o755);
  const workDir = join(floorDir, 'work');
  const homeDir = join(floorDir, 'home');
  mkdirSync(workDir);
  mkdirSync(homeDir);
  const owner = asRoot ? (prefix.length > 0 ? USER : BARE_UID) : process.getuid();
  chownSync(workDir, owner, owner);
  chownSync(homeDir, owner, owner);
  if (prefix.length > 0) chownSync(floorDir, USER, USER);
  const servers = [];
  const spawner = startSpawner(spawnerJs, prefix, env, {
    skillDir: join(skills, 'probe'),
    script: 'run.js',
    workDir,
    homeDir,
    ...(asRoot && prefix.length === 0 ? { uid: BARE_UID } : {}),
  });
  const samples = { bare: [], chain: [], cgroup: [], ...Object.fromEntries(bins.map((_, b) => [`ours${b}`, []])) };
  let cpuPerRun = [];
  let level;
  let info;
  let cpuStart = [];
  const loadBefore = load();
  try {
    info = await spawner.ready;
    for (const bin of bins) servers.push(await startOurs(bin, skills, env, prefix, prof));
    for (let i = 0; i <= RUNS; i++) {
      // The order rotates, so no one of them always runs right after another.
      const order = [
        ...servers.map((server, b) => [`ours${b}`, () => server.time()]),
        ['bare', () => spawner.time('bare')],
        ['chain', () => spawner.time('chain')],
        ...(info.cgroups ? [['cgroup', () => spawner.time('cgroup')]] : []),
      ];
      for (let k = 0; k < i % order.length; k++) order.push(order.shift());
      const round = {};
      for (const [name, fn] of order) round[name] = await fn();
      level = round.ours0.level;
      for (const [b, bin] of bins.entries()) {
        // A build that lost part of its sandbox (koffi not found beside a copied dist/, say) would time something else.
        if (!round[`ours${b}`].sandbox.includes('seccomp'))
          throw new Error(
            `${bin}: runs without the syscall filter here (${round[`ours${b}`].sandbox.join(', ')}); put the build where node_modules (koffi) resolves`,
          );
      }
      if (i > 0) for (const name of Object.keys(round)) samples[name].push(round[name]); // the first round warms everything
      if (i === 0) cpuStart = servers.map((server) => server.cpuMs());
    }
    cpuPerRun = servers.map((server, b) => (server.cpuMs() - cpuStart[b]) / RUNS);
  } finally {
    spawner.close();
    for (const server of servers) await server.close();
    rmSync(floorDir, { recursive: true, force: true });
  }
  const loadAfter = load();
  const bare = samples.bare;
  return bins.map((bin, b) => {
    const ours = samples[`ours${b}`];
    const phaseNames = [...new Set(ours.flatMap((s) => Object.keys(s.phases)))];
    const phases = Object.fromEntries(phaseNames.map((p) => [p, median(ours.map((s) => s.phases[p] ?? 0))]));
    // A build from before phases_ms has no runner-side figures (NaN prints as –).
    const runnerMs = ours.map((s) => (Object.keys(s.phases).length > 0 ? Object.values(s.phases).reduce((a, c) => a + c, 0) : Number.NaN));
    return {
      cpuPerRunMs: cpuPerRun[b],
      label: bins.length > 1 ? `${label}, build ${b + 1}` : label,
      bin: relative(REPO, bin),
      level,
      sandbox: ours[0]?.sandbox,
      floorLevel: info.level,
      seccomp: info.seccomp,
      runs: RUNS,
      loadBefore,
      loadAfter,
      oursMs: median(ours.map((s) => s.ms)),
      bareMs: median(bare.map((s) => s.ms)),
      chainMs: median(samples.chain.map((s) => s.ms)),
      oursOverBareMs: median(ours.map((s, i) => s.ms - bare[i].ms)),
      // Builds side by side: this one against build 1 in the same rounds (the finer comparison).
      oursOverFirstMs: b === 0 ? Number.NaN : median(ours.map((s, i) => s.ms - samples.ours0[i].ms)),
      chainOverBareMs: median(samples.chain.map((s, i) => s.ms - bare[i].ms)),
      // The chain in a fresh run cgroup (root only): what the group, its entry step and its kill add.
      cgroupChainMs: median(samples.cgroup.map((s) => s.ms)),
      cgroupOverChainMs: median(samples.cgroup.map((s, i) => s.ms - samples.chain[i].ms)),
      frontWireMs: median(ours.map((s, i) => s.ms - runnerMs[i])),
      runnerMs: median(runnerMs),
      runnerOverBareMs: median(runnerMs.map((ms, i) => ms - bare[i].ms)),
      bareBeforeScriptMs: median(bare.map((s) => s.pre)),
      scriptLifeMs: {
        ours: median(ours.map((s) => s.life)),
        bare: median(bare.map((s) => s.life)),
        chain: median(samples.chain.map((s) => s.life)),
      },
      phases,
    };
  });
}

const user = asRoot ? ['setpriv', `--reuid=${USER}`, `--regid=${USER}`, '--clear-groups'] : [];
const CASES = [
  ['root, bubblewrap', 'namespace-uid', {}, [], asRoot],
  ['root, SKILL_MCP_BWRAP=off', 'uid-sandbox', { SKILL_MCP_BWRAP: 'off' }, [], asRoot],
  ['ordinary user, bubblewrap', 'namespace', {}, user, true],
  ['ordinary user, SKILL_MCP_BWRAP=off', 'same-uid', { SKILL_MCP_BWRAP: 'off' }, user, true],
];

/**
 * Measures every level this machine gives; the rows, for the table and for bench/run.mjs.
 * `only`: level names; `prof`: a folder for every server process's CPU profile (bench/prof-preload.cjs).
 */
export async function runFloorRows({
  runs = DEFAULT_RUNS,
  only,
  prof,
  bins = [join(REPO, 'dist/skill-mcp.js')],
  log = (m) => process.stderr.write(`${m}\n`),
} = {}) {
  const spawnerJs = await bundleSpawner();
  if (prof) {
    mkdirSync(prof, { recursive: true });
    chmodSync(prof, 0o1777); // the front drops to its own uid when started as root
  }
  const skills = makeSkill();
  const rows = [];
  try {
    for (const [label, expected, env, prefix, enabled] of CASES) {
      if (!enabled || (only && !only.includes(expected))) continue;
      log(`run-floor: ${label} (load ${load()})`);
      try {
        rows.push(...(await measure(label, skills, env, prefix, spawnerJs, { bins, runs, prof })));
      } catch (error) {
        rows.push({ label, error: error.message.slice(0, 300) });
      }
    }
  } finally {
    rmSync(skills, { recursive: true, force: true });
  }
  return rows;
}

const f = (x) => (Number.isFinite(x) ? x.toFixed(1) : '–');
const signed = (x) => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${x.toFixed(1)}` : '–');

export function floorMarkdown(rows) {
  const out = [
    `Our run call (token in hand) beside bare bubblewrap, interleaved; median of ${rows.find((r) => r.runs)?.runs ?? DEFAULT_RUNS}, ${process.version}, ${cpus().length} cores. Target: ours − bare ≤ ${TARGET_MS} ms at \`namespace\`.`,
    '"runner": the sum of its phases (connection → exit line); "front + wire": the client\'s time − that.',
    '',
    '"chain in its cgroup − chain": root only, what a fresh run cgroup (made, entered by the chain\'s `sh` step, killed, removed) adds.',
    '',
    '"server CPU": user + system time of our front, guard and runner per skill_run (preview and run call), which load does not stretch.',
    '',
    '| launch | level | ours | bare | our chain alone | ours − bare | runner − bare | chain − bare | chain in its cgroup − chain | front + wire | runner | server CPU | load before → after |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const r of rows) {
    if (r.error) out.push(`| ${r.label} | not measured: ${r.error} | | | | | | | | | | | |`);
    else
      out.push(
        `| ${r.label} | \`${r.level}\` | ${f(r.oursMs)} ms | ${f(r.bareMs)} ms | ${f(r.chainMs)} ms | **${signed(r.oursOverBareMs)} ms** | ${signed(r.runnerOverBareMs)} ms | ${signed(r.chainOverBareMs)} ms | ${Number.isFinite(r.cgroupOverChainMs) ? `${signed(r.cgroupOverChainMs)} ms` : '–'} | ${f(r.frontWireMs)} ms | ${f(r.runnerMs)} ms | ${f(r.cpuPerRunMs)} ms | ${r.loadBefore} → ${r.loadAfter} |`,
      );
  }
  const measured = rows.filter((r) => !r.error);
  const against = measured.filter((r) => Number.isFinite(r.oursOverFirstMs));
  if (against.length > 0) {
    out.push(
      '',
      'Builds against build 1 (`--bin`), the median of the per-round differences of ours (the same rounds, so the load they share cancels):',
      '',
    );
    for (const r of against) out.push(`- ${r.label}: **${signed(r.oursOverFirstMs)} ms**`);
  }
  const names = [...new Set(measured.flatMap((r) => Object.keys(r.phases)))];
  out.push(
    '',
    `Phases of ours (run.exit \`phases_ms\`, medians, ms):`,
    '',
    `| level | ${names.join(' | ')} |`,
    `|---|${names.map(() => '---:').join('|')}|`,
  );
  for (const r of measured)
    out.push(
      `| ${r.label.includes('build') ? `${r.label.replace(/.*, (build \d+)$/, '$1')} ` : ''}\`${r.level}\` | ${names.map((n) => f(r.phases[n])).join(' | ')} |`,
    );
  return out.join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const prof = argOf('prof');
  const rows = await runFloorRows({
    runs: Number(argOf('runs') ?? process.env.BENCH_RUNS ?? DEFAULT_RUNS),
    only: argOf('only')?.split(','),
    prof: prof ? resolve(prof) : undefined,
    bins: (argOf('bin') ?? join(REPO, 'dist/skill-mcp.js')).split(',').map((b) => resolve(b)),
  });
  mkdirSync(OUT, { recursive: true });
  writeFileSync(
    join(OUT, 'run-floor.json'),
    JSON.stringify({ node: process.version, cores: cpus().length, date: new Date().toISOString(), rows }, null, 2),
  );
  console.log(floorMarkdown(rows));
}
