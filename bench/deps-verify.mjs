/**
 * `node bench/deps-verify.mjs [WHEEL]`: what checking an environment against its manifest costs
 * before every preview and run (runner/deps/verify.ts), on a pypdf-sized environment: the pypdf
 * wheel (WHEEL, or BENCH_PYPDF_WHEEL; e.g. from `pip download 'pypdf>=6,<7' --no-deps
 * --only-binary :all: -d DIR`) installed with `pip install --target` and byte-compiled, sealed
 * read-only, its manifest written as `deps install` writes it.
 *
 * - full: a fresh verifier each time (a runner's first check after start): walk + sha256 of every file;
 * - cached: one verifier, past the racy window (files unchanged since hashed): walk + lstat only;
 * - walk: the lstat walk alone.
 *
 * Medians and p90 of N (BENCH_RUNS, default 50), in process (bundled from the sources with esbuild).
 * Not a test: nothing fails on speed.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';

const REPO = resolve(import.meta.dirname, '..');
const RUNS = Number(process.env.BENCH_RUNS ?? 50);
const wheel = process.argv[2] ?? process.env.BENCH_PYPDF_WHEEL;
if (!wheel) {
  console.error('usage: node bench/deps-verify.mjs PATH/TO/pypdf-6.x-py3-none-any.whl');
  process.exit(2);
}
const work = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-deps-'));
const env = join(work, 'env');
try {
  execFileSync('python3', ['-m', 'pip', 'install', '--quiet', '--no-index', '--no-deps', '--target', join(env, 'site'), wheel], {
    stdio: 'inherit',
    env: { ...process.env, PIP_CONFIG_FILE: '/dev/null' },
  });
  const entry = join(work, 'entry.ts');
  writeFileSync(entry, ['manifest', 'verify'].map((m) => `export * from ${JSON.stringify(join(REPO, `runner/deps/${m}.ts`))};`).join('\n'));
  const out = join(work, 'entry.mjs');
  await build({ entryPoints: [entry], outfile: out, bundle: true, format: 'esm', platform: 'node', target: 'node20', logLevel: 'warning' });
  const { walkEnv, hashFile, EnvVerifier, MANIFEST_FILE } = await import(out);
  execFileSync('chmod', ['-R', 'a-w', env]);
  const entries = [];
  let bytes = 0;
  for (const e of walkEnv(env)) {
    const row = { path: e.path, type: e.type, mode: e.mode };
    if (e.type === 'file') {
      Object.assign(row, { size: e.size, sha256: await hashFile(e.abs) });
      bytes += e.size;
    }
    entries.push(row);
  }
  const digest = '0'.repeat(64);
  execFileSync('chmod', ['u+w', env]);
  writeFileSync(
    join(env, MANIFEST_FILE),
    JSON.stringify({
      version: 1,
      digest,
      kind: 'python',
      interpreter: '',
      builtAt: '',
      index: [],
      resolved: '',
      sourceBuilds: false,
      entries,
    }),
  );
  execFileSync('chmod', ['a-w', env]);
  const time = async (fn) => {
    const samples = [];
    for (let i = 0; i < RUNS + 5; i++) {
      const t = performance.now();
      await fn();
      if (i >= 5) samples.push(performance.now() - t);
    }
    samples.sort((a, b) => a - b);
    return { median: samples[Math.floor(samples.length / 2)], p90: samples[Math.floor(samples.length * 0.9)] };
  };
  const full = await time(async () => {
    const v = await new EnvVerifier().verify(env, digest);
    if (!v.ok) throw new Error(v.why);
  });
  // Past the racy window, so the cache may trust what it hashed.
  await new Promise((r) => setTimeout(r, 2100));
  const verifier = new EnvVerifier();
  await verifier.verify(env, digest);
  const cached = await time(async () => {
    const v = await verifier.verify(env, digest);
    if (!v.ok || v.hashed !== 0) throw new Error('expected a fully cached check');
  });
  const walk = await time(async () => walkEnv(env));
  const files = entries.filter((e) => e.type === 'file').length;
  console.log(`pypdf environment: ${files} files, ${entries.length - files} folders, ${(bytes / 1024 / 1024).toFixed(1)} MiB`);
  for (const [name, r] of Object.entries({ full, cached, walk }))
    console.log(`${name.padEnd(7)} median ${r.median.toFixed(2)} ms  p90 ${r.p90.toFixed(2)} ms`);
} finally {
  execFileSync('chmod', ['-R', 'u+w', work]);
  rmSync(work, { recursive: true, force: true });
}
