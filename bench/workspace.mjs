/**
 * `node bench/workspace.mjs` (after `npm run build`): what a run's workspace costs. For every
 * isolation level this machine gives (as bench/isolation.mjs picks them), the real server with the
 * SDK client over stdio times the run call (token in hand) of one node script twice, interleaved:
 * with a 1 MiB input file that it copies to a 1 MiB output file (both ways as base64 over the
 * wire), and the same script with no files. Prints a table and writes bench/out/workspace.json.
 * Wall clock on a shared machine: medians of N (default 9, BENCH_RUNS overrides).
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const REPO = resolve(import.meta.dirname, '..');
const BIN = join(REPO, 'dist/skill-mcp.js');
const RUNS = Number(process.env.BENCH_RUNS ?? 9);
const asRoot = process.getuid() === 0;
const USER = Number(process.env.BENCH_UID ?? 40100);
const MIB = 1024 * 1024;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function makeSkill() {
  const root = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-ws-'));
  chmodSync(root, 0o755);
  mkdirSync(join(root, 'probe'), { mode: 0o755 });
  writeFileSync(
    join(root, 'probe', 'SKILL.md'),
    '---\nname: probe\ndescription: bench probe\nmcp-host:\n  version: 1\n  run:\n    - script: copy.js\n      interpreter: node\n---\nprobe\n',
    { mode: 0o644 },
  );
  // With an input, a 1 MiB output; without, nothing written.
  writeFileSync(
    join(root, 'probe', 'copy.js'),
    "const fs = require('node:fs'); if (fs.existsSync('in.bin')) fs.writeFileSync('out.bin', fs.readFileSync('in.bin').reverse()); process.stdout.write('ok');\n",
    { mode: 0o644 },
  );
  return root;
}

async function measure(label, skills, env, prefix) {
  const home = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-home-'));
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
  const client = new Client({ name: 'bench-workspace', version: '0' }, { capabilities: {} });
  await client.connect(transport);
  const input = randomBytes(MIB).toString('base64');
  const call = async (extra) => client.callTool({ name: 'skill_run', arguments: { name: 'probe', script: 'copy.js', args: [], ...extra } });
  const timed = async (files) => {
    const extra = files ? { files: [{ path: 'in.bin', base64: input }] } : {};
    const first = (await call(extra)).structuredContent;
    if (typeof first?.confirmToken !== 'string') throw new Error(`no token: ${JSON.stringify(first).slice(0, 300)}`);
    const t0 = performance.now();
    const second = await call({ ...extra, confirmToken: first.confirmToken });
    const ms = performance.now() - t0;
    const value = second.structuredContent;
    if (value?.exitCode !== 0) throw new Error(`run failed: ${JSON.stringify(value).slice(0, 300)}`);
    if (files && !(value.files?.[0]?.size === MIB && second.content.some((c) => c.type === 'resource')))
      throw new Error('the 1 MiB output did not come back');
    return { ms, level: first.preview.willRun.isolation };
  };
  const withFiles = [];
  const without = [];
  let level;
  try {
    for (let i = 0; i <= RUNS; i++) {
      const a = await timed(true);
      const b = await timed(false);
      level = a.level;
      if (i > 0) {
        // the first pair warms the runner and the page cache
        withFiles.push(a.ms);
        without.push(b.ms);
      }
    }
  } finally {
    await client.close();
    rmSync(home, { recursive: true, force: true });
  }
  return {
    label,
    level,
    withFilesMs: median(withFiles),
    withoutMs: median(without),
    addedMs: median(withFiles) - median(without),
    runs: RUNS,
  };
}

const skills = makeSkill();
const user = asRoot ? ['setpriv', `--reuid=${USER}`, `--regid=${USER}`, '--clear-groups'] : [];
const cases = [
  ['root, bubblewrap', {}, [], asRoot],
  ['root, SKILL_MCP_BWRAP=off', { SKILL_MCP_BWRAP: 'off' }, [], asRoot],
  ['ordinary user, bubblewrap', {}, user, true],
  ['ordinary user, SKILL_MCP_BWRAP=off', { SKILL_MCP_BWRAP: 'off' }, user, true],
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
  join(out, 'workspace.json'),
  JSON.stringify({ node: process.version, cores: (await import('node:os')).cpus().length, rows }, null, 2),
);
console.log(
  `skill_run with a 1 MiB input and a 1 MiB output vs the same run without files (the run call, token in hand); median of ${RUNS}, ${process.version}`,
);
console.log('| launch | level | with files | without | added (target ≤ +40 ms at the namespace levels) |');
console.log('|---|---|---|---|---|');
for (const r of rows) {
  if (r.error) console.log(`| ${r.label} | not measured: ${r.error} | | | |`);
  else
    console.log(
      `| ${r.label} | \`${r.level}\` | ${r.withFilesMs.toFixed(1)} ms | ${r.withoutMs.toFixed(1)} ms | ${r.addedMs >= 0 ? '+' : ''}${r.addedMs.toFixed(1)} ms |`,
    );
}
