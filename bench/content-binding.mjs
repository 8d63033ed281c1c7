/**
 * `node bench/content-binding.mjs` (after `npm run build`): what binding an approval to the code
 * costs (issue #12, docs/architecture.md §7). Two skills: a typical one (the bundled
 * `commit-message`: 3 files, 24 KB) and the largest bench skill (`bench-probe` of bench/generate.mjs:
 * 7 files, 4.2 MB — four 1 MiB files).
 *
 * 1. The functions themselves, in process (bundled from the sources with esbuild): reading and
 *    hashing a skill in place (what the runner adds to every prepare, and the front adds again to
 *    check its runner) and copying + hashing it into a run folder, then removing it (what the
 *    runner adds to every run).
 * 2. End to end, the real bin over stdio with the SDK client (token path, MCP_CONFIRM_MODE=auto):
 *    the preview call and the run call, interleaved with the same calls on the build of
 *    `BENCH_BASE` (default: the commit before content binding), built into a temp folder from
 *    `git archive`. The difference of medians is the cost a client sees.
 *
 * Medians and p90 of N (BENCH_RUNS, default 30) after warm-up; wall clock on a shared machine.
 * Prints a table and writes bench/out/content-binding.json. Not a test: nothing fails on speed.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { PROBE, WORKLOADS, generate } from './generate.mjs';

const REPO = resolve(import.meta.dirname, '..');
const RUNS = Number(process.env.BENCH_RUNS ?? 30);
const BASE = process.env.BENCH_BASE ?? '2336876';
const work = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-content-'));
chmodSync(work, 0o755);

const sorted = (xs) => [...xs].sort((a, b) => a - b);
const median = (xs) => sorted(xs)[Math.floor(xs.length / 2)];
const p90 = (xs) => sorted(xs)[Math.min(xs.length - 1, Math.floor(xs.length * 0.9))];
const ms = (x) => `${x.toFixed(2)} ms`;

/** The two skills, copied side by side into one world-readable root (run uids must read them). */
async function skills() {
  const { root: benchRoot } = await generate(WORKLOADS[0]);
  const root = join(work, 'skills');
  cpSync(join(REPO, 'skills', 'commit-message'), join(root, 'commit-message'), { recursive: true });
  cpSync(join(benchRoot, PROBE.name), join(root, PROBE.name), { recursive: true });
  execFileSync('chmod', ['-R', 'a+rX', work]);
  return root;
}

async function functions(root) {
  const entry = join(work, 'entry.ts');
  writeFileSync(
    entry,
    `export { readSkillContent } from ${JSON.stringify(join(REPO, 'shared/skill-content.ts'))};\nexport { RunCopy } from ${JSON.stringify(join(REPO, 'runner/workspace/run-copy.ts'))};\n`,
  );
  const out = join(work, 'entry.mjs');
  const banner = "import { createRequire as __benchRequire } from 'node:module'; const require = __benchRequire(import.meta.url);";
  await build({
    entryPoints: [entry],
    outfile: out,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
    banner: { js: banner },
  });
  const { readSkillContent, RunCopy } = await import(out);
  const limits = { maxFiles: 2000, maxDirs: 2000, maxBytes: 64 * 1024 * 1024 };
  const ctx = { limits: { maxFilesPerSkill: 2000, maxDirsPerSkill: 2000 } };
  const scratch = join(work, 'scratch');
  mkdirSync(scratch, { mode: 0o711 });
  const rows = [];
  for (const name of ['commit-message', PROBE.name]) {
    const skill = { name, realDir: join(root, name) };
    const inPlace = [];
    const copied = [];
    let content;
    for (let i = 0; i < RUNS + 5; i++) {
      let t = performance.now();
      const read = await readSkillContent(name, skill.realDir, limits);
      const a = performance.now() - t;
      content = read.content;
      t = performance.now();
      const copy = new RunCopy(scratch, i.toString(16).padStart(16, '0'));
      const made = await copy.source(ctx).read(skill);
      copy.remove();
      const b = performance.now() - t;
      if (!read.ok || !made.ok || made.content.digest !== read.content.digest)
        throw new Error(`${name}: the copy's digest differs from the in-place one`);
      if (i >= 5) {
        inPlace.push(a);
        copied.push(b);
      }
    }
    rows.push({
      skill: name,
      files: content.files.length,
      bytes: content.bytes,
      inPlace: { median: median(inPlace), p90: p90(inPlace) },
      copy: { median: median(copied), p90: p90(copied) },
    });
  }
  return rows;
}

