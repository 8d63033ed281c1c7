/**
 * @module `skill-mcp audit verify|tail|head|pubkey|query`: an operator's and an auditor's view of
 * the runner's audit log (docs/audit.md). FILE defaults to the log a standalone runner started
 * here writes (`$SKILL_MCP_AUDIT_LOG`, else `audit.log` in `$SKILL_MCP_STATE_DIR`, else in
 * `$XDG_STATE_HOME/skill-mcp` or `~/.local/state/skill-mcp`); its rotated segments come with it.
 */
import { readFileSync } from 'node:fs';
import { parseFlags, stringFlag, UsageError, wantsHelp, type FlagSpec } from '../../shared/cli-args.js';
import { auditLogOf, stateDirOf } from '../../shared/state-dir.js';
import { renderAuditLine } from './render.js';

export { EXIT_RUNS_OPEN } from './verify-cli.js';

export const AUDIT_USAGE = `usage: skill-mcp audit verify [FILE|-] [--public-key PEM] [--head HEAD]
       skill-mcp audit verify --redis URL [FILE]
       skill-mcp audit head [FILE]
       skill-mcp audit pubkey
       skill-mcp audit query [FILE|-|--redis URL] [--skill S] [--script S] [--subject WHO] [--outcome O]
                             [--since TIME] [--until TIME] [--run ID] [--json | --format text|json|ocsf]
       skill-mcp audit tail [-n N] [FILE]
       skill-mcp audit tail --redis URL [-n N] [-f]
  verify   check the hash chain across FILE's segments, every checkpoint's signature, that the
           copy reaches HEAD, the anchor (the runner's own log), and that every accepted run has
           its exit (exit 0 intact; 1 edited, reordered, cut, emptied, a segment missing, a
           signature bad or another key's, unsigned lines at the end of a copy checked with
           --public-key, or a run's result lost; 3 intact with runs still in progress; 2 usage)
  head     print the latest signed head (JSON) for an auditor to keep and pass to verify --head
  pubkey   print the runner's audit public key (PEM; from SKILL_MCP_STATE_DIR)
  query    print the lines matching every filter (--json: as JSON lines; --format ocsf: as OCSF
           1.3.0 events, one JSON object a line: runs, approvals, connections, egress requests); --outcome is one of
           accepted ok failed timeout cancelled error rejected prepared refused, or a reject reason
  tail     print the last N decisions (default 20), control characters escaped
  FILE     default: $SKILL_MCP_AUDIT_LOG, else audit.log in $SKILL_MCP_STATE_DIR, else in
           $XDG_STATE_HOME/skill-mcp or ~/.local/state/skill-mcp (the standalone runner's log);
           - reads stdin
  PEM      a public key file (or its PEM text); default: the local runner's own key
  HEAD     a signed head from audit head; a file that is not one is read as the runner's anchor
           (default: audit.head in $SKILL_MCP_STATE_DIR, else beside FILE)
  --redis URL  the stream every runner sharing that Redis mirrors its log into (all hosts):
           verify checks each host's chain and head, and with FILE where that local log and this
           host's lines in the stream diverge (host id: SKILL_MCP_AUDIT_HOST_ID or FILE's default); tail prints lines led by their
           host id, -f follows new ones; query reads every host's lines through its filters (with --format
           ocsf each event's device is the line's host). URL - reads $SKILL_MCP_REDIS_URL (keeps a password out of
           ps); SKILL_MCP_REDIS_PREFIX, SKILL_MCP_REDIS_CA_FILE and SKILL_MCP_AUDIT_HOST_ID apply`;

const FLAGS: Record<string, Record<string, FlagSpec>> = {
  verify: { head: { type: 'string' }, redis: { type: 'string' }, 'public-key': { type: 'string' } },
  tail: { n: { type: 'string', short: 'n', shortOnly: true }, redis: { type: 'string' }, follow: { type: 'boolean', short: 'f' } },
  head: {},
  pubkey: {},
  query: {
    skill: { type: 'string' },
    script: { type: 'string' },
    subject: { type: 'string' },
    outcome: { type: 'string' },
    since: { type: 'string' },
    until: { type: 'string' },
    run: { type: 'string' },
    json: { type: 'boolean' },
    format: { type: 'string' },
    redis: { type: 'string' },
  },
};

function usageError(message: string): void {
  process.stderr.write(`skill-mcp audit: ${message}\n${AUDIT_USAGE}\n`);
  process.exitCode = UsageError.EXIT;
}

