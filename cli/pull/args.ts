/**
 * @module The command line of `skill-mcp pull`, parsed into what to pull, from where, into where.
 */
import { checkSkillName } from './checks.js';
import { parseHeaders, type Source } from './connect.js';

export const PULL_USAGE = `usage:
  skill-mcp pull [--skill NAME]... --to DIR [--force] --url URL [--header 'Name: value']...
  skill-mcp pull [--skill NAME]... --to DIR [--force] -- COMMAND [ARG]...

Copies skills from any MCP server that serves them into DIR/<name>/, each file checked against
the digest the server publishes (SEP-2640 skills/list + skills/get, or FastMCP's
skill://<name>/_manifest), each skill written whole or not at all. DIR/.skill-mcp-lock.json
records where each skill came from and its digests; running again updates only what changed.

  --skill NAME    pull only this skill (repeatable; default: every skill the server publishes)
  --to DIR        the skills folder to write into (created if missing), e.g. ~/.claude/skills
  --url URL       a Streamable HTTP server (http:// or https://)
  --header H      an HTTP header for every request, e.g. 'Authorization: Bearer ...' (repeatable;
                  never written to the lockfile)
  -- COMMAND      a server started over stdio, with this process's environment
  --force         replace DIR/<name> even when pull did not write it, it changed since, or it
                  came from another source

Exit status: 0 every skill is added, updated or unchanged; 1 a skill was refused or the server
could not be reached; 2 a usage error.`;

export interface PullArgs {
  skills: Set<string>;
  to: string;
  source: Source;
  headers: Record<string, string>;
  force: boolean;
}

export type ParsedPullArgs = { kind: 'help' } | { kind: 'error'; message: string } | { kind: 'pull'; args: PullArgs };

export function parsePullArgs(argv: readonly string[]): ParsedPullArgs {
  const skills = new Set<string>();
  const headerLines: string[] = [];
  let to: string | undefined;
  let url: string | undefined;
  let command: string[] | undefined;
  let force = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = (): string | undefined => (i + 1 < argv.length ? argv[++i] : undefined);
    switch (arg) {
      case '--help':
      case '-h':
        return { kind: 'help' };
      case '--force':
        force = true;
        break;
      case '--skill': {
        const name = value();
        const checked = checkSkillName(name);
        if (!checked.ok) return { kind: 'error', message: `--skill: ${name === undefined ? 'a name is missing' : checked.why}` };
        skills.add(checked.value);
        break;
      }
      case '--to':
        to = value();
        if (!to) return { kind: 'error', message: '--to needs a folder' };
        break;
      case '--url':
        url = value();
        if (!url) return { kind: 'error', message: '--url needs a URL' };
        break;
      case '--header': {
        const line = value();
        if (line === undefined) return { kind: 'error', message: '--header needs "Name: value"' };
        headerLines.push(line);
        break;
      }
      case '--':
        command = argv.slice(i + 1);
        i = argv.length;
        break;
      default:
        return { kind: 'error', message: `unknown argument ${JSON.stringify(arg)}` };
    }
  }
  if (!to) return { kind: 'error', message: '--to DIR is required: the skills folder to write into' };
  if ((url === undefined) === (command === undefined)) return { kind: 'error', message: 'name one server: --url URL, or -- COMMAND [ARG]...' };
  if (command !== undefined && command.length === 0) return { kind: 'error', message: 'a command is missing after --' };
  if (command !== undefined && headerLines.length > 0) return { kind: 'error', message: '--header is for --url servers' };
  if (url !== undefined) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { kind: 'error', message: `--url ${JSON.stringify(url)} is not a URL` };
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return { kind: 'error', message: `--url must be http:// or https:// (it is ${parsed.protocol})` };
  }
  const headers = parseHeaders(headerLines);
  if (typeof headers === 'string') return { kind: 'error', message: headers };
  return { kind: 'pull', args: { skills, to, source: url !== undefined ? { url } : { command: command! }, headers, force } };
}
