/**
 * @module `skill_search` in-process, without the transport: loads a generated workload into a
 * `Catalog` (bundled from the TypeScript sources with esbuild into the OS temp dir), then times
 * each bench query (bench/live.mjs's QUERIES) over many rounds. What the round-trip rows of
 * `node bench/run.mjs --only=live` measure, minus JSON-RPC and stdio.
 *
 *   node bench/search-inprocess.mjs [large|huge ...] [--rounds=N] [--cpu-prof]
 */
import { build } from 'esbuild';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { WORKLOADS, generate } from './generate.mjs';
import { QUERIES } from './live.mjs';
import { quantile } from './report.mjs';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const ids = argv.filter((a) => !a.startsWith('--'));
const rounds = Number(argv.find((a) => a.startsWith('--rounds='))?.slice(9) ?? 50);

const out = mkdtempSync(join(tmpdir(), 'skill-mcp-search-bench-'));
try {
  await build({
    stdin: {
      contents: `export { Catalog } from './server/catalog/catalog.ts'; export { DEFAULT_CATALOG_LIMITS } from './shared/limits.ts';`,
      resolveDir: REPO,
      loader: 'ts',
    },
    outfile: join(out, 'catalog.mjs'),
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    logLevel: 'warning',
  });
  const { Catalog, DEFAULT_CATALOG_LIMITS } = await import(pathToFileURL(join(out, 'catalog.mjs')).href);
  for (const workload of WORKLOADS.filter((w) => w.id !== 'small' && (ids.length === 0 || ids.includes(w.id)))) {
    const { root } = await generate(workload);
    const catalog = await Catalog.load({ roots: [root], limits: DEFAULT_CATALOG_LIMITS, env: {} });
    const t0 = performance.now();
    catalog.search.search('warm', 10);
    const indexMs = performance.now() - t0;
    for (let i = 0; i < 5; i++) for (const query of QUERIES) catalog.search.search(query, 10);
    const times = [];
    const perQuery = new Map(QUERIES.map((q) => [q, []]));
    for (let r = 0; r < rounds; r++) {
      for (const query of QUERIES) {
        const t = performance.now();
        catalog.search.search(query, 10);
        const ms = performance.now() - t;
        times.push(ms);
        perQuery.get(query).push(ms);
      }
    }
    console.log(
      `${workload.skills} skills (index ${indexMs.toFixed(0)} ms): p50 ${quantile(times, 0.5).toFixed(3)} ms, p90 ${quantile(times, 0.9).toFixed(3)} ms, p99 ${quantile(times, 0.99).toFixed(3)} ms, max ${Math.max(...times).toFixed(3)} ms (${QUERIES.length} queries × ${rounds})`,
    );
    for (const [query, list] of perQuery) console.log(`  ${quantile(list, 0.5).toFixed(3).padStart(8)} ms  ${JSON.stringify(query)}`);
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}
