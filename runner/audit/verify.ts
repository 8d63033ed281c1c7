/**
 * @module Checks a log as an auditor holds it — segments in order, or one stream — a line at a
 * time in bounded memory (docs/audit.md "How to hand the log to an auditor"): the chain (`seq`
 * one more than the line before, `prev` its sha256), each `audit.segment` line continuing the
 * segment before it, each `audit.checkpoint` signature under the given public keys, and with a
 * signed head, that the copy reaches the line the head vouches for. Stops at the first bad line
 * and names it (file, line number, seq).
 *
 * What a copy alone can prove: everything up to its last signed checkpoint. Lines after it are
 * reported as unsigned (a copy cut there shows as such). A copy cut exactly after a checkpoint
 * looks like a log that ended there: only a head kept from earlier (`--head`), or the anchor on the
 * runner's machine, shows that lines are missing after it.
 */
import type { KeyObject } from 'node:crypto';
import { GENESIS_PREV, lineHash } from './chain.js';
import { headSignedBy, type SignedHead } from './signing.js';

/** The fields a line's prefix holds, as the writer lays them out (`{"seq":…,"ts":"…","prev":"…","event":"…"`). */
const PREFIX = /^\{"seq":(\d{1,15}),"ts":"([^"\\]{1,40})","prev":"([0-9a-f]{64})","event":"([a-z.]{1,40})"/;
/** Events whose other fields verify reads (everything else needs only its prefix: the chain covers its bytes). */
const READ_WHOLE = new Set(['audit.checkpoint', 'audit.segment', 'runner.start']);
/** Events whose run id verify needs (to pair each accept with its end); read by pattern, not parsed. */
const RUN_EVENTS = new Set(['run.accept', 'run.exit', 'run.reject']);
/**
 * The first `"run_id":"…"` of a line. Security: a value holding that text is written escaped
 * (`\"run_id\":\"`), so only the field itself matches.
 */
const RUN_ID = /"run_id":"([0-9a-f]{1,64})"/;

export interface VerifyOptions {
  /** Public keys by key id; empty: signatures are not checked (reported). */
  keys: Map<string, KeyObject>;
  head?: SignedHead | undefined;
  /** Record where the line with this seq is and its sha256 (the anchor check). */
  watchSeq?: number;
}

export interface Failure {
  file: string;
  line: number;
  seq?: number;
  why: string;
}

export interface VerifyReport {
  ok: boolean;
  failure?: Failure;
  lines: number;
  firstSeq?: number;
  lastSeq?: number;
  /** Line number (in its file) of the last line. */
  lastLine: number;
  watched?: { line: number; sha256: string };
  /** The seq of the last line a signature covers (the line before the last checkpoint). */
  signedThrough?: number;
  checkpoints: number;
  /** Lines after the last checkpoint (not covered by a signature). */
  unsigned: number;
  /** Checkpoints whose key was not given (signature not checked). */
  unchecked: number;
  headReached: boolean;
  /** What the log says about segments before its first line. */
  startsAfter?: { previous: string; seq: number; removedByRetention: boolean };
  /** Accepted runs with no exit or reject (run id → where its accept is, and the accept line itself). */
  openRuns: Map<string, { file: string; line: number; accept: Buffer }>;
  /** `runner.start` lines that recorded the log cut or rolled back before them. */
  startFindings: { file: string; line: number; state: string; anchorSeq: unknown; lastSeq: unknown }[];
}

interface Parsed {
  seq: number;
  ts: string;
  prev: string;
  event: string;
  body?: Record<string, unknown>;
}

function parse(bytes: Buffer): Parsed | undefined {
  // The prefix is ASCII: read from the first bytes alone; the whole line is decoded only when needed.
  const m = PREFIX.exec(bytes.toString('latin1', 0, Math.min(bytes.length, 256)));
  if (m && !READ_WHOLE.has(m[4]!)) return { seq: Number(m[1]), ts: m[2]!, prev: m[3]!, event: m[4]! };
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (body === null || typeof body !== 'object' || typeof body['seq'] !== 'number' || typeof body['prev'] !== 'string') return undefined;
  return { seq: body['seq'], ts: String(body['ts']), prev: body['prev'], event: String(body['event']), body };
}

