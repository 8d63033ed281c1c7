/**
 * `node bench/data-folder.mjs` (after `npm run build`): what a skill's data folder costs a run
 * (docs/isolation.md, "Data folders"). At the bubblewrap levels this machine gives (an ordinary user:
 * `namespace`; root: `namespace-uid`), the real server with the SDK client over stdio times the run
 * call (token in hand) of one node script that writes nothing, interleaved: declared `data: true`
 * with an empty folder, and the same script without `data:`. Then 10,000 files are put in the
 * folder and the data run is timed again: the one part that grows is the after-run lstat walk.
 * Prints a table and writes bench/out/data-folder.json. Medians of N (default 9, BENCH_RUNS).
 */
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const REPO = resolve(import.meta.dirname, '..');
const BIN = join(REPO, 'dist/skill-mcp.js');
const RUNS = Number(process.env.BENCH_RUNS ?? 9);
const FILES = Number(process.env.BENCH_DATA_FILES ?? 10_000);
const asRoot = process.getuid() === 0;
const USER = Number(process.env.BENCH_UID ?? 40100);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function makeSkills() {
  const root = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-data-'));
  chmodSync(root, 0o755);
  for (const [name, data] of [
    ['plain', ''],
    ['kept', '\n  data: true'],
  ]) {
    mkdirSync(join(root, name), { mode: 0o755 });
    writeFileSync(
      join(root, name, 'SKILL.md'),
      `---\nname: ${name}\ndescription: bench probe\nmcp-host:\n  version: 1\n  run:\n    - script: probe.js\n      interpreter: node${data}\n---\nprobe\n`,
      { mode: 0o644 },
    );
    writeFileSync(join(root, name, 'probe.js'), "process.stdout.write('ok');\n", { mode: 0o644 });
  }
  return root;
}

async function measure(label, skills, env, prefix) {
  const home = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-home-'));
  chmodSync(home, 0o755);
  if (prefix.length > 0) chownSync(home, USER, USER);
  const state = join(home, 'state');
  const [command, ...pre] = prefix.length > 0 ? prefix : [process.execPath];
  const args = prefix.length > 0 ? [...pre, process.execPath, BIN] : [BIN];
  const transport = new StdioClientTransport({
    command,
    args,
    env: {
      PATH: process.env.PATH,
      HOME: home,
      TMPDIR: home,
      SKILLS_DIR: skills,
      MCP_CONFIRM_MODE: 'auto',
      SKILL_MCP_STATE_DIR: state,
      SKILL_MCP_DATA_FILES: String(FILES * 2),
      ...env,
    },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'bench-data', version: '0' }, { capabilities: {} });
  await client.connect(transport);
  const call = async (name, extra) => client.callTool({ name: 'skill_run', arguments: { name, script: 'probe.js', args: [], ...extra } });
  const timed = async (name) => {
    const first = (await call(name, {})).structuredContent;
    if (typeof first?.confirmToken !== 'string') throw new Error(`no token: ${JSON.stringify(first).slice(0, 300)}`);
    const t0 = performance.now();
    const second = await call(name, { confirmToken: first.confirmToken });
    const ms = performance.now() - t0;
    const value = second.structuredContent;
    if (value?.exitCode !== 0 || value?.dataFull) throw new Error(`run failed: ${JSON.stringify(value).slice(0, 300)}`);
    return { ms, level: first.preview.willRun.isolation, entries: value.data?.entries };
  };
  const withData = [];
  const without = [];
  const full = [];
  let level;
  let entries;
  try {
    for (let i = 0; i <= RUNS; i++) {
      const a = await timed('kept');
      const b = await timed('plain');
      level = a.level;
      // the first pair warms the runner and the page cache
      if (i > 0) {
        withData.push(a.ms);
        without.push(b.ms);
      }
    }
    const folder = join(state, 'data', 'kept', 'anyone');
    for (let i = 0; i < FILES; i++) writeFileSync(join(folder, `f${i}`), 'x');
    for (let i = 0; i <= RUNS; i++) {
      const a = await timed('kept');
      entries = a.entries;
      if (i > 0) full.push(a.ms);
    }
  } finally {
    await client.close();
    rmSync(home, { recursive: true, force: true });
  }
  return {
    label,
    level,
    withoutMs: median(without),
    emptyMs: median(withData),
    addedMs: median(withData) - median(without),
    filledMs: median(full),
    filledEntries: entries,
    perThousandMs: ((median(full) - median(withData)) * 1000) / FILES,
    runs: RUNS,
  };
}

const skills = makeSkills();
const user = asRoot ? ['setpriv', `--reuid=${USER}`, `--regid=${USER}`, '--clear-groups'] : [];
const cases = [
  ['ordinary user, bubblewrap', {}, user, true],
  ['root, bubblewrap', {}, [], asRoot],
];
const rows = [];
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
  join(out, 'data-folder.json'),
  JSON.stringify({ node: process.version, cores: (await import('node:os')).cpus().length, files: FILES, rows }, null, 2),
);
console.log(
  `skill_run of a script that writes nothing: without data:, with an empty data folder, and with ${FILES} files in it (the run call, token in hand); median of ${RUNS}, ${process.version}`,
);
console.log(`| launch | level | without | empty folder | added (target ≤ +5 ms) | ${FILES} files | per 1,000 files |`);
console.log('|---|---|---|---|---|---|---|');
for (const r of rows) {
  if (r.error) console.log(`| ${r.label} | not measured: ${r.error} | | | | | |`);
  else
    console.log(
      `| ${r.label} | \`${r.level}\` | ${r.withoutMs.toFixed(1)} ms | ${r.emptyMs.toFixed(1)} ms | ${r.addedMs >= 0 ? '+' : ''}${r.addedMs.toFixed(1)} ms | ${r.filledMs.toFixed(1)} ms (${r.filledEntries} entries) | +${r.perThousandMs.toFixed(2)} ms |`,
    );
}
