/**
 * `node bench/isolation.mjs` (after `npm run build`): what each isolation level adds to a run.
 * For every level this machine gives — as root: namespace-uid and (SKILL_MCP_BWRAP=off)
 * uid-sandbox; as an ordinary uid (setpriv to 40100 when root): namespace and same-uid — it starts
 * the real server with the SDK client over stdio, approves one run to warm the runner, then times
 * the run call alone (phase 2 of the token path, token in hand) and, interleaved, the same script
 * spawned directly with the same node. Prints a table and writes bench/out/isolation.json.
 * Timings are wall clock on a shared machine: medians of N (default 15, BENCH_RUNS overrides).
 */
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync, rmSync, chownSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { directSpawner } from './lib.mjs';

const REPO = resolve(import.meta.dirname, '..');
const BIN = join(REPO, 'dist/skill-mcp.js');
const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const asRoot = process.getuid() === 0;
const USER = 40100;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function makeSkill() {
  const root = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-iso-'));
  chmodSync(root, 0o755);
  mkdirSync(join(root, 'probe'), { mode: 0o755 });
  writeFileSync(
    join(root, 'probe', 'SKILL.md'),
    '---\nname: probe\ndescription: bench probe\nmcp-host:\n  version: 1\n  run:\n    - script: run.js\n      interpreter: node\n---\nprobe\n',
    { mode: 0o644 },
  );
  writeFileSync(join(root, 'probe', 'run.js'), "process.stdout.write('ok')\n", { mode: 0o644 });
  return root;
}

async function measure(label, skills, env, prefix) {
  const home = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-home-'));
  // As root the front drops to its own uid and must traverse TMPDIR to reach the runner's socket.
  chmodSync(home, 0o755);
  if (prefix.length > 0) chownSync(home, USER, USER);
  const [command, ...pre] = prefix.length > 0 ? prefix : [process.execPath];
  const args = prefix.length > 0 ? [...pre, process.execPath, BIN] : [BIN];
  const transport = new StdioClientTransport({
    command,
    args,
    env: { PATH: process.env.PATH, HOME: home, TMPDIR: home, SKILLS_DIR: skills, MCP_CONFIRM_MODE: 'auto', ...env },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'bench-isolation', version: '0' }, { capabilities: {} });
  await client.connect(transport);
  const call = async (extra) =>
    (await client.callTool({ name: 'skill_run', arguments: { name: 'probe', script: 'run.js', args: [], ...extra } })).structuredContent;
  let level;
  const run = [];
  const direct = [];
  const spawner = directSpawner(prefix, join(skills, 'probe', 'run.js'));
  try {
    for (let i = 0; i <= RUNS; i++) {
      const first = await call({});
      if (typeof first?.confirmToken !== 'string') throw new Error(`no token: ${JSON.stringify(first).slice(0, 300)}`);
      level = first.preview.willRun.isolation;
      const t0 = performance.now();
      const second = await call({ confirmToken: first.confirmToken });
      const ms = performance.now() - t0;
      if (second?.exitCode !== 0) throw new Error(`run failed: ${JSON.stringify(second).slice(0, 300)}`);
      const dms = await spawner.time();
      if (i > 0) {
        // the first pair warms the runner and the page cache
        run.push(ms);
        direct.push(dms);
      }
    }
  } finally {
    spawner.close();
    await client.close();
    rmSync(home, { recursive: true, force: true });
  }
  return { label, level, runMs: median(run), directMs: median(direct), addedMs: median(run) - median(direct), runs: RUNS };
}

const skills = makeSkill();
const rows = [];
const cases = [
  ['root, bubblewrap', {}, [], asRoot],
  ['root, SKILL_MCP_BWRAP=off', { SKILL_MCP_BWRAP: 'off' }, [], asRoot],
  ['ordinary user, bubblewrap', {}, asRoot ? ['setpriv', `--reuid=${USER}`, `--regid=${USER}`, '--clear-groups'] : [], true],
  [
    'ordinary user, SKILL_MCP_BWRAP=off',
    { SKILL_MCP_BWRAP: 'off' },
    asRoot ? ['setpriv', `--reuid=${USER}`, `--regid=${USER}`, '--clear-groups'] : [],
    true,
  ],
];
try {
  for (const [label, env, prefix, enabled] of cases) {
    if (!enabled) continue;
    try {
      rows.push(await measure(label, skills, env, prefix));
    } catch (error) {
      rows.push({ label, error: error.message.slice(0, 200) });
    }
  }
} finally {
  rmSync(skills, { recursive: true, force: true });
}
const out = join(REPO, 'bench/out');
mkdirSync(out, { recursive: true });
writeFileSync(
  join(out, 'isolation.json'),
  JSON.stringify({ node: process.version, cores: (await import('node:os')).cpus().length, rows }, null, 2),
);
console.log(`skill_run (the run call, token in hand) vs the same node script spawned directly; median of ${RUNS}, ${process.version}`);
console.log('| launch | level | run call | direct spawn | added |');
console.log('|---|---|---|---|---|');
for (const r of rows) {
  if (r.error) console.log(`| ${r.label} | not measured: ${r.error} | | | |`);
  else
    console.log(
      `| ${r.label} | \`${r.level}\` | ${r.runMs.toFixed(1)} ms | ${r.directMs.toFixed(1)} ms | ${r.addedMs >= 0 ? '+' : ''}${r.addedMs.toFixed(1)} ms |`,
    );
}
