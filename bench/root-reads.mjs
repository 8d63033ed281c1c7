// What opening a skill file costs by each way (docs/isolation.md, "Root reads"): openat2 through
// koffi against the per-component O_NOFOLLOW walk, on a file four folders down (a/b/c/d/file.txt),
// the opener alone and the whole checked open (realpath, root folder, open, fstat, /proc check).
// Batches alternated, median of the batches, microseconds per open. Not a test: nothing fails on speed.
//   node bench/root-reads.mjs [batches] [opens per batch]
// (it bundles shared/open-inside.ts for itself, into .tmp/, where koffi resolves from node_modules)
import { closeSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';

mkdirSync('.tmp', { recursive: true });
const bundle = join(mkdtempSync(join('.tmp', 'bench-root-reads-')), 'open.mjs');
await build({
  stdin: { contents: "export * from './shared/open-beneath.ts'; export * from './shared/open-inside.ts';", resolveDir: '.', loader: 'ts' },
  bundle: true,
  platform: 'node',
  format: 'esm',
  outfile: bundle,
  external: ['koffi'],
  logLevel: 'error',
});
const { loadOpenat2, openInsideSkill, perComponentOpener } = await import(join(process.cwd(), bundle));

const batches = Number(process.argv[2] ?? 21);
const perBatch = Number(process.argv[3] ?? 2000);
const openat2 = loadOpenat2();
if ('why' in openat2) throw new Error(`no openat2 here: ${openat2.why}`);

const skill = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-reads-'));
const segments = ['a', 'b', 'c', 'd', 'file.txt'];
mkdirSync(join(skill, ...segments.slice(0, -1)), { recursive: true });
writeFileSync(join(skill, ...segments), 'x\n');
const rel = segments.join('/');

const cases = {};
for (const opener of [openat2, perComponentOpener]) {
  cases[`${opener.mechanism}: the open alone`] = () => {
    const root = opener.openRoot(skill);
    for (let i = 0; i < perBatch; i++) closeSync(opener.open(root, segments));
    closeSync(root);
  };
  cases[`${opener.mechanism}: openInsideSkill`] = () => {
    for (let i = 0; i < perBatch; i++) closeSync(openInsideSkill(skill, rel, opener).fd);
  };
}
const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
for (const run of Object.values(cases)) run(); // warm up: JIT, dentry cache
for (let b = 0; b < batches; b++) {
  for (const [name, run] of Object.entries(cases)) {
    const t = process.hrtime.bigint();
    run();
    times[name].push(Number(process.hrtime.bigint() - t) / 1000 / perBatch);
  }
}
rmSync(skill, { recursive: true, force: true });
rmSync(join(bundle, '..'), { recursive: true, force: true });
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  `${process.version} ${process.platform}/${process.arch}; a file 4 folders down; ${batches} batches of ${perBatch} opens, median µs per open`,
);
for (const [name, xs] of Object.entries(times)) console.log(`  ${name.padEnd(36)} ${median(xs).toFixed(2)}`);
