/**
 * @module `node bench/warm-start.mjs` (after `npm run build`; issue 31 item 4): spawn → a whole
 * `skills/list` walk with every digest, on a fresh server each time: ours with its digest index
 * (server/catalog/digest-index.ts), ours without one, and the SDK reference (bench/ref-server.ts,
 * `loadSkills`) on the same folder. The index is primed by two starts (the second finds the files
 * settled), then the three take turns start by start (the order rotating), so a busy moment on the
 * shared machine falls on all three. The file cache is warm for all (the bytes were read moments
 * before). Load averages printed; `--prof=DIR` writes CPU profiles of our servers.
 *
 *   node bench/warm-start.mjs [--starts=N] [--only=collection,large,huge]
 *
 * `warmStartRows` is what `npm run bench` (bench/run.mjs) puts in its table.
 */
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { COLLECTION, WORKLOADS, generate, generateCollection } from './generate.mjs';
import { buildRefServer } from './ref-bundle.mjs';
import { median, row } from './report.mjs';
import { Session } from './session.mjs';

const REPO = resolve(import.meta.dirname, '..');
/** Whom a front started as root becomes (SKILL_MCP_FRONT_UID's default): it owns its index. */
const FRONT_UID = 61183;
/** Issue 31 item 4: spawn → whole walk on the unchanged collection, with the index, over the reference's. */
export const WARM_START_TARGET = { ratio: 0.15 };
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

/**
 * CPU time (ms) the server's threads have had so far, summed from /proc/<pid>/task/N/schedstat
 * (ns): what load on the machine does not stretch, unlike wall time. Undefined without /proc.
 */
function cpuMsOf(pid) {
  try {
    let ns = 0;
    for (const task of readdirSync(`/proc/${pid}/task`))
      ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
    return ns / 1e6;
  } catch {
    return undefined;
  }
}

/** One fresh server: spawn → its whole walk (wall ms), and the CPU its process used by then. */
async function startAndWalk(server, expected) {
  const session = await Session.open(server);
  try {
    const walk = await session.walkSkills();
    const ms = performance.now() - session.startedAt;
    const cpuMs = cpuMsOf(session.pid);
    if (walk.undigested > 0 || walk.skills < expected) throw new Error(`walk incomplete: ${JSON.stringify(walk).slice(0, 200)}`);
    // Let the background pass finish and save the index before the server goes.
    if (server.env.SKILL_MCP_DIGEST_INDEX) await new Promise((r) => setTimeout(r, 300));
    return { ms, cpuMs };
  } finally {
    await session.close();
  }
}

async function folderOf(id) {
  if (id === COLLECTION.id) {
    const made = await generateCollection();
    return {
      root: made.root,
      skills: made.skills,
      what: `${made.skills} skills, ${made.files} files, ${(made.bytes / 1024 / 1024).toFixed(0)} MiB (the collection)`,
    };
  }
  const workload = WORKLOADS.find((w) => w.id === id);
  if (!workload) throw new Error(`unknown workload ${id}`);
  const { root } = await generate(workload);
  return { root, skills: workload.skills, what: `${workload.skills} skills, ${workload.files} files` };
}

/**
 * Measures `ids` (collection, large, huge): per workload the medians of the three and the ratios.
 * `bin`: our build; `node`: the node that serves; `log`: progress lines.
 */
