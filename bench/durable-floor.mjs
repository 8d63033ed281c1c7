/**
 * `node bench/durable-floor.mjs` (after `npm run build`): what a run must pay before any of its own
 * work, on this machine (issue 31 item 2). A run is answered only after three durable writes and
 * one MCP round trip; none of them is ours to make cheaper without giving up what they are for:
 *
 *   spend   — the token's marker: a temp file written and fsynced, hard-linked to its name, the
 *             folder fsynced (the file ledger's pattern, runner/ledger/file.ts): a spent token
 *             stays spent through a crash;
 *   accept  — the run.accept line appended and fdatasynced before the spawn (runner/audit/log.ts):
 *             no script runs without its line on disk;
 *   exit    — the run.exit line appended and fdatasynced, and the anchor renamed into place and
 *             the folder fsynced (runner/audit/anchor.ts; its temp file is staged untimed here)
 *             before the answer: no answer names a line the log could lose;
 *   beside  — the log's fdatasync on the thread pool alone, and with an anchor's temp file created,
 *             written and fsynced beside it, as the log did until 2026-12-05: the log now stages
 *             its anchor only once its own fdatasync returned (runner/audit/log.ts);
 *   ping    — an MCP `ping` through our front over stdio with the SDK client (the two stdio hops
 *             every tool call makes, without the tool).
 *
 * The file steps are done here with the same system calls, in a temp folder on the file system
 * the runner's state is on by default (os.tmpdir()), not through the runner: this is the floor of
 * the pattern, not a measurement of our code. Median of --runs (default 201) each.
 *
 *   node bench/durable-floor.mjs [--runs=N]
 */
import {
  closeSync,
  constants,
  fdatasync,
  fdatasyncSync,
  fsync,
  fsyncSync,
  linkSync,
  mkdtempSync,
  openSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const REPO = resolve(import.meta.dirname, '..');
const runs = Number(process.argv.find((a) => a.startsWith('--runs='))?.slice(7) ?? 201);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const timed = (fn) => {
  const t = performance.now();
  fn();
  return performance.now() - t;
};

function fsyncDir(dir) {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Measures the three durable steps of a run, in a fresh folder, `runs` times each in turn. */
export function durableSteps(n = runs) {
  const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-durable-'));
  const line = Buffer.from(
    `${JSON.stringify({ event: 'run.accept', run_id: 'r'.repeat(26), skill: 'probe', script: 'probe', argv_hash: 'h'.repeat(64), pad: 'x'.repeat(250) })}\n`,
  );
  const log = openSync(join(dir, 'audit.log'), constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND, 0o600);
  const out = { spend: [], accept: [], exit: [] };
  try {
    for (let i = 0; i < n; i++) {
      out.spend.push(
        timed(() => {
          const tmp = join(dir, `.spend-${i}.tmp`);
          const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
          writeSync(fd, line);
          fsyncSync(fd);
          closeSync(fd);
          linkSync(tmp, join(dir, `spent-${i}`));
          unlinkSync(tmp);
          fsyncDir(dir);
        }),
      );
      out.accept.push(
        timed(() => {
          writeSync(log, line);
          fdatasyncSync(log);
        }),
      );
      // The anchor's temp file is written and fsynced while the log is fsynced (runner/audit/log.ts),
      // so it is staged untimed here: what is timed is the part that runs in sequence, a lower bound.
      const tmp = join(dir, '.anchor.tmp');
      const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, 0o600);
      writeSync(fd, line);
      fsyncSync(fd);
      closeSync(fd);
      out.exit.push(
        timed(() => {
          writeSync(log, line);
          fdatasyncSync(log);
          renameSync(tmp, join(dir, 'anchor'));
          fsyncDir(dir);
        }),
      );
    }
  } finally {
    closeSync(log);
    rmSync(dir, { recursive: true, force: true });
  }
  return { spendMs: median(out.spend), acceptMs: median(out.accept), exitMs: median(out.exit) };
}

/**
 * The log's append + fdatasync (thread pool) alone, and with an anchor staged beside it (a temp
 * file created, written and fsynced on the pool): on one file system the two syncs share a journal
 * commit, so what waits for the log alone (a run's start, its answer) waits longer beside it.
 */
export async function syncBeside(n = runs) {
  const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-beside-'));
  const line = Buffer.from(`${JSON.stringify({ event: 'run.exit', run_id: 'r'.repeat(16), pad: 'x'.repeat(500) })}\n`);
  const log = openSync(join(dir, 'audit.log'), constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND, 0o600);
  const pool = (fn, fd) => new Promise((resolve, reject) => fn(fd, (error) => (error ? reject(error) : resolve())));
  const stage = async (i) => {
    const tmp = join(dir, `anchor.${i}.tmp`);
    const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    writeSync(fd, line);
    await pool(fsync, fd);
    closeSync(fd);
    return tmp;
  };
  const alone = [];
  const beside = [];
  try {
    for (let i = 0; i < n; i++) {
      writeSync(log, line);
      let t = performance.now();
      await pool(fdatasync, log);
      alone.push(performance.now() - t);
      renameSync(await stage(`a${i}`), join(dir, 'anchor'));
      writeSync(log, line);
      t = performance.now();
      const staged = stage(`b${i}`);
      await pool(fdatasync, log);
      beside.push(performance.now() - t);
      renameSync(await staged, join(dir, 'anchor'));
    }
  } finally {
    closeSync(log);
    rmSync(dir, { recursive: true, force: true });
  }
  return { aloneMs: median(alone), besideMs: median(beside) };
}

/** Median of `n` MCP pings through our front (dist/skill-mcp.js on the bundled skills) over stdio. */
export async function pingRoundTrip(n = runs) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(REPO, 'dist/skill-mcp.js')],
    env: { PATH: process.env.PATH, SKILLS_DIR: join(REPO, 'skills') },
    stderr: 'ignore',
  });
  const client = new Client({ name: 'durable-floor', version: '0' });
  await client.connect(transport);
  try {
    for (let i = 0; i < 20; i++) await client.ping(); // warm-up
    const samples = [];
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await client.ping();
      samples.push(performance.now() - t);
    }
    return median(samples);
  } finally {
    await client.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const before = loadavg()[0];
  const steps = durableSteps();
  const beside = await syncBeside();
  const pingMs = await pingRoundTrip();
  const total = steps.spendMs + steps.acceptMs + steps.exitMs + pingMs;
  console.log(`durable floor of a run, ${tmpdir()}, median of ${runs}, load ${before.toFixed(2)} → ${loadavg()[0].toFixed(2)}`);
  console.log(`  spend (marker, fsync, link, folder fsync) ${steps.spendMs.toFixed(2)} ms`);
  console.log(`  accept (append + fdatasync)               ${steps.acceptMs.toFixed(2)} ms`);
  console.log(`  exit (append + fdatasync, anchor rename)  ${steps.exitMs.toFixed(2)} ms`);
  console.log(`  the log's fdatasync (pool) alone         ${beside.aloneMs.toFixed(2)} ms (not in the sum)`);
  console.log(`  … with an anchor's fsync beside it       ${beside.besideMs.toFixed(2)} ms (not in the sum)`);
  console.log(`  MCP ping over stdio through our front     ${pingMs.toFixed(2)} ms`);
  console.log(`  sum                                       ${total.toFixed(2)} ms`);
}
