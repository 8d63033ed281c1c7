// Bundles the one bin, dist/skill-mcp.js. A bundle starts far faster than loading the SDK from
// node_modules (docs/platform-notes.md §1); code splitting keeps the runner and HTTP code out of the stdio
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
  // Everything else is bundled, so the installed package needs no dependencies at run time.
  // koffi loads a prebuilt native addon from its own package, so it cannot be bundled; it is an
  // optionalDependency, and without it the runner skips the peer-credential check and says so
  // (runner/peer-cred.ts). msgpackr's optional native extractor is not loaded from the bundle.
  external: ['koffi'],
  logLevel: 'warning',
});
await chmod('dist/skill-mcp.js', 0o755);