function time(name: string, raw: string | undefined): number | undefined | { bad: string } {
  if (raw === undefined) return undefined;
  const at = Date.parse(raw);
  return Number.isNaN(at) ? { bad: `--${name} needs a time (ISO 8601, e.g. 2026-12-01 or 2026-12-01T10:00:00Z)` } : at;
}

export async function auditMain(argv: string[]): Promise<void> {
  if (wantsHelp(argv)) {
    process.stdout.write(`${AUDIT_USAGE}\n`);
    return;
  }
  const [command, ...rest] = argv;
  const flags = command === undefined ? undefined : FLAGS[command];
  if (!flags)
    return usageError(command === undefined ? 'say verify, head, pubkey, query or tail' : `unknown command ${JSON.stringify(command)}`);
  let parsed: ReturnType<typeof parseFlags>;
  try {
    parsed = parseFlags(rest, flags, { positionals: command !== 'pubkey' });
  } catch (error) {
    if (error instanceof UsageError) return usageError(error.message);
    throw error;
  }
  const v = parsed.values;
  const files = parsed.positionals;
  if (files.length > 1) return usageError('one FILE at most');
  const file = files[0] ?? auditLogOf(process.env);
  const redis = stringFlag(v, 'redis');
  switch (command) {
    case 'pubkey':
      return (await import('../../runner/audit/head.js')).pubkeyMain(stateDirOf(process.env));
    case 'head':
      return (await import('../../runner/audit/head.js')).headMain(file);
    case 'query': {
      const since = time('since', stringFlag(v, 'since'));
      const until = time('until', stringFlag(v, 'until'));
      if (typeof since === 'object') return usageError(since.bad);
      if (typeof until === 'object') return usageError(until.bad);
      const filter = {
        skill: stringFlag(v, 'skill'),
        script: stringFlag(v, 'script'),
        subject: stringFlag(v, 'subject'),
        outcome: stringFlag(v, 'outcome'),
        since,
        until,
        run: stringFlag(v, 'run'),
      };
      const format = stringFlag(v, 'format') ?? (v['json'] === true ? 'json' : 'text');
      if (format !== 'text' && format !== 'json' && format !== 'ocsf') return usageError('--format is one of text, json, ocsf');
      if (v['json'] === true && format !== 'json') return usageError('--json is --format json: give one of them');
      if (redis !== undefined) {
        if (files.length > 0) return usageError('--redis reads the stream: no FILE with it');
        return (await import('./redis-cli.js')).redisAuditMain('query', redis, { count: 0, follow: false, filter, format });
      }
      return (await import('./query.js')).queryMain(file, filter, format);
    }
    case 'verify': {
      const head = stringFlag(v, 'head');
      const publicKey = stringFlag(v, 'public-key');
      if (redis !== undefined) {
        if (head !== undefined || publicKey !== undefined) return usageError('--redis reads the stream: no --head or --public-key with it');
        return (await import('./redis-cli.js')).redisAuditMain('verify', redis, {
          count: 0,
          follow: false,
          ...(files[0] !== undefined ? { localLog: files[0] } : {}),
        });
      }
      return (await import('./verify-cli.js')).verifyMain(file, { publicKey, head, named: files.length > 0 }, process.env);
    }
    default:
      return tail(v, files, file, redis);
  }
}

async function tail(
  v: Record<string, string | boolean | undefined>,
  files: string[],
  file: string,
  redis: string | undefined,
): Promise<void> {
  const count = Number(stringFlag(v, 'n') ?? 20);
  const follow = v['follow'] === true;
  if (!(Number.isSafeInteger(count) && count > 0)) return usageError('-n needs a positive whole number');
  if (redis !== undefined) {
    if (files.length > 0) return usageError('--redis reads the stream: no FILE with it');
    return (await import('./redis-cli.js')).redisAuditMain('tail', redis, { count, follow });
  }
  if (follow) return usageError('-f follows the Redis stream: use it with --redis URL');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    process.stderr.write(
      `skill-mcp audit: cannot read ${file} (${code ?? String(error)})${files.length === 0 ? '; name the log as FILE, or set SKILL_MCP_AUDIT_LOG or SKILL_MCP_STATE_DIR' : ''}\n`,
    );
    process.exitCode = 1;
    return;
  }
  const lines = text.split('\n').filter((l) => l !== '');
  for (const line of lines.slice(-count)) process.stdout.write(`${renderAuditLine(line)}\n`);
}
