/**
 * @module `node bench/warm-ab.mjs DIST_A DIST_B [--n=8]` (after `npm run build`; copy `dist/` aside
 * before a change to have an A): spawn → whole `skills/list` on the 553-skill collection with a
 * primed digest index, two builds taking turns start by start (the order alternating), so a busy
 * moment on the shared machine falls on both. Prints per build the median wall time and CPU (all
 * threads, /proc/<pid>/task/N/schedstat, at the end of the walk) and the median of the per-round
 * CPU and wall ratios B/A — what load does not stretch, unlike wall times alone.
 * `DIST|--flag` passes node flags to that build's server. `--user`: as root, the servers start as uid
 * 61183 (setpriv) instead of dropping to it: an ordinary user's start, as a developer runs it.
 */
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateCollection } from './generate.mjs';
import { median } from './report.mjs';
import { Session } from './session.mjs';

/** Whom a front started as root becomes (SKILL_MCP_FRONT_UID's default): it owns its index. */
const FRONT_UID = 61183;
const builds = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const asUser = process.argv.includes('--user') && process.getuid() === 0;
const rounds = Number(process.argv.find((a) => a.startsWith('--n='))?.slice(4) ?? 8);
if (builds.length !== 2) throw new Error('usage: node bench/warm-ab.mjs DIST_A DIST_B [--n=8] [--user]');

const cpuMsOf = (pid) => {
  let ns = 0;
  for (const task of readdirSync(`/proc/${pid}/task`))
    ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
  return ns / 1e6;
};
const made = await generateCollection();
const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-ab-'));
if (process.getuid() === 0) chownSync(dir, FRONT_UID, FRONT_UID);
const server = (build, i) => {
  const [dist, ...flags] = build.split('|');
  return {
    command: asUser ? 'setpriv' : process.execPath,
    args: [
      ...(asUser ? [`--reuid=${FRONT_UID}`, `--regid=${FRONT_UID}`, '--clear-groups', '--', process.execPath] : []),
      ...flags,
      join(dist, 'skill-mcp.js'),
    ],
    env: {
      SKILLS_DIR: made.root,
      SKILL_MCP_MAX_SKILLS: String(made.skills * 2),
      SKILL_MCP_WATCH: 'off',
      SKILL_MCP_STATE_DIR: join(dir, 'state'),
      SKILL_MCP_DIGEST_INDEX: join(dir, `${i}.json`),
    },
  };
};

async function once(build, i) {
  const session = await Session.open(server(build, i));
  try {
    const walk = await session.walkSkills();
    const ms = performance.now() - session.startedAt;
    const cpuMs = cpuMsOf(session.pid);
    if (walk.undigested > 0 || walk.skills < made.skills) throw new Error(`walk incomplete: ${JSON.stringify(walk).slice(0, 200)}`);
    await new Promise((r) => setTimeout(r, 300)); // the background pass saves the index
    return { ms, cpuMs };
  } finally {
    await session.close();
  }
}

try {
  // Prime each build's index: the first start records, the second (past the settling time) settles.
  for (const [i, build] of builds.entries()) {
    await once(build, i);
    await new Promise((r) => setTimeout(r, 2_100));
    await once(build, i);
  }
  const results = builds.map(() => ({ ms: [], cpu: [] }));
  const before = loadavg()[0].toFixed(2);
  for (let k = 0; k < rounds; k++) {
    for (let j = 0; j < 2; j++) {
      const i = (k + j) % 2;
      const { ms, cpuMs } = await once(builds[i], i);
      results[i].ms.push(ms);
      results[i].cpu.push(cpuMs);
    }
  }
  console.log(
    `${new Date().toISOString().slice(0, 16)} UTC, ${made.skills} skills, ${rounds} rounds, load (1 min) ${before} → ${loadavg()[0].toFixed(2)}`,
  );
  for (const [i, build] of builds.entries())
    console.log(
      `${build}: wall ${median(results[i].ms).toFixed(0)} ms, CPU ${median(results[i].cpu).toFixed(0)} ms (${results[i].cpu.map((c) => c.toFixed(0)).join(' ')})`,
    );
  const ratio = (key) => median(results[1][key].map((b, k) => b / results[0][key][k])).toFixed(3);
  console.log(`B/A, median of per-round ratios: CPU ${ratio('cpu')}, wall ${ratio('ms')}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
