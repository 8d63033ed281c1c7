/**
 * `node bench/ledger.mjs` (after `npm run build`; needs redis-server): what the Redis spent-token
 * ledger adds to `skill_run`. Starts a redis-server on a loopback port (append-only, fsync always —
 * the setting docs/hosting.md asks for), then three stacks of the real bin — a runner and an HTTP
 * front each — whose runners spend tokens in the file ledger, in Redis with `appendfsync always`,
 * and in Redis with `appendfsync everysec` (a second redis-server). The SDK client drives the token
 * path over HTTP; per call the stacks take turns, so drift on a shared machine hits all alike.
 * Times the preview (phase 1: prepare, no ledger) and the run (phase 2: the ledger's has + spend,
 * then the script) separately. Prints a table and writes bench/out/ledger.json. Medians of N
 * (default 40, BENCH_RUNS overrides); wall clock on a shared machine.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { build } from 'esbuild';

const REPO = resolve(import.meta.dirname, '..');
const BIN = join(REPO, 'dist/skill-mcp.js');
const RUNS = Number(process.env.BENCH_RUNS ?? 40);
const WARMUP = 5;
const asRoot = process.getuid() === 0;
const TOKEN = randomBytes(24).toString('hex');
const SECRET = randomBytes(32).toString('hex');
const children = [];

const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))];

function freePort() {
  return new Promise((ok) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

function waitFor(child, re) {
  return new Promise((ok, fail) => {
    let out = '';
    const on = (c) => {
      out += c;
      const m = re.exec(out);
      if (m) ok(m);
    };
    child.stdout?.on('data', on);
    child.stderr?.on('data', on);
    child.once('exit', (code) => fail(new Error(`exited ${code}: ${out}`)));
  });
}

function start(command, args, env) {
  const child = spawn(command, args, { env: { PATH: process.env.PATH, LANG: 'C.UTF-8', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return child;
}

async function redisServer(dir, fsync) {
  const port = await freePort();
  mkdirSync(dir, { recursive: true });
  const child = start('redis-server', [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    'yes',
    '--appendfsync',
    fsync,
  ]);
  await waitFor(child, /Ready to accept connections/);
  return `redis://127.0.0.1:${port}`;
}

function makeSkill(base) {
  const root = join(base, 'skills');
  mkdirSync(join(root, 'probe'), { recursive: true, mode: 0o755 });
  writeFileSync(
    join(root, 'probe', 'SKILL.md'),
    '---\nname: probe\ndescription: bench probe\nmcp-host:\n  version: 1\n  run:\n    - script: run.js\n      interpreter: node\n---\nprobe\n',
    { mode: 0o644 },
  );
  writeFileSync(join(root, 'probe', 'run.js'), "process.stdout.write('ok')\n", { mode: 0o644 });
  return root;
}

async function stack(name, base, skills, uidRange, redisUrl) {
  const dir = join(base, name);
  mkdirSync(dir, { mode: 0o755 });
  const socket = join(dir, 'sock', 'runner.sock');
  const common = { SKILLS_DIR: skills, MCP_CONFIRM_SECRET: SECRET };
  const runner = start(
    process.execPath,
    [
      BIN,
      'runner',
      '--socket',
      socket,
      '--state-dir',
      join(dir, 'state'),
      '--scratch-dir',
      join(dir, 'scratch'),
      '--uid-range',
      uidRange,
      ...(asRoot ? ['--front-uid', '61183', '--front-gid', '61183'] : []),
    ],
    { ...common, ...(redisUrl ? { SKILL_MCP_REDIS_URL: redisUrl } : {}) },
  );
  await waitFor(runner, /ready on/);
  const front = start(process.execPath, [BIN, '--http', '--port', '0'], {
    ...common,
    HOME: dir,
    TMPDIR: dir,
    SKILL_MCP_RUNNER_SOCKET: socket,
    MCP_CONFIRM_MODE: 'auto',
    SKILL_MCP_HTTP_TOKEN: TOKEN,
  });
  const [, url] = await waitFor(front, /listening on (http:\/\/\S+)/);
  const client = new Client({ name: 'bench-ledger', version: '0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }));
  return { name, client, preview: [], run: [], reused: [] };
}

async function once(s, i, record) {
  const args = { name: 'probe', script: 'run.js', args: [String(i)] };
  let t0 = performance.now();
  const preview = await s.client.callTool({ name: 'skill_run', arguments: args });
  const previewMs = performance.now() - t0;
  const token = preview.structuredContent?.confirmToken;
  if (!token) throw new Error(`${s.name}: no token: ${JSON.stringify(preview)}`);
  t0 = performance.now();
  const ran = await s.client.callTool({ name: 'skill_run', arguments: { ...args, confirmToken: token } });
  const runMs = performance.now() - t0;
  if (ran.structuredContent?.status !== 'completed') throw new Error(`${s.name}: ${JSON.stringify(ran.structuredContent)}`);
  // The same token again: MAC check and the ledger's read, then TOKEN_REUSED — no script.
  t0 = performance.now();
  const again = await s.client.callTool({ name: 'skill_run', arguments: { ...args, confirmToken: token } });
  const reusedMs = performance.now() - t0;
  if (again.structuredContent?.error?.code !== 'TOKEN_REUSED') throw new Error(`${s.name}: ${JSON.stringify(again.structuredContent)}`);
  if (record) {
    s.preview.push(previewMs);
    s.run.push(runMs);
    s.reused.push(reusedMs);
  }
}

/**
 * The spend alone, 500 times each: the file ledger's syscalls (runner/ledger/file.ts: temp file written
 * and fsynced, linked to its name, the folder fsynced) against the Redis ledger's one EVAL of
 * SET NX PX (ioredis, as the runner sends it) on each Redis.
 */
