/**
 * @module The audit log (docs/architecture.md §8): JSON lines, mode 0600, opened append-only, one line per decision.
 * Each line carries `seq` and `prev`, the sha256 of the previous line's bytes, so an edited,
 * inserted or deleted line breaks the chain at a place `skill-mcp audit verify` can name; after
 * every append the anchor (runner/audit/anchor.ts) records the last line, so a cut-off end shows too.
 * Several runners may share one log (standalone: one runner per `skill-mcp`, one state directory),
 * so nothing about the chain is kept in memory: each append takes the state directory's audit lock
 * (file-lock.ts), reads the log's last line for `seq` and `prev`, appends, fsyncs, re-anchors and
 * releases. Callers pass names, counts and hashes only: never token material or secret values.
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, fsyncSync, readSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { checkAnchor, readAnchor, writeAnchor } from './anchor.js';
import type { AnchorCheck, TailEntry } from './anchor.js';
import type { EgressRecord } from '../egress/proxy.js';
import type { Identity } from '../../shared/protocol.js';
import { removeLockLeftovers, withLock } from '../file-lock.js';
import { openPrivateFile } from '../state.js';

export const GENESIS_PREV = '0'.repeat(64);
export const AUDIT_LOCK_FILE = 'audit.lock';
const TAIL_BYTES = 256 * 1024;
/** First window read back from the end for the last line (grown until it holds one whole line). */
const LAST_LINE_BYTES = 4096;

/** The enumerated reasons of `run.reject` (stable for people and tools reading the log). */
export type RejectReason =
  | 'busy' | 'token-invalid' | 'token-expired' | 'token-reused' | 'draft-changed' | 'unknown-skill'
  | 'not-declared' | 'not-granted' | 'invalid-path' | 'not-found' | 'not-a-file' | 'outside-skill'
  | 'interpreter-unavailable' | 'environ-unscrubbed' | 'sandbox-failed' | 'too-large' | 'content-unreadable' | 'cancelled' | 'ledger-unavailable';

export type AuditEvent =
  | { event: 'runner.start'; [key: string]: unknown }
  | { event: 'peer.refuse'; uid: number; gid: number; pid: number; reason?: 'front-secret' }
  | { event: 'run.prepare'; skill: string; script: string; token_id?: string; refused?: string; requester?: Identity; traceparent?: string }
  | { event: 'run.reject'; reason: RejectReason; skill?: string; script?: string; token_id?: string; client?: string; running?: number; max_runs?: number; queued?: number; client_running?: number; client_share?: number; waited_ms?: number; requester?: Identity; traceparent?: string }
  | { event: 'run.wait'; run_id: string; skill: string; script: string; client: string; running: number; queued: number; requester?: Identity; traceparent?: string }
  | { event: 'run.accept'; run_id: string; runner_pid: number; token_id: string; skill: string; script: string; interpreter: string; argv: string[]; env_names: string[]; timeout_ms: number; isolation: string; sandbox: string[]; memory_bytes: number; uid: number; script_sha256?: string; files_sha256?: string; egress?: string[]; egress_mode?: string; client?: string; queued_ms?: number; runs_in_progress?: number; requester?: Identity; traceparent?: string }
  | { event: 'run.exit'; run_id: string; [key: string]: unknown }
  | ({ event: 'egress'; run_id: string } & EgressRecord)
  | { event: 'ledger.unavailable'; ledger: 'redis'; redis: string; why: string }
  | { event: 'ledger.restored'; ledger: 'redis'; redis: string; down_ms: number }
  | { event: 'token.released'; token_id: string };

export function lineHash(line: string): string {
  return createHash('sha256').update(line).digest('hex');
}

/** The complete lines at the end of the file, at most TAIL_BYTES of them (to continue the chain). */
function tailLines(fd: number): string[] {
  const size = fstatSync(fd).size;
  if (size === 0) return [];
  const length = Math.min(size, TAIL_BYTES);
  const buf = Buffer.alloc(length);
  readSync(fd, buf, 0, length, size - length);
  const lines = buf.toString('utf8').replace(/\n$/, '').split('\n');
  if (length < size) lines.shift(); // the window may start mid-line
  return lines;
}

/** The log's last line (without its newline), and whether the file ends mid-line (a torn write). */
function lastLine(fd: number): { line: string | undefined; torn: boolean } {
  const size = fstatSync(fd).size;
  if (size === 0) return { line: undefined, torn: false };
  for (let length = Math.min(size, LAST_LINE_BYTES); ; length = Math.min(size, length * 4)) {
    const buf = Buffer.alloc(length);
    readSync(fd, buf, 0, length, size - length);
    const torn = buf[length - 1] !== 0x0a;
    const end = torn ? length : length - 1;
    const start = buf.lastIndexOf(0x0a, end - 1) + 1;
    if (start > 0 || length === size) return { line: buf.subarray(start, end).toString('utf8'), torn };
  }
}

function seqOf(line: string): number | undefined {
  try {
    const seq = (JSON.parse(line) as { seq?: unknown }).seq;
    return typeof seq === 'number' && Number.isSafeInteger(seq) ? seq : undefined;
  } catch {
    return undefined; // a broken line: verify reports it
  }
}

