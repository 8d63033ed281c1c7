/**
 * @module The audit log (SPEC §8): JSON lines, mode 0600, opened append-only, one line per decision.
 * Each line carries `seq` and `prev`, the sha256 of the previous line's bytes, so an edited,
 * inserted or deleted line breaks the chain at a place `skill-mcp audit verify` can name; after
 * every append the anchor (audit-anchor.ts) records the last line, so a cut-off end shows too.
 * Callers pass names, counts and hashes only: never token material or secret values.
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, fsyncSync, readSync, writeSync } from 'node:fs';
import { checkAnchor, readAnchor, writeAnchor } from './audit-anchor.js';
import type { AnchorCheck, TailEntry } from './audit-anchor.js';
import { openPrivateFile } from './state.js';

export const GENESIS_PREV = '0'.repeat(64);
const TAIL_BYTES = 256 * 1024;

/** The enumerated reasons of `run.reject` (stable for people and tools reading the log). */
export type RejectReason =
  | 'busy' | 'token-invalid' | 'token-expired' | 'token-reused' | 'draft-changed' | 'unknown-skill'
  | 'not-declared' | 'not-granted' | 'invalid-path' | 'not-found' | 'not-a-file' | 'outside-skill'
  | 'interpreter-unavailable' | 'environ-unscrubbed' | 'sandbox-failed';

export type AuditEvent =
  | { event: 'runner.start'; [key: string]: unknown }
  | { event: 'peer.refuse'; uid: number; gid: number; pid: number }
  | { event: 'run.prepare'; skill: string; script: string; token_id?: string; refused?: string }
  | { event: 'run.reject'; reason: RejectReason; skill?: string; script?: string; token_id?: string }
  | { event: 'run.accept'; run_id: string; token_id: string; skill: string; script: string; interpreter: string; argv: string[]; env_names: string[]; timeout_ms: number; isolation: string; uid: number }
  | { event: 'run.exit'; run_id: string; [key: string]: unknown };

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
  private seq = 0;
  private prev = GENESIS_PREV;
  /** How the log's tail compared with its anchor when it was opened. */
  readonly anchorFinding: AnchorFinding;

  /** `path` must be absolute (the anchor names it); `anchorPath` is `audit.head` in the state dir. */
  constructor(private readonly path: string, private readonly anchorPath: string) {
    // Security: O_APPEND means every write lands at the end, even if someone seeks the fd.
    this.fd = openPrivateFile(path, constants.O_RDWR | constants.O_APPEND | constants.O_CREAT);
    const lines = tailLines(this.fd);
    const last = lines[lines.length - 1];
    if (last !== undefined) {
      this.prev = lineHash(last);
      this.seq = seqOf(last) ?? 0; // a broken last line: continue, verify will report the break
    }
    this.anchorFinding = this.compareAnchor(lines);
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

  /** Appends one decision and fsyncs it. */
  append(entry: AuditEvent): void {
    this.seq += 1;
    const line = JSON.stringify({ seq: this.seq, ts: new Date().toISOString(), prev: this.prev, ...entry });
    writeSync(this.fd, `${line}\n`);
    fsyncSync(this.fd);
    this.prev = lineHash(line);
    writeAnchor(this.anchorPath, { v: 1, log: this.path, seq: this.seq, sha256: this.prev });
  }

  close(): void {
    closeSync(this.fd);
  }
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