async function spendMicro(base, always, everysec) {
  const { closeSync, constants, fsyncSync, linkSync, openSync, unlinkSync, writeSync } = await import('node:fs');
  const { Redis } = await import('ioredis');
  const N = 500;
  const dir = join(base, 'micro-spent');
  mkdirSync(dir, { mode: 0o700 });
  const file = [];
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    const tmp = join(dir, `.${i}.tmp`);
    const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    writeSync(fd, `${Date.now() + 600_000}\n`);
    fsyncSync(fd);
    closeSync(fd);
    linkSync(tmp, join(dir, `m${i}`));
    unlinkSync(tmp);
    const dfd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    fsyncSync(dfd);
    closeSync(dfd);
    file.push(performance.now() - t0);
  }
  const lua = "if redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return 1 end return 0";
  const redis = async (url) => {
    const client = new Redis(url, { enableOfflineQueue: true });
    await client.ping();
    const times = [];
    for (let i = 0; i < N; i++) {
      const t0 = performance.now();
      await client.eval(lua, 1, `bench:spent:${i}:${Math.random()}`, 'v', '1200000');
      times.push(performance.now() - t0);
    }
    client.disconnect();
    return times;
  };
  // The same spend as the runner makes it since the Redis link (runner/redis/link-main.ts): a
  // frame to the link process, its EVAL, a frame back — the link's hop on top of the EVAL.
  const linked = async (url) => {
    const codecFile = join(base, 'frame-codec.mjs');
    await build({
      entryPoints: [join(REPO, 'shared/frame-codec.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      outfile: codecFile,
      logLevel: 'error',
    });
    const { FrameCodec } = await import(pathToFileURL(codecFile).href);
    const u = new URL(url);
    const settings = {
      target: { host: u.hostname, port: Number(u.port), db: 0, tls: false, display: `redis://${u.host}/0` },
      timeoutMs: 2000,
      prefix: `bench${Math.random().toString(36).slice(2)}:`,
      hostId: 'bench',
    };
    const child = spawn(process.execPath, [join(REPO, 'dist', 'skill-mcp-redis.cjs')], { stdio: ['pipe', 'pipe', 'inherit'] });
    const codec = new FrameCodec(8 * 1024 * 1024);
    const waiting = [];
    child.stdout.on('data', (chunk) => {
      for (const event of codec.push(chunk))
        if (event.ok && ('id' in event.value || event.value.event === 'ready')) waiting.shift()?.(event.value);
    });
    const next = () => new Promise((r) => waiting.push(r));
    const ready = next();
    child.stdin.write(codec.encode({ settings }));
    await ready;
    const times = [];
    for (let i = 0; i < N; i++) {
      const jti = `bench${i}x${Math.random().toString(36).slice(2, 14)}`.padEnd(22, 'x');
      const t0 = performance.now();
      const answer = next();
      child.stdin.write(codec.encode({ op: 'spend', id: i + 1, jti, exp: Date.now() + 600_000, now: Date.now() }));
      await answer;
      times.push(performance.now() - t0);
    }
    child.kill();
    return times;
  };
  const rows = [
    ['file ledger (write, fsync, link, fsync dir)', file],
    ['Redis EVAL SET NX PX, appendfsync always', await redis(always)],
    ['Redis EVAL SET NX PX, appendfsync everysec', await redis(everysec)],
    ['the same through the Redis link process, appendfsync always', await linked(always)],
    ['the same through the Redis link process, appendfsync everysec', await linked(everysec)],
  ];
  return [
    '| one spend, 500 times | median | p90 | p99 |',
    '|---|---:|---:|---:|',
    ...rows.map(
      ([name, xs]) =>
        `| ${name} | ${quantile(xs, 0.5).toFixed(3)} ms | ${quantile(xs, 0.9).toFixed(3)} ms | ${quantile(xs, 0.99).toFixed(3)} ms |`,
    ),
  ].join('\n');
}

const base = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-ledger-'));
chmodSync(base, 0o755);
try {
  const skills = makeSkill(base);
  const always = await redisServer(join(base, 'redis-always'), 'always');
  const everysec = await redisServer(join(base, 'redis-everysec'), 'everysec');
  const stacks = [
    await stack('file ledger (state dir)', base, skills, '61940-61947'),
    await stack('Redis ledger, appendfsync always', base, skills, '61948-61955', always),
    await stack('Redis ledger, appendfsync everysec', base, skills, '61956-61963', everysec),
  ];
  for (let i = 0; i < WARMUP + RUNS; i++) for (const s of stacks) await once(s, i, i >= WARMUP);
  const rows = stacks.map((s) => ({
    ledger: s.name,
    previewMedianMs: quantile(s.preview, 0.5),
    runMedianMs: quantile(s.run, 0.5),
    runP90Ms: quantile(s.run, 0.9),
    bothMedianMs: quantile(
      s.preview.map((p, i) => p + s.run[i]),
      0.5,
    ),
    reusedMedianMs: quantile(s.reused, 0.5),
  }));
  const file = rows[0];
  console.log(
    `skill_run over HTTP (token path), ${RUNS} runs each after ${WARMUP} warm-up, ${cpus().length} × ${cpus()[0]?.model}, node ${process.version}${asRoot ? ', as root' : ''}`,
  );
  const delta = (x) => `${x >= 0 ? '+' : ''}${x.toFixed(1)} ms`;
  console.log('| ledger | preview median | run median | run p90 | both calls median | run vs file ledger | reused token median |');
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const r of rows)
    console.log(
      `| ${r.ledger} | ${r.previewMedianMs.toFixed(1)} ms | ${r.runMedianMs.toFixed(1)} ms | ${r.runP90Ms.toFixed(1)} ms | ${r.bothMedianMs.toFixed(1)} ms | ${delta(r.runMedianMs - file.runMedianMs)} | ${r.reusedMedianMs.toFixed(1)} ms |`,
    );
  console.log('');
  console.log(await spendMicro(base, always, everysec));
  mkdirSync(join(REPO, 'bench/out'), { recursive: true });
  writeFileSync(
    join(REPO, 'bench/out/ledger.json'),
    JSON.stringify(
      { at: new Date().toISOString(), runs: RUNS, rows, samples: stacks.map((s) => ({ ledger: s.name, preview: s.preview, run: s.run })) },
      null,
      2,
    ),
  );
  for (const s of stacks) await s.client.close();
} finally {
  for (const child of children.reverse()) child.kill('SIGTERM');
  await new Promise((ok) => setTimeout(ok, 300));
  rmSync(base, { recursive: true, force: true });
}
