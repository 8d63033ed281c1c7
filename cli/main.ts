/**
 * @module The one bin, `skill-mcp`. Dispatches to the front (stdio or HTTP), the runner daemon or
 * the audit tool. Each part is loaded only when asked for, so the stdio front starts without
 * parsing the runner's or the HTTP server's code.
 */
import { fileURLToPath } from 'node:url';
import { UsageError } from '../shared/cli-args.js';

/** The package's own skills/, served when nothing is configured. */
const BUNDLED_SKILLS = fileURLToPath(new URL('../skills', import.meta.url));

const USAGE = `usage:
  skill-mcp                         serve skills over stdio (SKILLS_DIR or MCP_SKILLS_PATH; default: bundled skills)
  skill-mcp --http [--host H] [--port P] [--metrics-port M [--metrics-host MH]]
                                    serve the same skills over Streamable HTTP at http://H:P/mcp
                                    (default 127.0.0.1:3000; SKILL_MCP_HTTP_* variables: docs/http.md),
                                    Prometheus metrics at http://MH:M/metrics when asked for
  skill-mcp runner --socket PATH --state-dir DIR [options]
                                    run the privileged runner daemon on its own (hosted mode;
                                    give it the front's MCP_SKILLS_PATH and MCP_SKILL_RUN;
                                    skill-mcp runner --help lists the options)
  skill-mcp audit verify [FILE|-] [--public-key PEM] [--head HEAD]
                                    check the audit log's chain, signatures, segments and anchor
  skill-mcp audit head|pubkey       print the latest signed head / the signing public key
  skill-mcp audit query [FILE] [--skill S] [--outcome O] [--since T] [--json] ...
                                    print the decisions matching the filters
  skill-mcp audit tail [-n N] [FILE]
                                    print recent audit decisions
  skill-mcp doctor [--json]         the isolation this machine gives scripts, what is missing and how
                                    to get it (exit 1 when skill_run would be refused here)
  skill-mcp check [--format text|json|sarif] [--strict] [--fix] PATH...
                                    check skill folders before serving them (--fix: move mcp-host: into mcp-host.yaml; --help: the rules)
  skill-mcp pull [--skill NAME]... --to DIR (--url URL [--header H]... | -- COMMAND...)
                                    copy skills from any MCP server that serves them into DIR,
                                    every file checked against its published digest (--help)
  skill-mcp deps install [--skill NAME] [--state-dir DIR]
                                    build the environments skills declare in requirements
                                    (sandboxed, from the operator's package index); deps list shows them
  skill-mcp data ls|du|rm|export|import [SKILL[/WHO]] [FILE.tar]
                                    skills' data folders: usage, measure, empty, back up, restore (--help)
  skill-mcp --help | --version`;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case undefined:
      return (await import('./standalone.js')).serveStandalone({ bundledSkills: BUNDLED_SKILLS, entry: process.argv[1]! });
    case '--http':
      return (await import('./standalone.js')).serveStandaloneHttp({ bundledSkills: BUNDLED_SKILLS, entry: process.argv[1]!, args: rest });
    // `runner` and `runner-guard` never reach this bundle: the bin loads their own (cli/runner-entry.ts).
    case 'audit':
      return (await import('./audit/cli.js')).auditMain(rest);
    case 'doctor':
      return (await import('./doctor.js')).doctorMain(rest, { bundledSkills: BUNDLED_SKILLS });
    // Asked-for help and the version are the answer, so they go to stdout (and exit 0).
    case 'check':
      return (await import('./check/main.js')).checkMain(rest);
    case 'pull':
      return (await import('./pull/main.js')).pullMain(rest);
    case 'deps':
      return (await import('./deps/cli.js')).depsMain(rest, { bundledSkills: BUNDLED_SKILLS });
    case 'data':
      return (await import('./data.js')).dataMain(rest);
    case '--help':
    case '-h':
      process.stdout.write(`${USAGE}\n`);
      return;
    case '--version':
      process.stdout.write('skill-mcp 0.1.0\n');
      return;
    default: {
      // The HTTP front's own flags, given without --http: say what was meant.
      const httpFlag = /^--(host|port|metrics-port|metrics-host)(=|$)/.exec(command)?.[1];
      const hint = httpFlag ? ` (--${httpFlag} is a flag of the HTTP front: skill-mcp --http ${argv.join(' ')})` : '';
      process.stderr.write(`skill-mcp: unknown command ${JSON.stringify(command)}${hint}\n${USAGE}\n`);
      process.exitCode = 2;
    }
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  // A command line the command does not accept: the message, its usage, exit 2 (shared/cli-args.ts).
  if (error instanceof UsageError) {
    process.stderr.write(`skill-mcp: ${error.message}\n${error.usage ?? USAGE}\n`);
    process.exit(UsageError.EXIT);
  }
  process.stderr.write(`skill-mcp: ${error instanceof Error ? error.message : String(error)}\n`);
  // A failed start ends the process now: an HTTP front that could not listen would otherwise live
  // on, serving nothing, and keep its runner guard (which goes when our end of its pipe closes).
  process.exit(1);
});
