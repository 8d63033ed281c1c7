/**
 * @module Bundles the reference server (ref-server.ts) with esbuild, like our bin, into bench/out/.
 * Shared by run.mjs and first-list.mjs so both measure the same reference.
 */
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const HERE = dirname(fileURLToPath(import.meta.url));

export async function buildRefServer() {
  const outfile = join(HERE, 'out', 'ref-server.mjs');
  await mkdir(dirname(outfile), { recursive: true });
  await build({
    entryPoints: [join(HERE, 'ref-server.ts')],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    banner: {
      js: "import { createRequire as __benchCreateRequire } from 'node:module'; const require = __benchCreateRequire(import.meta.url);",
    },
    logLevel: 'warning',
  });
  return outfile;
}
