/**
 * @module `skill-mcp audit verify [--head ANCHOR] [FILE]` and `skill-mcp audit tail [-n N] [FILE]`:
 * an operator's view of the runner's audit log. FILE defaults to the log a standalone runner
 * started here writes (`$SKILL_MCP_AUDIT_LOG`, else `audit.log` in `$SKILL_MCP_STATE_DIR`, else in
 * `$XDG_STATE_HOME/skill-mcp` or `~/.local/state/skill-mcp`); ANCHOR to `audit.head` in
 * `$SKILL_MCP_STATE_DIR`, else beside FILE.
 *
 * Verify exits 0 when the chain is intact, the tail matches the anchor (or there is no anchor for
 * this log: a copy — it then says the tail is unanchored) and every accepted run has its exit; 1
 * naming the place when a line was edited, inserted or deleted, the end was cut off, the log was
 * rolled back, or a run's result was lost; 3 when all that holds but runs are still in progress on
 * a live runner; 2 on usage errors.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseFlags, stringFlag, UsageError, wantsHelp, type FlagSpec } from '../../shared/cli-args.js';
import { auditLogOf } from '../../shared/state-dir.js';
import { ANCHOR_FILE, checkAnchor, describeMismatch, readAnchor } from './anchor.js';
import type { TailEntry } from './anchor.js';
import { lineHash, verifyAuditText } from './log.js';
import { escapeControls, renderAuditLine } from './render.js';
import { isLiveRunner, unfinishedRuns } from './runs.js';

export const AUDIT_USAGE = `usage: skill-mcp audit verify [--head ANCHOR] [FILE]
       skill-mcp audit tail [-n N] [FILE]
       skill-mcp audit verify --redis URL
       skill-mcp audit tail --redis URL [-n N] [-f]
  verify   check the hash chain, the anchor, and that every accepted run has its exit
           (exit 0 intact; 1 tampered, cut, rolled back or a run's result lost; 3 intact with runs
           still in progress; 2 usage)
  tail     print the last N decisions (default 20), control characters escaped
  FILE     default: $SKILL_MCP_AUDIT_LOG, else audit.log in $SKILL_MCP_STATE_DIR, else in
           $XDG_STATE_HOME/skill-mcp or ~/.local/state/skill-mcp (the standalone runner's log)
  ANCHOR   default: audit.head in $SKILL_MCP_STATE_DIR, else beside FILE
  --redis URL  the stream every runner sharing that Redis mirrors its log into (all hosts):
           verify checks each host's chain and head; tail prints lines led by their host id,
           -f follows new ones. URL - reads $SKILL_MCP_REDIS_URL (keeps a password out of ps);
           SKILL_MCP_REDIS_PREFIX and SKILL_MCP_REDIS_CA_FILE apply as for the runner`;

const VERIFY_FLAGS: Record<string, FlagSpec> = { head: { type: 'string' }, redis: { type: 'string' } };
const TAIL_FLAGS: Record<string, FlagSpec> = { n: { type: 'string', short: 'n', shortOnly: true }, redis: { type: 'string' }, follow: { type: 'boolean', short: 'f' } };

/** Exit status of `verify` when the log is intact but runs are still in progress. */
export const EXIT_RUNS_OPEN = 3;