export class ChainVerifier {
  readonly report: VerifyReport = {
    ok: true,
    lines: 0,
    lastLine: 0,
    checkpoints: 0,
    unsigned: 0,
    unchecked: 0,
    headReached: false,
    openRuns: new Map(),
    startFindings: [],
  };
  #prevHash: string | undefined;
  #prevSeq: number | undefined;
  #file = '';
  #lineNo = 0;
  #fileFirst = true;
  #previousFile: string | undefined;
  readonly #removed = new Set<string>();

  constructor(private readonly opts: VerifyOptions) {}

  get failed(): boolean {
    return !this.report.ok;
  }

  private fail(why: string, seq?: number): void {
    if (!this.report.ok) return;
    this.report.ok = false;
    this.report.failure = { file: this.#file, line: this.#lineNo, ...(seq !== undefined ? { seq } : {}), why };
  }

  /** Starts the next segment (files in order, oldest first). */
  file(name: string): void {
    this.#previousFile = this.#file === '' ? undefined : this.#file;
    this.#file = name;
    this.#lineNo = 0;
    this.#fileFirst = true;
  }

  line(bytes: Buffer, torn: boolean): void {
    if (!this.report.ok) return;
    this.#lineNo += 1;
    if (torn) {
      this.fail('the last line is incomplete (no newline): the copy was cut mid-line or a write was torn');
      return;
    }
    const p = parse(bytes);
    if (p === undefined) {
      this.fail('not a line of this log (not JSON, or no seq and prev)');
      return;
    }
    const r = this.report;
    const first = this.#prevSeq === undefined;
    if (first) {
      if (p.seq === 1 && p.prev === GENESIS_PREV) {
        // the log's very first line
      } else if (p.event === 'audit.segment' && p.body) {
        r.startsAfter = { previous: String(p.body['previous']), seq: Number(p.body['previous_seq']), removedByRetention: false };
        if (p.prev !== p.body['previous_sha256'] || p.seq !== Number(p.body['previous_seq']) + 1) {
          this.fail('an audit.segment line that does not continue the segment it names', p.seq);
          return;
        }
      } else {
        this.fail('the first line does not start the chain (lines before it were deleted)', p.seq);
        return;
      }
      r.firstSeq = p.seq;
    } else {
      if (this.#fileFirst && p.event === 'audit.segment' && p.body && p.body['previous_seq'] !== this.#prevSeq) {
        this.fail(
          `a segment is missing: this one continues ${String(p.body['previous'])} at seq ${String(p.body['previous_seq'])}, but the segment before it (${this.#previousFile ?? '?'}) ends at seq ${this.#prevSeq}`,
          p.seq,
        );
        return;
      }
      if (this.#fileFirst && p.event !== 'audit.segment') {
        this.fail(
          `this segment does not start with an audit.segment line continuing ${this.#previousFile ?? 'the one before'}: segments are out of order or one was replaced`,
          p.seq,
        );
        return;
      }
      if (p.seq !== this.#prevSeq! + 1) {
        this.fail(`seq ${p.seq} follows ${this.#prevSeq} (a line was deleted, inserted or moved)`, p.seq);
        return;
      }
      if (p.prev !== this.#prevHash) {
        this.fail('prev does not match the sha256 of the line before (that line was edited, or lines were reordered)', p.seq);
        return;
      }
    }
    this.#fileFirst = false;
    this.#prevSeq = p.seq;
    this.#prevHash = lineHash(bytes);
    r.lines += 1;
    r.lastSeq = p.seq;
    r.lastLine = this.#lineNo;
    r.unsigned += 1;
    if (p.seq === this.opts.watchSeq) r.watched = { line: this.#lineNo, sha256: this.#prevHash };
    const head = this.opts.head;
    if (head && p.seq === head.seq) {
      if (this.#prevHash !== head.sha256) {
        this.fail(`line seq ${p.seq} is not the line the head vouches for (the copy was rewritten or rolled back)`, p.seq);
        return;
      }
      r.headReached = true;
    }
    if (p.body) this.content(p);
    else if (RUN_EVENTS.has(p.event)) {
      const runId = RUN_ID.exec(bytes.toString('latin1'))?.[1];
      if (runId === undefined) return;
      if (p.event === 'run.accept') r.openRuns.set(runId, { file: this.#file, line: this.#lineNo, accept: Buffer.from(bytes) });
      else r.openRuns.delete(runId);
    }
  }

  private content(p: Parsed): void {
    const b = p.body!;
    const r = this.report;
    if (p.event === 'audit.checkpoint') {
      if (b['head_seq'] !== p.seq - 1 || b['head_sha256'] !== p.prev) {
        this.fail('a checkpoint that does not vouch for the line before it', p.seq);
        return;
      }
      const key = this.opts.keys.get(String(b['key_id']));
      if (key === undefined) {
        if (this.opts.keys.size > 0) {
          this.fail(`a checkpoint signed by key ${String(b['key_id'])}, not by the public key given`, p.seq);
          return;
        }
        r.unchecked += 1;
      } else if (!headSignedBy({ seq: p.seq - 1, sha256: p.prev, ts: p.ts, key_id: String(b['key_id']), sig: String(b['sig']) }, key)) {
        this.fail('a checkpoint whose signature does not verify (the checkpoint or the line it covers was forged)', p.seq);
        return;
      }
      r.checkpoints += 1;
      r.signedThrough = p.seq - 1;
      r.unsigned = 0;
    } else if (p.event === 'audit.segment' && Array.isArray(b['removed'])) {
      for (const name of b['removed']) this.#removed.add(String(name));
    } else if (p.event === 'runner.start' && (b['audit_anchor'] === 'truncated' || b['audit_anchor'] === 'replaced')) {
      r.startFindings.push({
        file: this.#file,
        line: this.#lineNo,
        state: String(b['audit_anchor']),
        anchorSeq: b['audit_anchor_seq'],
        lastSeq: b['audit_log_last_seq'],
      });
    }
  }

  /** Ends the check: an empty copy (unless `allowEmpty`: the runner's own log, judged by its anchor) and an unreached head are failures. */
  end(options: { allowEmpty?: boolean } = {}): VerifyReport {
    const r = this.report;
    if (!r.ok) return r;
    if (r.lines === 0 && !options.allowEmpty) {
      this.fail('the copy is empty: a log always holds lines, so it was emptied or is the wrong file');
      return r;
    }
    if (r.startsAfter) r.startsAfter.removedByRetention = this.#removed.has(r.startsAfter.previous);
    const head = this.opts.head;
    if (head && !r.headReached) {
      this.#lineNo += 1;
      this.fail(
        `the copy ends at seq ${r.lastSeq} but the head vouches for seq ${head.seq}: the copy was cut (lines after line ${this.#lineNo - 1} are missing)`,
        (r.lastSeq ?? 0) + 1,
      );
    }
    return r;
  }
}

/** Checks the chain of one log's whole text (the Redis stream's lines of one host). Line numbers are 1-based. */
export function verifyAuditText(text: string): { ok: true; lines: number } | { ok: false; line: number; why: string } {
  const verifier = new ChainVerifier({ keys: new Map() });
  verifier.file('stream');
  const lines = text.split('\n');
  const last = lines.pop()!;
  for (const line of lines) verifier.line(Buffer.from(line), false);
  if (last !== '') verifier.line(Buffer.from(last), true);
  const r = verifier.end();
  return r.ok ? { ok: true, lines: r.lines } : { ok: false, line: r.failure!.line, why: r.failure!.why };
}
