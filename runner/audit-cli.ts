/**
 * @module `skill-mcp audit verify [--head ANCHOR] [FILE]` and `skill-mcp audit tail [-n N] [FILE]`:
 * an operator's view of the runner's audit log. FILE defaults to `$SKILL_MCP_AUDIT_LOG`, then
 * `$SKILL_MCP_STATE_DIR/audit.log`; ANCHOR to `$SKILL_MCP_STATE_DIR/audit.head`, then `audit.head`
 * beside FILE. Verify exits 0 when the chain is intact and the tail matches the anchor (or there is
 * no anchor for this log: a copy — it then says the tail is unanchored), and 1 naming the place when
 * a line was edited, inserted or deleted, the end was cut off or the log was rolled back; 2 on
 * usage errors.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ANCHOR_FILE, checkAnchor, describeMismatch, readAnchor } from './audit-anchor.js';
import type { TailEntry } from './audit-anchor.js';
import { lineHash, verifyAuditText } from './audit-log.js';

const USAGE = 'usage: skill-mcp audit verify [--head ANCHOR] [FILE] | skill-mcp audit tail [-n N] [FILE]';

function defaultFile(): string | undefined {
  const env = process.env;
  if (env['SKILL_MCP_AUDIT_LOG']) return env['SKILL_MCP_AUDIT_LOG'];
  if (env['SKILL_MCP_STATE_DIR']) return join(env['SKILL_MCP_STATE_DIR'], 'audit.log');
  return undefined;
}

/** One decision as a readable line: time, seq, event, then the interesting fields. */
function render(line: string): string {
  try {
    const { seq, ts, prev: _prev, event, ...rest } = JSON.parse(line) as Record<string, unknown>;
    const fields = Object.entries(rest).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
    return `${String(ts)} #${String(seq)} ${String(event)} ${fields.join(' ')}`;
  } catch {
    return `(unreadable line) ${line.slice(0, 200)}`;
  }
}

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

export async function auditMain(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  let count = 20;
  let head: string | undefined;
  let bad = false;
  const files: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    if (rest[i] === '-n' && command === 'tail') count = Number(rest[++i]);
    else if (rest[i] === '--head' && command === 'verify') {
      head = rest[++i];
      bad ||= head === undefined;
    } else files.push(rest[i]!);
  }
  const file = files[0] ?? defaultFile();
  if ((command !== 'verify' && command !== 'tail') || file === undefined || files.length > 1 || !(count > 0) || bad) {
    process.stderr.write(`${USAGE}\n(FILE defaults to $SKILL_MCP_AUDIT_LOG or $SKILL_MCP_STATE_DIR/audit.log)\n`);
    process.exitCode = 2;
    return;
  }
  const stateDir = process.env['SKILL_MCP_STATE_DIR'];
  const anchorPath = head ?? (stateDir ? join(stateDir, ANCHOR_FILE) : join(dirname(file), ANCHOR_FILE));
  // The anchor before the log: runners keep appending (and re-anchoring) while this reads, and a
  // log read first could end before an anchor read after it — a live log mistaken for a cut one.
  const anchor = command === 'verify' ? readAnchor(anchorPath) : undefined;
  const text = readFileSync(file, 'utf8');
  if (command === 'verify') {
    const outcome = verifyAuditText(text);
    if (outcome.ok) {
      const tail = verifyTail(file, text, head, anchorPath, anchor);
      process.stdout.write(tail.failed ? `${tail.message}\n` : `intact: ${outcome.lines} lines, chain unbroken; ${tail.message}\n`);
      if (tail.failed) process.exitCode = 1;
    } else {
      process.stdout.write(`BROKEN at line ${outcome.line}: ${outcome.why}\n`);
      process.exitCode = 1;
    }
    return;
  }
  const lines = text.split('\n').filter((l) => l !== '');
  for (const line of lines.slice(-count)) process.stdout.write(`${render(line)}\n`);
}