export async function measureWarmStart({
  ids,
  starts,
  bin = join(REPO, 'dist/skill-mcp.js'),
  node = process.execPath,
  refBundle,
  log = () => undefined,
  prof,
}) {
  const ref = refBundle ?? (await buildRefServer());
  const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-index-'));
  if (process.getuid() === 0) chownSync(dir, FRONT_UID, FRONT_UID);
  const profEnv = prof ? { NODE_OPTIONS: `--require ${join(REPO, 'bench/prof-preload.cjs')}`, PROF_DIR: prof } : {};
  if (prof) {
    mkdirSync(prof, { recursive: true });
    chmodSync(prof, 0o1777);
  }
  const results = [];
  try {
    for (const id of ids) {
      const folder = await folderOf(id);
      const index = join(dir, `${id}.json`);
      const base = {
        SKILLS_DIR: folder.root,
        SKILL_MCP_MAX_SKILLS: String(Math.max(folder.skills * 2, 100)),
        SKILL_MCP_WATCH: 'off',
        SKILL_MCP_STATE_DIR: join(dir, 'state'),
      };
      const servers = {
        indexed: { command: node, args: [bin], env: { ...base, SKILL_MCP_DIGEST_INDEX: index, ...profEnv } },
        plain: { command: node, args: [bin], env: { ...base, SKILL_MCP_DIGEST_INDEX: 'off' } },
        ref: { command: node, args: [ref], env: { SKILLS_DIR: folder.root } },
      };
      await startAndWalk(servers.indexed, folder.skills);
      await new Promise((r) => setTimeout(r, 2_100)); // so the second start finds every state settled
      await startAndWalk(servers.indexed, folder.skills);
      const at = load();
      const samples = { indexed: [], plain: [], ref: [] };
      const cpu = { indexed: [], plain: [], ref: [] };
      const order = Object.keys(samples);
      for (let i = 0; i < starts; i++) {
        for (let k = 0; k < order.length; k++) {
          const who = order[(i + k) % order.length];
          const { ms, cpuMs } = await startAndWalk(servers[who], folder.skills);
          samples[who].push(ms);
          if (cpuMs !== undefined) cpu[who].push(cpuMs);
        }
        log(
          `  ${id} ${i + 1}/${starts}: index ${samples.indexed.at(-1).toFixed(0)} ms, none ${samples.plain.at(-1).toFixed(0)} ms, ref ${samples.ref.at(-1).toFixed(0)} ms`,
        );
      }
      results.push({ id, what: folder.what, load: `${at} → ${load()}`, samples, cpu, indexBytes: statSync(index).size });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return results;
}

/** Rows for bench/report.mjs: with the index against the reference (the target), and without. */
export function warmStartRows(results) {
  return results.flatMap((r) => [
    row(
      r.what,
      'spawn → whole skills/list, restart on an unchanged catalog, with the digest index',
      'ms',
      r.samples.indexed,
      r.samples.ref,
      r.id === COLLECTION.id ? WARM_START_TARGET : undefined,
      `load ${r.load}; index ${(r.indexBytes / 1024).toFixed(0)} KiB`,
    ),
    row(r.what, 'spawn → whole skills/list, restart, no digest index', 'ms', r.samples.plain, r.samples.ref),
    row(
      r.what,
      'CPU of the server process by the end of that walk, with the digest index',
      'ms',
      r.cpu.indexed,
      r.cpu.ref,
      undefined,
      'all threads, /proc schedstat',
    ),
  ]);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const argv = process.argv.slice(2);
  const opt = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const starts = Number(opt('starts') ?? 7);
  const ids = (opt('only') ?? 'collection,large,huge').split(',');
  const results = await measureWarmStart({ ids, starts, log: (line) => process.stderr.write(`${line}\n`), prof: opt('prof') });
  console.log(`${new Date().toISOString().slice(0, 16)} UTC, node ${process.version}, ${starts} fresh starts each, the order rotating`);
  console.log(
    '| workload | load average (1/5/15 min), start → end | with the index | no index | reference | index / ref | no index / ref | index / no index | CPU by then: index, none, ref | index file |',
  );
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of results) {
    const [a, b, c] = [median(r.samples.indexed), median(r.samples.plain), median(r.samples.ref)];
    const cpu = [r.cpu.indexed, r.cpu.plain, r.cpu.ref].map((s) => `${median(s)?.toFixed(0) ?? '–'}`).join(' / ');
    console.log(
      `| ${r.what} | ${r.load} | ${a.toFixed(0)} ms | ${b.toFixed(0)} ms | ${c.toFixed(0)} ms | **${(a / c).toFixed(2)}** | ${(b / c).toFixed(2)} | ${(a / b).toFixed(2)} | ${cpu} ms | ${(r.indexBytes / 1024).toFixed(0)} KiB |`,
    );
    if (process.env.BENCH_SAMPLES) console.log(JSON.stringify(r.samples));
  }
}
