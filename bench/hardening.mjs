// What the syscall filter and the run launcher cost a run (docs/isolation.md, "Cost"): the wall time of
// spawning each step alone, alternated sample by sample, median of N. Not a test: nothing fails on speed.
//   node build.mjs && node bench/hardening.mjs [samples]
// (it bundles runner/sandbox/seccomp-programs.ts for itself, into the OS temp dir, and loads the
// filter the build wrote into dist/seccomp/ as the runner does)
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';

const bundle = join(mkdtempSync(join(tmpdir(), 'skill-mcp-bench-bundle-')), 'seccomp-programs.mjs');
await build({
  entryPoints: ['runner/sandbox/seccomp-programs.ts'],
  bundle: true,
  platform: 'node',
  format: 'esm',
  outfile: bundle,
  logLevel: 'error',
});
const { loadHostPrograms } = await import(bundle);

const samples = Number(process.argv[2] ?? 20);
// A level without a memory cgroup's program (System V shm refused), as an ordinary runner's.
const filter = loadHostPrograms(join('dist', 'seccomp')).shmRefused;
const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-hardening-'));
const orders = join(dir, 'orders');
writeFileSync(orders, JSON.stringify({ env: ['PATH=/usr/bin:/bin'], filter: filter.toString('base64') }));
const bpf = join(dir, 'filter.bpf');
writeFileSync(bpf, filter);
const python = ['/usr/bin/python3', '-c', 'pass'];
const cases = {
  'python3 -c pass': { argv: python },
  'node -e 0': { argv: [process.execPath, '-e', '0'] },
  "node -e require('koffi')": { argv: [process.execPath, '-e', "require('koffi')"] },
  'launcher (keyring + filter) → python3': { argv: [process.execPath, 'dist/skill-mcp-launch.cjs', '--', ...python], fd: orders },
  'bwrap → python3': { argv: ['bwrap', '--unshare-all', '--ro-bind', '/', '/', '--', ...python] },
  'bwrap --seccomp → python3': { argv: ['bwrap', '--unshare-all', '--ro-bind', '/', '/', '--seccomp', '3', '--', ...python], fd: bpf },
};
const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
for (let i = 0; i < samples; i++) {
  for (const [name, c] of Object.entries(cases)) {
    const fd = c.fd ? openSync(c.fd, 'r') : undefined;
    const t = performance.now();
    const r = spawnSync(c.argv[0], c.argv.slice(1), { stdio: ['ignore', 'ignore', 'inherit', ...(fd !== undefined ? [fd] : [])] });
    times[name].push(performance.now() - t);
    if (fd !== undefined) closeSync(fd);
    if (r.status !== 0) throw new Error(`${name} failed: ${r.status}`);
  }
}
// A syscall-heavy loop under the filter vs without: the per-syscall price of the BPF program.
const loop = ['/usr/bin/python3', '-c', 'import os\nfor _ in range(200000): os.getppid()'];
for (let i = 0; i < Math.max(3, samples / 4); i++) {
  for (const [name, c] of Object.entries({
    '200k getppid': { argv: loop },
    '200k getppid under the filter': { argv: [process.execPath, 'dist/skill-mcp-launch.cjs', '--', ...loop], fd: orders },
  })) {
    const fd = c.fd ? openSync(c.fd, 'r') : undefined;
    const t = performance.now();
    spawnSync(c.argv[0], c.argv.slice(1), { stdio: ['ignore', 'ignore', 'inherit', ...(fd !== undefined ? [fd] : [])] });
    times[name] ??= [];
    times[name].push(performance.now() - t);
    if (fd !== undefined) closeSync(fd);
  }
}
rmSync(dir, { recursive: true, force: true });
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`filter: ${filter.length / 8} instructions (${process.arch}); ${samples} samples each, median ms`);
for (const [name, xs] of Object.entries(times)) console.log(`  ${name.padEnd(42)} ${median(xs).toFixed(1)}`);
