/**
 * @module A cancel while the runner is busy (issue 23): how long a `cancel` takes to reach a
 * running script while 20 `describe`s of a skill holding a 64 MiB file are in flight — each
 * describe reads and hashes every byte of that skill. The runner is the real one (`dist/`), on its
 * real socket, driven by the front's own RunnerClient (bundled here with esbuild, like our bin).
 * Measured per round, from sending the cancel: its answer (the runner has sent the kill), and the
 * script's process gone from /proc. Numbers only; never fails on speed.
 *
 *   npm run build && node bench/cancel-under-load.mjs [--rounds=10] [--describes=20]
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = join(HERE, '..');
const argv = process.argv.slice(2);
const option = (name, fallback) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const ROUNDS = Number(option('rounds', '10'));
const DESCRIBES = Number(option('describes', '20'));
const BIG_BYTES = 64 * 1024 * 1024 - 64 * 1024; // under the run-content cap with SKILL.md

async function loadClient() {
  const outfile = join(HERE, 'out', 'runner-client.mjs');
  mkdirSync(dirname(outfile), { recursive: true });
  await build({
    stdin: {
      contents: "export { RunnerClient } from './server/runner-client.ts';\nexport { configView } from './shared/config-view.ts';\n",
      resolveDir: REPO,
      loader: 'ts',
    },
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
    banner: {
      js: "import { createRequire as __benchCreateRequire } from 'node:module'; const require = __benchCreateRequire(import.meta.url);",
    },
  });
  return import(outfile);
}

function makeTree() {
  const root = mkdtempSync(join(tmpdir(), 'skill-mcp-cancel-bench-'));
  chmodSync(root, 0o755);
  const skill = (name, script, body, extra = {}) => {
    const dir = join(root, 'skills', name);
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    writeFileSync(
      join(dir, 'SKILL.md'),
      `---\nname: ${name}\ndescription: cancel bench ${name}\nmcp-host:\n  version: 1\n  run:\n    - script: ${script}\n      interpreter: node\n      timeout: 60\n---\nBench.\n`,
      { mode: 0o644 },
    );
    writeFileSync(join(dir, script), body, { mode: 0o644 });
    for (const [path, bytes] of Object.entries(extra)) writeFileSync(join(dir, path), bytes, { mode: 0o644 });
  };
  skill('waiter', 'wait.js', 'setInterval(() => {}, 1 << 30);\n');
  skill('big', 'noop.js', '', { 'data.bin': Buffer.alloc(BIG_BYTES, 7) });
  chmodSync(join(root, 'skills'), 0o755);
  return root;
}

function startRunner(root, env) {
  const args = [
    join(REPO, 'dist/skill-mcp.js'),
    'runner',
    '--socket',
    join(root, 'sock', 'runner.sock'),
    '--state-dir',
    join(root, 'state'),
    '--scratch-dir',
    join(root, 'scratch'),
  ];
  if (process.getuid?.() === 0) args.push('--uid-range', '62200-62231');
  const child = spawn(
    process.execPath,
    [...(process.env.BENCH_RUNNER_NODE_ARGS ? process.env.BENCH_RUNNER_NODE_ARGS.split(' ') : []), ...args],
    {
      env: {
        PATH: process.env.PATH,
        LANG: 'C.UTF-8',
        HOME: root,
        ...env,
        ...(process.env.SKILL_MCP_BWRAP ? { SKILL_MCP_BWRAP: process.env.SKILL_MCP_BWRAP } : {}),
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  return new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      if (stderr.includes('ready on')) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`runner exited ${code}: ${stderr}`)));
  });
}

/** The pid of the live process whose argv carries `marker`. */
function pidOf(marker) {
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      if (cmd.includes(marker) && cmd.includes('wait.js') && !cmd.includes('bwrap')) return Number(name);
    } catch {
      // gone
    }
  }
  return undefined;
}

function alive(pid) {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  if (!existsSync(join(REPO, 'dist/skill-mcp.js'))) throw new Error('run `npm run build` first');
  const { RunnerClient, configView } = await loadClient();
  const root = makeTree();
  const env = { SKILLS_DIR: join(root, 'skills'), SKILL_MCP_KILL_GRACE_MS: '500', SKILL_MCP_DRAIN_MS: '300' };
  const runner = await startRunner(root, env);
  const client = new RunnerClient(join(root, 'sock', 'runner.sock'), {
    view: () => configView(env, join(REPO, 'skills')),
    requestTimeoutMs: 120_000,
    runSlackMs: 10_000,
  });
  const answered = [];
  const gone = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const marker = `m${randomBytes(6).toString('hex')}`;
      const prepared = await client.prepare({ skill: 'waiter', script: 'wait.js', args: [marker] });
      if (!prepared.ok) throw new Error(prepared.error.message);
      const cancelId = randomBytes(16).toString('hex');
      const run = client.run(
        { skill: 'waiter', script: 'wait.js', args: [marker], confirmToken: prepared.result.confirmToken },
        { cancelId, timeoutMs: 60_000 },
      );
      let pid = pidOf(marker);
      while (pid === undefined) {
        await new Promise((r) => setTimeout(r, 10));
        pid = pidOf(marker);
      }
      const describes = Array.from({ length: DESCRIBES }, () => client.describe(['big']));
      // Let every describe get into its reading and hashing before the cancel goes out.
      await new Promise((r) => setTimeout(r, 150));
      const t0 = performance.now();
      const cancelled = client.cancel(cancelId).then(() => answered.push(performance.now() - t0));
      for (;;) {
        if (!alive(pid)) {
          gone.push(performance.now() - t0);
          break;
        }
        await new Promise((r) => setTimeout(r, 1));
      }
      await cancelled;
      await run;
      const results = await Promise.all(describes);
      if (!results.every((d) => d.ok && d.result.skills[0]?.content?.digest)) throw new Error('a describe failed');
    }
  } finally {
    runner.kill('SIGTERM');
    await new Promise((r) => runner.once('exit', r));
    rmSync(root, { recursive: true, force: true });
  }
  const fmt = (xs) => `median ${median(xs).toFixed(1)} ms, max ${Math.max(...xs).toFixed(1)} ms`;
  process.stdout.write(
    `cancel under ${DESCRIBES} describes of a 64 MiB skill, ${ROUNDS} rounds (Node ${process.version}, uid ${process.getuid?.()}):\n`,
  );
  process.stdout.write(`  cancel answered: ${fmt(answered)}\n  script gone:     ${fmt(gone)}\n`);
}

await main();
