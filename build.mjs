// Builds the one bin (docs/platform-notes.md, "Start-up code cache"):
// - dist/skill-mcp.cjs: everything, one CommonJS bundle. A bundle starts far faster than loading the
//   SDK from node_modules; the runner's, HTTP's and the tools' code stays unevaluated until a
//   command asks for it (esbuild turns each dynamic import into a lazy initializer).
// - dist/skill-mcp.js: the bin (cli/boot.ts), which loads that bundle with V8's code cache;
// - dist/skill-mcp.cache: the cache, made here by one scripted session on the bundled skills;
// - dist/skill-mcp-runner.cjs: the runner alone, no cache; dist/skill-mcp-guard.cjs: its keeper (runner-guard);
// - dist/seccomp/*.bpf: the syscall filter's programs, compiled here from the policy and the table
//   (runner/sandbox/seccomp-compile.ts), one per arch and variant; the runner loads them and never
//   runs the generator (runner/sandbox/seccomp-programs.ts, docs/isolation.md "The syscall filter");
// - dist/THIRD_PARTY_NOTICES.md: the licence of every package whose code the bundles hold, and
//   dist/sbom.cdx.json the same packages as a CycloneDX SBOM (package.json lists none: all are bundled).
// A bundle that cannot get a cache V8 accepts still builds, and says so here and at every start.
import { build } from 'esbuild';
import { bundledSbom, thirdPartyNotices } from './tools/notices.mjs';
import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The bundle's first and last bytes: a function of CommonJS's five names (the bin, cli/boot.ts, checks the head: `define`). */
const BUNDLE_HEAD = '(function (exports, require, module, __filename, __dirname) {';
const BUNDLE_TAIL = '\n})';
const common = { bundle: true, format: 'cjs', platform: 'node', target: 'node20', legalComments: 'none', logLevel: 'warning' };

await rm('dist', { recursive: true, force: true });
await writeSeccompPrograms();
const bundled = [];
bundled.push(
  await build({
    ...common,
    metafile: true,
    entryPoints: { 'skill-mcp': 'cli/main.ts' },
    outExtension: { '.js': '.cjs' },
    outdir: 'dist',
    sourcemap: 'linked',
    // Whitespace and syntax only: names stay readable in stack traces. ASCII output (non-ASCII
    // escaped, comments dropped) lets the bin decode the bundle as latin1, the fastest way.
    minifyWhitespace: true,
    minifySyntax: true,
    charset: 'ascii',
    define: { 'import.meta.url': '__skillMcpBundleUrl' },
    // The file is the very text the bin compiles: one function expression of CommonJS's five names
    // (cli/boot.ts), so the bin makes one string of it, with no wrapper joined on at every start.
    banner: { js: `${BUNDLE_HEAD}var __skillMcpBundleUrl = require('node:url').pathToFileURL(__filename).href;` },
    footer: { js: BUNDLE_TAIL },
    // koffi loads a prebuilt native addon from its own package, so it cannot be bundled; it is an
    // optionalDependency, and without it the runner skips the peer-credential check and says so
    // (runner/requests/peer-cred.ts). msgpackr's optional native extractor is not loaded from the bundle.
    external: ['koffi'],
  }),
);
// The privileged commands' own bundle (cli/runner-entry.ts): only the runner's code, loaded
// without a code cache, so a root runner runs no compiled code from a file beside it.
bundled.push(
  await build({
    ...common,
    metafile: true,
    entryPoints: { 'skill-mcp-runner': 'cli/runner-entry.ts' },
    outExtension: { '.js': '.cjs' },
    outdir: 'dist',
    sourcemap: 'linked',
    minifyWhitespace: true,
    minifySyntax: true,
    define: { 'import.meta.url': '__skillMcpBundleUrl' },
    banner: { js: "var __skillMcpBundleUrl = require('node:url').pathToFileURL(__filename).href;" },
    external: ['koffi'],
  }),
);
// The runner guard's own bundle (cli/guard-entry.ts): Node's built-ins and the guard, no cache.
bundled.push(
  await build({
    ...common,
    metafile: true,
    entryPoints: { 'skill-mcp-guard': 'cli/guard-entry.ts' },
    outExtension: { '.js': '.cjs' },
    outdir: 'dist',
    minifyWhitespace: true,
    minifySyntax: true,
  }),
);
// A run's network helper (runner/helper/main.ts): its own bundle, started by the runner under a uid
// or namespaces of its own for each run with egress; nothing of it is in the runner's bundle.
bundled.push(
  await build({
    ...common,
    metafile: true,
    entryPoints: { 'skill-mcp-helper': 'runner/helper/main.ts' },
    outExtension: { '.js': '.cjs' },
    outdir: 'dist',
    minifyWhitespace: true,
    minifySyntax: true,
    define: { 'import.meta.url': '__skillMcpBundleUrl' },
    banner: { js: "var __skillMcpBundleUrl = require('node:url').pathToFileURL(__filename).href;" },
  }),
);
// The Redis link process (runner/redis/link-main.ts): the Redis client and all it parses, out of
// the runner's own bundle (docs/architecture.md §8).
bundled.push(
  await build({
    ...common,
    metafile: true,
    entryPoints: { 'skill-mcp-redis': 'runner/redis/link-main.ts' },
    outExtension: { '.js': '.cjs' },
    outdir: 'dist',
    minifyWhitespace: true,
    minifySyntax: true,
    define: { 'import.meta.url': '__skillMcpBundleUrl' },
    banner: { js: "var __skillMcpBundleUrl = require('node:url').pathToFileURL(__filename).href;" },
  }),
);
const metafiles = bundled.map((result) => result.metafile);
await writeFile('dist/THIRD_PARTY_NOTICES.md', await thirdPartyNotices(metafiles));
await writeFile('dist/sbom.cdx.json', await bundledSbom(metafiles, JSON.parse(await readFile('package.json', 'utf8'))));
await build({
  ...common,
  entryPoints: { 'skill-mcp': 'cli/boot.ts' },
  outdir: 'dist',
  banner: { js: '#!/usr/bin/env node' },
  define: { SKILL_MCP_BUNDLE_HEAD: JSON.stringify(BUNDLE_HEAD) },
});
// The run launcher (runner/sandbox/launch.ts): its own few-kB bundle, started once per run, so it
// must not load the rest. koffi stays external, as above.
await build({
  ...common,
  entryPoints: { 'skill-mcp-launch': 'runner/sandbox/launch.ts' },
  outExtension: { '.js': '.cjs' },
  outdir: 'dist',
  external: ['koffi'],
});
// A root runner's outputs walk (runner/walker/main.ts), run as each run's uid: its own small bundle.
// It starts once per run, so no schema library: zod alone was ~85% of it and ~40 ms of CPU a start.
const walker = await build({
  ...common,
  metafile: true,
  entryPoints: { 'skill-mcp-walk': 'runner/walker/main.ts' },
  outExtension: { '.js': '.cjs' },
  outdir: 'dist',
  minifyWhitespace: true,
  minifySyntax: true,
});
const heavy = Object.keys(walker.metafile.inputs).filter((path) => path.includes('node_modules/zod/'));
if (heavy.length > 0) throw new Error(`dist/skill-mcp-walk.cjs bundles zod (${heavy[0]}): the walker must start without it`);
// The package is "type": "module"; the bin and its bundle are CommonJS (vm.Script runs scripts only).
await writeFile('dist/package.json', '{ "type": "commonjs" }\n');
await chmod('dist/skill-mcp.js', 0o755);