/** `BENCH_BASE` built into a temp folder (its own dist), node_modules shared. */
function buildBase() {
  const dir = join(work, 'base');
  mkdirSync(dir);
  execFileSync('sh', ['-c', `git -C "$1" archive "$2" | tar -x -C "$3"`, 'sh', REPO, BASE, dir]);
  symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'));
  execFileSync(process.execPath, ['build.mjs'], { cwd: dir });
  return join(dir, 'dist/skill-mcp.js');
}

async function connect(bin, root, label) {
  const home = join(work, `home-${label}`);
  mkdirSync(home, { mode: 0o755 });
  chmodSync(home, 0o755);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [bin],
    env: {
      PATH: process.env.PATH,
      HOME: home,
      TMPDIR: home,
      SKILL_MCP_STATE_DIR: join(home, 'state'),
      SKILLS_DIR: root,
      MCP_CONFIRM_MODE: 'auto',
      ...(process.env.SKILL_MCP_BWRAP ? { SKILL_MCP_BWRAP: process.env.SKILL_MCP_BWRAP } : {}),
    },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'bench-content', version: '0' }, { capabilities: {} });
  await client.connect(transport);
  return client;
}

async function endToEnd(root) {
  const bins = { now: join(REPO, 'dist/skill-mcp.js'), base: buildBase() };
  const clients = { now: await connect(bins.now, root, 'now'), base: await connect(bins.base, root, 'base') };
  const scripts = {
    'commit-message': { script: 'scripts/check-message.js', args: ['feat: bench'] },
    [PROBE.name]: { script: PROBE.script, args: [] },
  };
  const samples = {};
  try {
    for (let i = 0; i < RUNS + 3; i++) {
      for (const skill of Object.keys(scripts)) {
        for (const version of ['base', 'now']) {
          const call = async (extra) =>
            (await clients[version].callTool({ name: 'skill_run', arguments: { name: skill, ...scripts[skill], ...extra } }))
              .structuredContent;
          let t = performance.now();
          const preview = await call({});
          const previewMs = performance.now() - t;
          if (preview?.status !== 'confirmation-required') throw new Error(`${version} ${skill}: ${JSON.stringify(preview)}`);
          t = performance.now();
          const ran = await call({ confirmToken: preview.confirmToken });
          const runMs = performance.now() - t;
          if (ran?.status !== 'completed') throw new Error(`${version} ${skill}: ${JSON.stringify(ran)}`);
          if (i < 3) continue;
          const key = `${skill}/${version}`;
          samples[key] ??= { preview: [], run: [] };
          samples[key].preview.push(previewMs);
          samples[key].run.push(runMs);
        }
      }
    }
  } finally {
    await clients.now.close();
    await clients.base.close();
  }
  return Object.keys(scripts).map((skill) => {
    const [b, n] = [samples[`${skill}/base`], samples[`${skill}/now`]];
    return {
      skill,
      preview: { base: median(b.preview), now: median(n.preview), nowP90: p90(n.preview), added: median(n.preview) - median(b.preview) },
      run: { base: median(b.run), now: median(n.run), nowP90: p90(n.run), added: median(n.run) - median(b.run) },
    };
  });
}

try {
  const root = await skills();
  const fn = await functions(root);
  console.log(`content binding, ${RUNS} samples each, node ${process.version}, uid ${process.getuid()}\n`);
  console.log(
    '| skill | files | bytes | read + hash in place (prepare; the front again) median / p90 | copy + hash + remove (run) median / p90 |',
  );
  console.log('|---|---:|---:|---:|---:|');
  for (const r of fn)
    console.log(
      `| ${r.skill} | ${r.files} | ${r.bytes} | ${ms(r.inPlace.median)} / ${ms(r.inPlace.p90)} | ${ms(r.copy.median)} / ${ms(r.copy.p90)} |`,
    );
  const e2e = await endToEnd(root);
  console.log(`\nend to end (real bin over stdio, token path), ${BASE} vs this build, medians:\n`);
  console.log('| skill | preview call: before → now (added) | run call: before → now (added) |');
  console.log('|---|---:|---:|');
  for (const r of e2e)
    console.log(
      `| ${r.skill} | ${ms(r.preview.base)} → ${ms(r.preview.now)} (${r.preview.added >= 0 ? '+' : ''}${ms(r.preview.added)}) | ${ms(r.run.base)} → ${ms(r.run.now)} (${r.run.added >= 0 ? '+' : ''}${ms(r.run.added)}) |`,
    );
  mkdirSync(join(REPO, 'bench/out'), { recursive: true });
  writeFileSync(
    join(REPO, 'bench/out/content-binding.json'),
    `${JSON.stringify({ at: new Date().toISOString(), runs: RUNS, base: BASE, functions: fn, endToEnd: e2e }, null, 2)}\n`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
