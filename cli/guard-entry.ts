/**
 * @module The runner guard's own bundle, dist/skill-mcp-guard.cjs: `skill-mcp runner-guard`, the
 * standalone runner's keeper (runner/guard.ts), started by a root launcher before the front drops
 * privileges. It only starts, restarts and stops the runner, so it loads none of the runner's
 * code: Node's built-ins and the guard, a few kB. Loading the runner's 1.5 MB bundle (which has no
 * code cache, cli/runner-entry.ts) cost each guard ~0.2 s of CPU at every start, and the first
 * skill_run of every server waits for the guard. The bin loads it as it loads the runner's bundle
 * (cli/boot.ts: as root, only a bundle no one but its owner can write, never through a link).
 */
import { guardMain } from '../runner/guard.js';

guardMain(process.argv.slice(3), { entry: process.argv[1]! }).catch((error: unknown) => {
  process.stderr.write(`skill-mcp: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
