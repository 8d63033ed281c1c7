/**
 * @module The command line of `skill-mcp pull`, parsed into what to pull, from where, into where.
 */
import { checkSkillName } from './checks.js';
import { parseHeaders, type Source } from './connect.js';
import { checkPathString } from '../../shared/paths.js';

export const PULL_USAGE = `usage:
  skill-mcp pull [--skill NAME]... --to DIR [--force] --url URL [--header 'Name: value']...
  skill-mcp pull [--skill NAME]... --to DIR [--force] -- COMMAND [ARG]...
  skill-mcp pull [--skill NAME]... --to DIR [--force] --git URL [--ref REF] [--path SUBDIR] [--locked]
  skill-mcp pull [--skill NAME]... --to DIR [--force] --index URL [--locked]

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
  --git URL       a git repository (https://, ssh:// or file://), read with git plumbing only:
                  no checkout, hooks, filters, LFS or submodules ever run; links, submodules,
                  LFS pointers and dot-files are reported and not pulled
  --ref REF       the branch, tag or commit to pull (default: the repository's HEAD); the lock
                  records the commit it resolved to
  --path SUBDIR   the folder of the repository holding the skills (default: the top)
  --index URL     a site publishing an Agent Skills discovery index: https://example.com reads
                  https://example.com/.well-known/agent-skills/index.json (a URL ending in .json
                  is read as the index itself); https only, http only on loopback. Every digest
                  is checked; any refusal refuses the whole pull and nothing is written
  --locked        install exactly the commit (--git) or the digests (--index) that
                  DIR/.skill-mcp-lock.json records for this source, even if it has moved; fails,
                  writing nothing, if they are gone
  --force         replace DIR/<name> even when pull did not write it, it changed since, or it
                  came from another source

SKILL_MCP_PULL_ALLOW   if set, the only sources --url, --git and --index (and every URL an index
                       names) may use: comma-separated host names (github.com) or URL prefixes
                       (https://github.com/anthropics/)

Exit status: 0 every skill is added, updated or unchanged; 1 a skill or a file was refused or the
source could not be reached; 2 a usage error.`;

export interface GitSource {
  git: string;
  /** undefined: the repository's HEAD. */
  ref: string | undefined;
  /** `/`-separated, checked; "" is the top of the repository. */
  path: string;
  locked: boolean;
}

/** A discovery index, by the URL of its index.json. */
export interface IndexSource {
  index: string;
  locked: boolean;
}

export const WELL_KNOWN_INDEX = '/.well-known/agent-skills/index.json';

export interface PullArgs {
  skills: Set<string>;
  to: string;
  source: Source | GitSource | IndexSource;
  headers: Record<string, string>;
  force: boolean;
}

export type ParsedPullArgs = { kind: 'help' } | { kind: 'error'; message: string } | { kind: 'pull'; args: PullArgs };

/** The index.json an `--index` argument names, or why it names none. */
export function indexUrl(given: string): { url: string } | { error: string } {
  let parsed: URL;
  try {
    parsed = new URL(given);
  } catch {
    return { error: `--index ${JSON.stringify(given)} is not a URL` };
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
    return { error: `--index must be https:// (or http:// on loopback); it is ${parsed.protocol}` };
  if (parsed.search !== '' || parsed.hash !== '') return { error: '--index takes no query or fragment' };
  if (parsed.pathname.endsWith('.json')) return { url: parsed.href };
  // RFC 8615: well-known locations hang off the origin, whatever path was given with it.
  if (parsed.pathname !== '/' && parsed.pathname !== '')
    return { error: `--index ${JSON.stringify(given)}: give the site (${parsed.origin}) or the index's own URL ending in .json` };
  return { url: `${parsed.origin}${WELL_KNOWN_INDEX}` };
}

export function parsePullArgs(argv: readonly string[]): ParsedPullArgs {
  const skills = new Set<string>();
  const headerLines: string[] = [];
  let to: string | undefined;
  let url: string | undefined;
  let command: string[] | undefined;
  let force = false;
  let git: string | undefined;
  let ref: string | undefined;
  let path: string | undefined;
  let locked = false;
  let index: string | undefined;
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
      case '--git':
        git = value();
        if (!git) return { kind: 'error', message: '--git needs a repository URL' };
        break;
      case '--index':
        index = value();
        if (!index) return { kind: 'error', message: '--index needs the URL of a site (or of its index.json)' };
        break;
      case '--ref':
        ref = value();
        if (!ref) return { kind: 'error', message: '--ref needs a branch, tag or commit' };
        break;
      case '--path':
        path = value();
        if (path === undefined) return { kind: 'error', message: '--path needs a folder of the repository' };
        break;
      case '--locked':
        locked = true;
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
  if ([url, command, git, index].filter((s) => s !== undefined).length !== 1)
    return {
      kind: 'error',
      message: 'name one server (--url URL, or -- COMMAND [ARG]...), one repository (--git URL) or one index (--index URL)',
    };
  if (git === undefined && (ref !== undefined || path !== undefined))
    return { kind: 'error', message: '--ref and --path are for --git sources' };
  if (git === undefined && index === undefined && locked) return { kind: 'error', message: '--locked is for --git and --index sources' };
  if (index !== undefined) {
    if (headerLines.length > 0) return { kind: 'error', message: '--header is for --url servers' };
    const at = indexUrl(index);
    if ('error' in at) return { kind: 'error', message: at.error };
    return { kind: 'pull', args: { skills, to, source: { index: at.url, locked }, headers: {}, force } };
  }
  if (git !== undefined) {
    let parsed: URL;
    try {
      parsed = new URL(git);
    } catch {
      return { kind: 'error', message: `--git ${JSON.stringify(git)} is not a URL (use https://, ssh:// or file://)` };
    }
    if (!['https:', 'ssh:', 'file:'].includes(parsed.protocol))
      return { kind: 'error', message: `--git must be https://, ssh:// or file:// (it is ${parsed.protocol})` };
    // Security: a ref starting with "-" could be read as an option by git.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: a ref holding a control character or a space is refused
    if (ref !== undefined && (ref.startsWith('-') || /[\x00-\x20\x7f]/.test(ref)))
      return { kind: 'error', message: `--ref ${JSON.stringify(ref)} is not a ref name` };
    const sub = (path ?? '').replace(/^\/+|\/+$/g, '');
    const check = sub === '' ? undefined : checkPathString(sub);
    if (check && !check.ok) return { kind: 'error', message: `--path ${JSON.stringify(path)}: ${check.why}` };
    if (headerLines.length > 0) return { kind: 'error', message: '--header is for --url servers' };
    return {
      kind: 'pull',
      args: { skills, to, source: { git, ref, path: check ? check.segments.join('/') : '', locked }, headers: {}, force },
    };
  }
  if (command !== undefined && command.length === 0) return { kind: 'error', message: 'a command is missing after --' };
  if (command !== undefined && headerLines.length > 0) return { kind: 'error', message: '--header is for --url servers' };
  if (url !== undefined) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { kind: 'error', message: `--url ${JSON.stringify(url)} is not a URL` };
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      return { kind: 'error', message: `--url must be http:// or https:// (it is ${parsed.protocol})` };
  }
  const headers = parseHeaders(headerLines);
  if (typeof headers === 'string') return { kind: 'error', message: headers };
  return { kind: 'pull', args: { skills, to, source: url !== undefined ? { url } : { command: command! }, headers, force } };
}
