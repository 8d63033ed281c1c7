/**
 * @module `skill-mcp check`'s rules on large single-line inputs built to make regular expressions
 * backtrack (long runs of the characters each pattern retries on). Bundles the rule functions from
 * the TypeScript sources with esbuild into the OS temp dir, then times every rule on each input.
 * Numbers only: nothing here fails on speed (test/check/adversarial.test.ts asserts the results).
 *
 *   node bench/check-linear.mjs [--mb=10] [--sizes]     (--sizes: also 20k/40k/80k/160k, to see the curve)
 */
import { build } from 'esbuild';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const mb = Number(argv.find((a) => a.startsWith('--mb='))?.slice(5) ?? 10);

const out = mkdtempSync(join(tmpdir(), 'skill-mcp-check-bench-'));
try {
  await build({
    stdin: {
      contents: [
        "export { findCredentials } from './cli/check/credentials.ts';",
        "export { findDeadLinks, relativeLinks } from './cli/check/links.ts';",
        "export { findHiddenInstructions } from './cli/check/hidden-text.ts';",
        "export { findHiddenUnicode } from './cli/check/unicode.ts';",
        "export { adviseSkill } from './cli/check/advice.ts';",
        "export { maskMarkdownCode } from './cli/check/text.ts';",
        "export { ADVERSARIAL } from './test/check/adversarial-inputs.ts';",
      ].join('\n'),
      resolveDir: REPO,
      loader: 'ts',
    },
    bundle: true,
    platform: 'node',
    format: 'esm',
    outfile: join(out, 'rules.mjs'),
    logLevel: 'error',
  });
  const m = await import(pathToFileURL(join(out, 'rules.mjs')).href);
  const rules = {
    credentials: (t) => m.findCredentials(t),
    links: (t) => m.findDeadLinks(t, 0, [], () => false),
    'hidden-text': (t) => m.findHiddenInstructions(t, 0),
    unicode: (t) => m.findHiddenUnicode(t),
    advice: (t) =>
      m.adviseSkill({
        text: t,
        description: t.slice(0, 1024),
        frontmatter: { name: 'x', description: t.slice(0, 1024) },
        hasFrontmatterDeclaration: false,
        lineOf: () => undefined,
      }),
  };
  const sizes = argv.includes('--sizes') ? [20_000, 40_000, 80_000, 160_000] : [mb * 1_000_000];
  const worst = {};
  for (const size of sizes) {
    for (const [name, make] of Object.entries(m.ADVERSARIAL)) {
      const text = make(size);
      for (const [rule, run] of Object.entries(rules)) {
        const started = process.hrtime.bigint();
        run(text);
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        if (size === sizes.at(-1)) worst[rule] = Math.max(worst[rule] ?? 0, ms);
        if (ms > 200 || size !== sizes.at(-1))
          console.log(`${String(size).padStart(9)} chars  ${rule.padEnd(12)} ${name.padEnd(28)} ${ms.toFixed(0).padStart(7)} ms`);
      }
    }
  }
  console.log(`\nworst per rule on ${mb} MB single-line inputs (${Object.keys(m.ADVERSARIAL).length} inputs):`);
  for (const [rule, ms] of Object.entries(worst)) console.log(`  ${rule.padEnd(12)} ${ms.toFixed(0).padStart(7)} ms`);
} finally {
  rmSync(out, { recursive: true, force: true });
}
