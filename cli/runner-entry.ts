/**
 * @module The runner's own bundle, dist/skill-mcp-runner.cjs: `skill-mcp runner` (the daemon that
 * spawns scripts, root when it sandboxes under fresh uids). Its keeper, `skill-mcp runner-guard`,
 * has a bundle of its own (cli/guard-entry.ts). The bin (cli/boot.ts)
 * loads it with a plain `require`, never with the front's V8 code cache: a code cache is compiled
 * code V8 checks only by version, flags and source length, so a root process must not take one
 * from a file a less-privileged user may have written. This bundle holds the runner's code and
 * what it shares with the front (shared/), not the front, the SDK or the HTTP server.
 */
import { fileURLToPath } from 'node:url';
import { UsageError } from '../shared/cli-args.js';
import { runnerMain } from '../runner/main.js';

/** The package's own skills/, served when nothing is configured. */
const BUNDLED_SKILLS = fileURLToPath(new URL('../skills', import.meta.url));

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === 'runner') return runnerMain(rest, { bundledSkills: BUNDLED_SKILLS });
  throw new Error(`the runner bundle does not serve ${JSON.stringify(command)}`);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError) {
    process.stderr.write(`skill-mcp: ${error.message}\n${error.usage ?? ''}\n`);
    process.exit(UsageError.EXIT);
  }
  process.stderr.write(`skill-mcp: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
