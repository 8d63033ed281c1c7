/**
 * `node bench/data-steps.mjs`: the runner's own per-run work for a data folder, timed in-process
 * (no spawn, no sandbox, so the machine's load does not drown it): making or checking the folder
 * (runner/data/folder.ts openDataFolder), reading its record, measuring it (runner/data/usage.ts,
 * lstat only) and writing the record — empty, then with 10,000 files. Bundles those two modules
 * with esbuild (as tools/tcb.mjs does) and imports the bundle. Medians of 200 rounds (20 with files).
 */
import { build } from 'esbuild';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const REPO = resolve(import.meta.dirname, '..');
const FILES = Number(process.env.BENCH_DATA_FILES ?? 10_000);
const work = mkdtempSync(join(tmpdir(), 'skill-mcp-bench-steps-'));
const out = join(work, 'steps.mjs');
await build({
  stdin: {
    contents: "export * from './runner/data/folder.ts'; export * from './runner/data/usage.ts';",
    resolveDir: REPO,
    loader: 'ts',
  },
  bundle: true,
  format: 'esm',
  platform: 'node',
  outfile: out,
  logLevel: 'error',
});
const { openDataFolder, readDataRecord, writeDataRecord, measureDataOrSay } = await import(out);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const place = { base: join(work, 'data'), ...(process.getuid() === 0 ? { gids: { first: 60900, last: 60999 } } : {}) };
const key = ['probe', 'anyone'];
const round = () => {
  const t0 = performance.now();
  const opened = openDataFolder(place, key);
  readDataRecord(place.base, key);
  const usage = measureDataOrSay(opened.dir, FILES * 2);
  writeDataRecord(place.base, key, { bytes: usage.bytes, entries: usage.entries, full: false });
  return { ms: performance.now() - t0, entries: usage.entries };
};
try {
  round();
  const empty = Array.from({ length: 200 }, () => round().ms);
  const dir = openDataFolder(place, key).dir;
  for (let i = 0; i < FILES; i++) writeFileSync(join(dir, `f${i}`), 'x');
  let entries = 0;
  const filled = Array.from({ length: 20 }, () => {
    const r = round();
    entries = r.entries;
    return r.ms;
  });
  console.log(
    `the runner's per-run data-folder steps, in-process (${process.getuid() === 0 ? 'root: with the gid claim' : 'not root'}), ${process.version}`,
  );
  console.log('| folder | median | ');
  console.log('|---|---|');
  console.log(`| empty | ${median(empty).toFixed(3)} ms |`);
  console.log(`| ${entries} files | ${median(filled).toFixed(1)} ms |`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