/** What the runner found when it compared the log it opened with the anchor (for `runner.start`). */
export interface AnchorFinding {
  audit_anchor: AnchorCheck['state'] | 'none' | 'other-log' | 'unreadable';
  audit_anchor_seq?: number;
  audit_log_last_seq?: number;
}

export class AuditLog {
  private readonly fd: number;
  private readonly lockPath: string;
  /** How the log's tail compared with its anchor when it was opened. */
  readonly anchorFinding: AnchorFinding;
  /** Called after each append, outside the lock (the Redis stream mirror reads the log from there). */
  afterAppend: (() => void) | undefined = undefined;

  /** `path` must be absolute (the anchor names it); `anchorPath` is `audit.head` in the state dir. */
  constructor(private readonly path: string, private readonly anchorPath: string) {
    // Security: O_APPEND means every write lands at the end, even if someone seeks the fd.
    this.fd = openPrivateFile(path, constants.O_RDWR | constants.O_APPEND | constants.O_CREAT);
    this.lockPath = join(dirname(anchorPath), AUDIT_LOCK_FILE);
    removeLockLeftovers(this.lockPath);
    // Security: under the lock, so the tail and the anchor are read as the last appender left
    // them: lines another live runner appended come with their anchor and are not mistaken for a
    // rollback, while a log cut while no runner held the lock still shows.
    this.anchorFinding = withLock(this.lockPath, () => this.compareAnchor(tailLines(this.fd)));
  }

  /**
   * Security: checked before the first append rewrites the anchor — otherwise a log truncated while
   * the runner was stopped would be re-anchored at its new end and the deletion would leave no trace.
   * The finding goes into `runner.start`, inside the chain, where `audit verify` reports it.
   */
  private compareAnchor(lines: string[]): AnchorFinding {
    const anchor = readAnchor(this.anchorPath);
    if (anchor === undefined) return { audit_anchor: 'none' };
    if ('unreadable' in anchor) return { audit_anchor: 'unreadable' };
    if (anchor.log !== this.path) return { audit_anchor: 'other-log' };
    const entries: TailEntry[] = [];
    lines.forEach((line, i) => {
      const seq = seqOf(line);
      if (seq !== undefined) entries.push({ line: i + 1, seq, sha256: lineHash(line) });
    });
    const check = checkAnchor(entries, anchor);
    return { audit_anchor: check.state, audit_anchor_seq: anchor.seq, audit_log_last_seq: entries[entries.length - 1]?.seq ?? 0 };
  }

  /**
   * Appends one decision and fsyncs it. Security: seq and prev come from the file, read under the
   * lock — kept in memory, two runners on one log would write duplicate seqs and break the chain.
   */
  append(entry: AuditEvent): void {
    withLock(this.lockPath, () => {
      const { line: last, torn } = lastLine(this.fd);
      // A broken last line (verify reports it) continues after the last line that has a seq.
      const seq = (last === undefined ? 0 : seqOf(last) ?? lastSeq(tailLines(this.fd))) + 1;
      const line = JSON.stringify({ seq, ts: new Date().toISOString(), prev: last === undefined ? GENESIS_PREV : lineHash(last), ...entry });
      // A line torn by a crash stays a line of its own (verify names it) instead of swallowing this one.
      writeSync(this.fd, `${torn ? '\n' : ''}${line}\n`);
      fsyncSync(this.fd);
      writeAnchor(this.anchorPath, { v: 1, log: this.path, seq, sha256: lineHash(line) });
    });
    this.afterAppend?.();
  }

  close(): void {
    closeSync(this.fd);
  }
}

function lastSeq(lines: string[]): number {
  for (let i = lines.length - 1; i >= 0; i--) {
    const seq = seqOf(lines[i]!);
    if (seq !== undefined) return seq;
  }
  return 0;
}

export type VerifyOutcome = { ok: true; lines: number } | { ok: false; line: number; why: string };

/** Checks the chain of a whole log's text. Line numbers are 1-based. */
export function verifyAuditText(text: string): VerifyOutcome {
  if (text === '') return { ok: true, lines: 0 };
  if (!text.endsWith('\n')) return { ok: false, line: text.split('\n').length, why: 'the last line is incomplete (no newline)' };
  const lines = text.slice(0, -1).split('\n');
  let prev: string | undefined;
  let prevSeq: number | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    let entry: { seq?: unknown; prev?: unknown };
    try {
      entry = JSON.parse(line) as { seq?: unknown; prev?: unknown };
    } catch {
      return { ok: false, line: i + 1, why: 'not a JSON line' };
    }
    if (typeof entry.seq !== 'number' || typeof entry.prev !== 'string') return { ok: false, line: i + 1, why: 'no seq or prev field' };
    if (prevSeq !== undefined && entry.seq !== prevSeq + 1) return { ok: false, line: i + 1, why: `seq ${entry.seq} follows ${prevSeq} (a line was deleted or inserted)` };
    if (prev !== undefined && entry.prev !== prev) return { ok: false, line: i + 1, why: 'prev does not match the sha256 of the line before (that line was edited)' };
    if (prev === undefined && (entry.seq !== 1 || entry.prev !== GENESIS_PREV)) return { ok: false, line: i + 1, why: 'the first line does not start the chain (lines before it were deleted)' };
    prev = lineHash(line);
    prevSeq = entry.seq;
  }
  return { ok: true, lines: lines.length };
}
