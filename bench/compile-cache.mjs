/**
 * @module Our start-up code cache against Node's own (docs/architecture.md §11): spawn → first
 * `skills/list` on the bundled skill (bench/first-list.mjs's sample, 2025 `initialize` era), for
 * each Node.js given, with four ways of loading the same bundle:
 *
 * - `vm cache`: the bin as shipped (cli/boot.ts), with the vm.Script cache that build.mjs made
 *   under that very Node.js (the checkout is built once per Node.js, into bench/out/);
 * - `no cache`: the same bin with SKILL_MCP_CODE_CACHE=off (vm.Script, nothing cached);
 * - `compile cache`: a bench-only bin that calls `module.enableCompileCache(dir)` and `require()`s
 *   the bundle; `dir` is a 0700 folder of the measuring uid, warmed by two starts first;
 * - `require`: that bin with NODE_DISABLE_COMPILE_CACHE=1 (plain require, no cache at all: what
 *   the vm.Script detour costs by itself).
 *
 * The four alternate sample by sample (a noisy moment hits all of them); run as root, the servers
 * are started as uid 65534 (a compile cache is never to be used by root). Prints medians and p90;
 * never fails on speed.
 *
 *   node bench/compile-cache.mjs [--runs=N] [--node=PATH]...   (default: this node)
 */
import { execFileSync } from 'node:child_process';
import { chownSync, cpSync, existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { once } from './first-list.mjs';
import { median, quantile } from './report.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = join(HERE, '..');
const OUT = join(HERE, 'out', 'compile-cache');
const AS = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined;
/** What build.mjs reads: the sources, the bundled skills, the notices tool; node_modules is linked. */
const SOURCES = [
  'build.mjs',
  'package.json',
  'tsconfig.json',
  'tsconfig.base.json',
  'cli',
  'server',
  'shared',
  'runner',
  'skills',
  'tools/notices.mjs',
];

/** The bench-only bin: Node's compile cache for the bundle, then the bundle by require. */
const COMPILE_CACHE_BIN = `'use strict';
const { enableCompileCache } = require('node:module');
// Node 20 has none: there this is the same as plain require.
const result = enableCompileCache ? enableCompileCache(process.env.SKILL_MCP_BENCH_CACHE_DIR) : { status: 'absent' };
if (process.env.SKILL_MCP_BENCH_SAY) process.stderr.write('compile cache: ' + JSON.stringify(result) + '\\n');
require('./skill-mcp.cjs');
`;

/** The checkout built by `node` (so its vm cache is that Node's), plus the bench bin, in bench/out/. */
function buildWith(node, tag) {
  const dir = join(OUT, tag);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const path of SOURCES) cpSync(join(REPO, path), join(dir, path), { recursive: true });
  symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'));
  execFileSync(node, ['build.mjs'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  if (!existsSync(join(dir, 'dist', 'skill-mcp.cache'))) throw new Error(`${tag}: build.mjs made no code cache`);
  writeFileSync(join(dir, 'dist', 'skill-mcp-compile-cache.js'), COMPILE_CACHE_BIN);
  const cacheDir = join(dir, 'node-compile-cache');
  mkdirSync(cacheDir, { mode: 0o700 });
  if (AS) chownSync(cacheDir, AS.uid, AS.gid);
  return { dist: join(dir, 'dist'), cacheDir, skills: join(dir, 'skills') };
}

async function measure(node, runs) {
  const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  const built = buildWith(node, version);
  const bin = join(built.dist, 'skill-mcp.js');
  const ccBin = join(built.dist, 'skill-mcp-compile-cache.js');
  const variants = {
    'vm cache (ours)': [bin, {}],
    'no cache (vm.Script)': [bin, { SKILL_MCP_CODE_CACHE: 'off' }],
    'module.enableCompileCache': [ccBin, { SKILL_MCP_BENCH_CACHE_DIR: built.cacheDir }],
    'require, no cache': [ccBin, { NODE_DISABLE_COMPILE_CACHE: '1', SKILL_MCP_BENCH_CACHE_DIR: built.cacheDir }],
  };
  // Warm-up: the compile cache is written by the first start's exit; the second start proves it is read.
  for (let i = 0; i < 2; i++)
    for (const [server, env] of Object.values(variants)) await once(node, server, built.skills, 'legacy', AS, env);
  const samples = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  const order = Object.keys(variants);
  for (let i = 0; i < runs; i++) {
    // Rotate who goes first: the first of a round inherits the previous round's exit.
    for (let j = 0; j < order.length; j++) {
      const name = order[(i + j) % order.length];
      const [server, env] = variants[name];
      samples[name].push((await once(node, server, built.skills, 'legacy', AS, env)).ms);
    }
  }
  const entries = execFileSync('find', [built.cacheDir, '-type', 'f'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  return { version, samples, compileCacheFiles: entries.length };
}

const argv = process.argv.slice(2);
const runs = Number(argv.find((a) => a.startsWith('--runs='))?.slice(7) ?? 15);
const nodes = argv.filter((a) => a.startsWith('--node=')).map((a) => a.slice(7));
const results = [];
for (const node of nodes.length > 0 ? nodes : [process.execPath]) {
  const result = await measure(node, runs);
  results.push(result);
  process.stdout.write(`\n${result.version} (${runs} interleaved spawns per variant; compile cache files: ${result.compileCacheFiles})\n`);
  for (const [name, values] of Object.entries(result.samples))
    process.stdout.write(`  ${name.padEnd(28)} median ${median(values).toFixed(1)} ms   p90 ${quantile(values, 0.9).toFixed(1)} ms\n`);
}
const load = (await readFile('/proc/loadavg', 'utf8').catch(() => '')).split(' ').slice(0, 3).join(' ');
process.stdout.write(`\nload average at the end ${load}; started as ${AS ? `uid ${AS.uid}` : `uid ${process.getuid?.()}`}\n`);
writeFileSync(join(OUT, 'results.json'), JSON.stringify({ date: new Date().toISOString(), load, results }, null, 2));
