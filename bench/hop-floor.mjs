/**
 * @module `node bench/hop-floor.mjs` (after `npm run build`): what one MCP request through a stdio
 * server costs on this machine before any run is made — the floor under issue 31 item 2's "front +
 * wire" share. One SDK client over stdio, against our server and against the SDK reference
 * (bench/ref-server.ts) on the same folder, times in turn:
 *
 *   ping         — `ping` (the smallest request: the client's SDK, two pipes, the server's SDK);
 *   skill_list   — a tool call the front answers alone (ours only);
 *   preview      — `skill_run` without a token: front → runner (connect, hello, re-derivation,
 *                  token) → front, no spawn (ours only);
 *   answer share — for a whole run (`skill_run` with the token): from the first byte of the answer
 *                  reaching the client to `callTool` resolving, i.e. the client SDK's own share.
 *
 * each twice: back to back ("hot") and with a pause of `--gap` ms before each request (default 80,
 * about one run of bench/run-floor.mjs's probe), which is how requests arrive around a run: the
 * processes have gone idle, so each one is woken. Medians of `--rounds` (default 61).
 *
 *   node bench/hop-floor.mjs [--rounds=N] [--gap=MS]
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { REPO, option } from './lib.mjs';
import { buildRefServer } from './ref-bundle.mjs';
import { median } from './report.mjs';

const ROUNDS = Number(option(process.argv, 'rounds', '61'));
const GAP_MS = Number(option(process.argv, 'gap', '80'));
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function makeFolder() {
  const root = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-hop-'));
  // As root our front drops to its own uid (61183): it must read the skill and reach its runner in TMPDIR.
  chmodSync(root, 0o755);
  mkdirSync(join(root, 'skills', 'probe'), { recursive: true, mode: 0o755 });
  mkdirSync(join(root, 'home'), { mode: 0o755 });
  writeFileSync(
    join(root, 'skills', 'probe', 'SKILL.md'),
    '---\nname: probe\ndescription: bench probe\nmcp-host:\n  version: 1\n  run:\n    - script: run.js\n      interpreter: node\n---\nprobe\n',
    { mode: 0o644 },
  );
  writeFileSync(join(root, 'skills', 'probe', 'run.js'), "process.stdout.write('ok')\n", { mode: 0o644 });
  return root;
}

async function connect(args, root) {
  const home = join(root, 'home');
  const transport = new StdioClientTransport({
    command: process.execPath,
    args,
    env: { PATH: process.env.PATH, HOME: home, TMPDIR: home, SKILLS_DIR: join(root, 'skills'), MCP_CONFIRM_MODE: 'auto' },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'bench-hop-floor', version: '0' }, { capabilities: {} });
  await client.connect(transport);
  return { client, transport };
}

/** Median ms of `request`, hot (back to back) and after `GAP_MS` of quiet each time. */
async function timed(request) {
  const out = {};
  for (const [label, gap] of [
    ['hot', 0],
    ['spaced', GAP_MS],
  ]) {
    const samples = [];
    for (let i = 0; i < ROUNDS; i++) {
      if (gap > 0) await pause(gap);
      const start = performance.now();
      await request();
      samples.push(performance.now() - start);
    }
    out[label] = median(samples);
  }
  return out;
}

const root = makeFolder();
const ref = await buildRefServer();
const loadBefore = load();
const rows = [];
try {
  const theirs = await connect([ref], root);
  rows.push(['reference', 'ping', await timed(() => theirs.client.ping())]);
  await theirs.client.close();

  const ours = await connect([join(REPO, 'dist', 'skill-mcp.js')], root);
  const run = (extra) => ours.client.callTool({ name: 'skill_run', arguments: { name: 'probe', script: 'run.js', args: [], ...extra } });
  const first = (await run({})).structuredContent;
  if (typeof first?.confirmToken !== 'string') throw new Error(`no token: ${JSON.stringify(first).slice(0, 300)}`);
  rows.push(['ours', 'ping', await timed(() => ours.client.ping())]);
  rows.push(['ours', 'skill_list', await timed(() => ours.client.callTool({ name: 'skill_list', arguments: {} }))]);
  rows.push(['ours', 'preview', await timed(() => run({}))]);

  // The client's share of a run's answer: stamped by a listener put ahead of the transport's own.
  let firstByte;
  ours.transport._process.stdout.prependListener('data', () => (firstByte ??= performance.now()));
  const shares = [];
  for (let i = 0; i < ROUNDS; i++) {
    const token = (await run({})).structuredContent.confirmToken;
    await pause(GAP_MS);
    firstByte = undefined;
    const result = await run({ confirmToken: token });
    const end = performance.now();
    if (result.structuredContent?.exitCode !== 0) throw new Error(`run failed: ${JSON.stringify(result).slice(0, 300)}`);
    shares.push(end - firstByte);
  }
  rows.push(['ours', 'answer share (client SDK)', { spaced: median(shares) }]);
  await ours.client.close();
} finally {
  rmSync(root, { recursive: true, force: true });
}

const ms = (v) => (v === undefined ? '–' : `${v.toFixed(2)} ms`);
console.log(
  `${new Date().toISOString().slice(0, 16)} UTC, node ${process.version}, ${ROUNDS} rounds, gap ${GAP_MS} ms, load ${loadBefore} → ${load()}`,
);
console.log('| server | request | hot (back to back) | spaced (after a pause) |');
console.log('|---|---|---:|---:|');
for (const [server, request, t] of rows) console.log(`| ${server} | ${request} | ${ms(t.hot)} | ${ms(t.spaced)} |`);