const bundle = await readFile('dist/skill-mcp.cjs');
const wide = bundle.findIndex((byte) => byte > 0x7f);
if (wide >= 0) throw new Error(`dist/skill-mcp.cjs has a non-ASCII byte at ${wide}: the bin decodes it as latin1`);

await makeCodeCache();

/** Compiles every syscall filter program the runner can install into dist/seccomp/ (a temporary ESM bundle of the compiler runs here). */
async function writeSeccompPrograms() {
  const dir = await mkdtemp(join(tmpdir(), 'skill-mcp-build-seccomp-'));
  try {
    const compiler = join(dir, 'seccomp-compile.mjs');
    await build({ ...common, format: 'esm', entryPoints: ['runner/sandbox/seccomp-compile.ts'], outfile: compiler });
    const { compilePrograms } = await import(pathToFileURL(compiler).href);
    await mkdir('dist/seccomp', { recursive: true });
    for (const program of compilePrograms()) await writeFile(join('dist/seccomp', program.file), program.bytes, { mode: 0o644 });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** One run of the stdio front through the first requests a client sends, then the cache it leaves. */
async function makeCodeCache() {
  const home = await mkdtemp(join(tmpdir(), 'skill-mcp-build-'));
  try {
    const session = [
      {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'build', version: '0' } },
      },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 1, method: 'skills/list', params: {} },
      { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} },
      { jsonrpc: '2.0', id: 3, method: 'prompts/list', params: {} },
      { jsonrpc: '2.0', id: 4, method: 'resources/list', params: {} },
    ];
    // NODE_OPTIONS passes through: V8 accepts a cache only under the flags it was made with.
    const nodeOptions = process.env.NODE_OPTIONS ? { NODE_OPTIONS: process.env.NODE_OPTIONS } : {};
    const env = {
      ...nodeOptions,
      PATH: process.env.PATH,
      HOME: home,
      SKILL_MCP_STATE_DIR: join(home, 'state'),
      SKILLS_DIR: 'skills',
      SKILL_MCP_WATCH: 'off',
      SKILL_MCP_CODE_CACHE_WRITE: 'dist/skill-mcp.cache',
    };
    const answered = await runSession(['dist/skill-mcp.js'], env, session);
    if (answered !== session.filter((m) => 'id' in m).length) throw new Error(`the build session got ${answered} answers`);
    // The proof: a plain start uses it and says nothing about it.
    const { stderr } = await runProcess(['dist/skill-mcp.js', '--version'], { ...nodeOptions, PATH: process.env.PATH });
    if (stderr.includes('code cache')) throw new Error(stderr.trim());
  } catch (error) {
    await rm('dist/skill-mcp.cache', { force: true });
    process.stderr.write(`build: no start-up code cache (${error.message}); the bin works without it, ~50 ms slower per start\n`);
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

/** Sends each message, ends stdin once every request is answered; resolves with the answer count. */
function runSession(args, env, messages) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const ids = new Set(messages.filter((m) => 'id' in m).map((m) => m.id));
    let buffer = '';
    let answered = 0;
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.stdout.on('data', (chunk) => {
      buffer += chunk;
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const message = JSON.parse(buffer.slice(0, nl));
        buffer = buffer.slice(nl + 1);
        if (ids.delete(message.id) && message.result) answered++;
        if (ids.size === 0) child.stdin.end();
      }
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(answered);
      else reject(new Error(`the build session exited (${signal ?? code}): ${stderr.trim()}`));
    });
    for (const message of messages) child.stdin.write(`${JSON.stringify(message)}\n`);
  });
}

function runProcess(args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve({ stderr }) : reject(new Error(`--version exited ${code}: ${stderr}`))));
  });
}