function realOrResolved(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/**
 * Checks the end of a log whose chain is intact. Returns the line to print and whether it failed.
 * Security: a `runner.start` line recording a mismatch stays a failure forever — the runner found
 * the log cut (or rolled back) before it re-anchored it, and that line is the only trace left.
 */
function verifyTail(file: string, text: string, headFlag: string | undefined, anchorPath: string, anchor: ReturnType<typeof readAnchor>): { message: string; failed: boolean } {
  const entries: TailEntry[] = [];
  const lines = text === '' ? [] : text.slice(0, -1).split('\n');
  for (const [i, line] of lines.entries()) {
    const entry = JSON.parse(line) as { seq: number; event?: unknown; audit_anchor?: unknown; audit_anchor_seq?: unknown; audit_log_last_seq?: unknown };
    entries.push({ line: i + 1, seq: entry.seq, sha256: lineHash(line) });
    if (entry.event === 'runner.start' && (entry.audit_anchor === 'truncated' || entry.audit_anchor === 'replaced')) {
      const [label, what] = entry.audit_anchor === 'truncated' ? ['TRUNCATED', 'cut off'] : ['ROLLED BACK', 'rolled back or rewritten'];
      return { message: `${label} before line ${i + 1}: the runner found at its start (line ${i + 1}) that the log had been ${what} — it ended at seq ${String(entry.audit_log_last_seq)}, the runner had last written seq ${String(entry.audit_anchor_seq)}`, failed: true };
    }
  }
  if (anchor === undefined || 'unreadable' in anchor) {
    const why = anchor === undefined ? `no anchor at ${anchorPath}` : `the anchor at ${anchorPath} is unreadable (${anchor.unreadable})`;
    // An anchor the operator named must be there: its absence may be the tampering.
    if (headFlag !== undefined) return { message: `UNVERIFIED tail: ${why}`, failed: true };
    return { message: `tail unanchored (${why}): lines deleted from the end cannot be detected`, failed: false };
  }
  if (realOrResolved(anchor.log) !== realOrResolved(file)) {
    return { message: `tail unanchored (the anchor at ${anchorPath} is for ${anchor.log}): lines deleted from the end cannot be detected`, failed: false };
  }
  const check = checkAnchor(entries, anchor);
  const mismatch = describeMismatch(check);
  if (mismatch !== undefined) return { message: `${check.state === 'truncated' ? 'TRUNCATED' : 'ROLLED BACK'}: ${mismatch} (anchor ${anchorPath})`, failed: true };
  if (check.state === 'ahead') return { message: `tail anchored: ${check.extra} line(s) after the anchored seq ${anchor.seq} (appended by a live runner since the anchor was read, or a runner stopped between writing the log and its anchor)`, failed: false };
  return { message: `tail matches the anchor (seq ${anchor.seq})`, failed: false };
}

function usageError(message: string): void {
  process.stderr.write(`skill-mcp audit: ${message}\n${AUDIT_USAGE}\n`);
  process.exitCode = UsageError.EXIT;
}

export async function auditMain(argv: string[]): Promise<void> {
  if (wantsHelp(argv)) {
    process.stdout.write(`${AUDIT_USAGE}\n`);
    return;
  }
  const [command, ...rest] = argv;
  if (command !== 'verify' && command !== 'tail') return usageError(command === undefined ? 'say verify or tail' : `unknown command ${JSON.stringify(command)}`);
  let parsed;
  try {
    parsed = parseFlags(rest, command === 'verify' ? VERIFY_FLAGS : TAIL_FLAGS, { positionals: true });
  } catch (error) {
    if (error instanceof UsageError) return usageError(error.message);
    throw error;
  }
  const files = parsed.positionals;
  const head = stringFlag(parsed.values, 'head');
  const count = Number(stringFlag(parsed.values, 'n') ?? 20);
  const redis = stringFlag(parsed.values, 'redis');
  const follow = parsed.values['follow'] === true;
  if (files.length > 1) return usageError('one FILE at most');
  if (!(Number.isSafeInteger(count) && count > 0)) return usageError('-n needs a positive whole number');
  if (redis !== undefined) {
    if (files.length > 0 || head !== undefined) return usageError('--redis reads the stream: no FILE or --head with it');
    return (await import('./redis-cli.js')).redisAuditMain(command, redis, { count, follow });
  }
  if (follow) return usageError('-f follows the Redis stream: use it with --redis URL');
  const file = files[0] ?? auditLogOf(process.env);
  const stateDir = process.env['SKILL_MCP_STATE_DIR'];
  const anchorPath = head ?? (stateDir ? join(stateDir, ANCHOR_FILE) : join(dirname(file), ANCHOR_FILE));
  // The anchor before the log: runners keep appending (and re-anchoring) while this reads, and a
  // log read first could end before an anchor read after it — a live log mistaken for a cut one.
  const anchor = command === 'verify' ? readAnchor(anchorPath) : undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    process.stderr.write(`skill-mcp audit: cannot read ${file} (${code ?? String(error)})${files.length === 0 ? '; name the log as FILE, or set SKILL_MCP_AUDIT_LOG or SKILL_MCP_STATE_DIR' : ''}\n`);
    process.exitCode = 1;
    return;
  }
  if (command === 'tail') {
    const lines = text.split('\n').filter((l) => l !== '');
    for (const line of lines.slice(-count)) process.stdout.write(`${renderAuditLine(line)}\n`);
    return;
  }
  const outcome = verifyAuditText(text);
  if (!outcome.ok) {
    process.stdout.write(`BROKEN at line ${outcome.line}: ${outcome.why}\n`);
    process.exitCode = 1;
    return;
  }
  const tail = verifyTail(file, text, head, anchorPath, anchor);
  process.stdout.write(tail.failed ? `${tail.message}\n` : `intact: ${outcome.lines} lines, chain unbroken; ${tail.message}\n`);
  if (tail.failed) process.exitCode = 1;
  // Security: an intact chain with a run accepted and never closed means a script ran and what it
  // did is not on record; a verify that called that log clean would hide it.
  const runs = unfinishedRuns(text === '' ? [] : text.slice(0, -1).split('\n'), Date.now(), isLiveRunner);
  for (const run of runs) {
    const what = `run ${run.runId} (line ${run.line}, ${run.ts}, skill ${escapeControls(JSON.stringify(run.skill))}, script ${escapeControls(JSON.stringify(run.script))})`;
    process.stdout.write(run.state === 'lost' ? `LOST ${what}: accepted, no run.exit, and ${run.why} — its result is not on record\n` : `OPEN ${what}: accepted, no run.exit yet; ${run.why}\n`);
  }
  if (runs.some((r) => r.state === 'lost')) process.exitCode = 1;
  else if (runs.length > 0 && process.exitCode === undefined) process.exitCode = EXIT_RUNS_OPEN;
}
