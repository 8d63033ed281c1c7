// Bundles the one bin, dist/skill-mcp.js. A bundle starts far faster than loading the SDK from
// node_modules (REFERENCE §1); code splitting keeps the runner and HTTP code out of the stdio
// front's start-up path (they are loaded with dynamic import only when asked for).
import { build } from 'esbuild';
import { chmod, rm } from 'node:fs/promises';

await rm('dist', { recursive: true, force: true });
await build({
  entryPoints: { 'skill-mcp': 'cli/main.ts' },
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: 'linked',
  legalComments: 'none',
  banner: {
    js: "#!/usr/bin/env node\nimport { createRequire as __skillMcpCreateRequire } from 'node:module'; const require = __skillMcpCreateRequire(import.meta.url);",
  },
  // koffi loads a prebuilt native addon from its own package at run time; it cannot be bundled.
  external: ['koffi'],
  logLevel: 'warning',
});
await chmod('dist/skill-mcp.js', 0o755);
