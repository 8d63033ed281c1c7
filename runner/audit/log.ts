/**
 * @module The audit log (docs/audit.md, docs/architecture.md §8): JSON lines, 0600, opened
 * append-only, one line per decision. Each line carries `seq` and `prev`, the sha256 of the line
 * before, so an edited, inserted or deleted line breaks the chain where `skill-mcp audit verify`
 * can name it; signed checkpoints (runner/audit/signing.ts) after every decided run and at stop let
 * a copy be checked with the public key alone; the anchor (anchor.ts) records the last line.
 *
 * Writing never crashes the runner and never drops a decided line. Lines wait in one queue, in
 * decision order, and are written in batches: under the state directory's audit lock (several
 * runners may share one log) the batch gets its seqs from the file's last line and is written;
 * then it is fsynced (asynchronously) and anchored. A `commit` goes ahead once its batch's fsync
 * returned — the line is on disk, which is what it guards — and the anchor is written after it (temp
 * file staged and fsynced once the log's fsync returned, renamed, the folder fsynced: anchor.ts) before
 * the next batch; a crash in between leaves what a crash between fsync and anchor always left (the
 * log one batch ahead, recorded at the next start). An `append` resolves once the anchor is
 * renamed into place (before the folder's fsync, which only makes the rename survive a power cut),
 * so an answer that waited for its lines finds the anchor naming them.
 * When a write fails (ENOSPC, EIO, EACCES):
 *   - a `commit` (the line a run or a token needs before it may go ahead) is refused at once with
 *     AUDIT_UNAVAILABLE: nothing runs whose accept line is not on disk;
 *   - every other line stays queued, retried with back-off and at each new line; the lines of an
 *     accepted run (its egress lines, its exit) are never dropped, others only past MAX_PENDING;
 *   - the first batch written again starts with an `audit.gap` line: when the outage began and
 *     ended, how many lines were written late, how many lost (and of which events), how many
 *     commits were refused.
 * `runner.start` is written before this runner's first line (a runner that only answered
 * describes leaves no line), `runner.stop` at close.
 */
import { closeSync, constants, fdatasync, fstatSync, fsyncSync, ftruncateSync, statSync, writeSync } from 'node:fs';
import { dirname, basename, join } from 'node:path';
import { promisify } from 'node:util';
import { SkillMcpError } from '../../shared/errors.js';
import { checkAnchor, publishAnchor, readAnchor, stageAnchor } from './anchor.js';
import type { AuditAnchor } from './anchor.js';
import type { AnchorCheck, TailEntry } from './anchor.js';
import { firstLine, GENESIS_PREV, lastLine, lastSeq, lineHash, seqOf, tailLines } from './chain.js';
import { CHECKPOINT_AFTER, KEPT_EVENTS } from './events.js';
import type { AuditEvent, WriterEvent } from './events.js';
import { latestSegmentEnd, retentionVictims, rotate, settleRotation, type RotationPoint } from './segments.js';
import type { AuditSigner } from './signing.js';
import { removeLockLeftovers, withLock, withLockAsync } from '../file-lock.js';
import { openPrivateFile } from '../state.js';

export { GENESIS_PREV, lineHash } from './chain.js';
export type { AuditEvent, RejectReason, RunInputsAudit } from './events.js';
export const AUDIT_LOCK_FILE = 'audit.lock';

/** Lines written in one batch (one lock, one write, one fsync). */
const BATCH_LINES = 256;
/** Lines kept waiting while the log cannot be written; past it, droppable lines are lost (and counted). */
export const MAX_PENDING = 10_000;
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 5_000;

const syncData = promisify(fdatasync);

/** Where a test may make a write fail (`fault` throws there) or stop the process. */
export type FaultPoint = 'write' | 'sync' | RotationPoint;

export interface AuditLogOptions {
  /** Absolute path of the live segment (the anchor names it). */
  path: string;
  /** `audit.head` in the state directory. */
  anchorPath: string;
  signer?: AuditSigner | undefined;
  /** Rotate before the live segment would grow past this many bytes. */
  maxBytes?: number | undefined;
  /** Rotated segments kept (the oldest beyond are removed, and named in the next segment's first line). */
  keep?: number | undefined;
  /** Tests only: called at each point a write can fail; throwing there is that failure. */
  fault?: ((point: FaultPoint) => void) | undefined;
  /** Said once per kind of trouble (stderr). */
  warn?: ((message: string) => void) | undefined;
}

/** What the runner found when it compared the log it opened with the anchor (for `runner.start`). */
export interface AnchorFinding {
  audit_anchor: AnchorCheck['state'] | 'none' | 'other-log' | 'unreadable';
  audit_anchor_seq?: number;
  audit_log_last_seq?: number;
}

interface Pending {
  fields: Record<string, unknown> & { event: string };
  ts: string;
  commit?: { resolve: () => void; reject: (error: Error) => void };
  /** Resolve `done` once the line is on disk, not only once the anchor names it ({@link AuditLog.appendDurable}). */
  early?: boolean;
  /** For `append`: resolves when the line is written, or at the first failed attempt (it then waits on). */
  done?: () => void;
}

interface Outage {
  from: string;
  error: string;
  lost: number;
  lostEvents: Record<string, number>;
  delayed: number;
  refused: number;
}

function errnoOf(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message.slice(0, 80) : 'error');
}

export class AuditLog {
  #fd: number;
  #ino: number;
  readonly #lockPath: string;
  readonly #queue: Pending[] = [];
  #draining: Promise<void> | undefined;
  #outage: Outage | undefined;
  #retry: NodeJS.Timeout | undefined;
  #retryMs = RETRY_FIRST_MS;
  #startLine: (() => AuditEvent) | undefined;
  #started = false;
  #closed = false;
  #linesWritten = 0;
  readonly #warned = new Set<string>();
  /** How the log's tail compared with its anchor when it was opened. */
  readonly anchorFinding: AnchorFinding;
  /** Called after each written batch (the Redis stream mirror reads the log from there). */
  afterAppend: (() => void) | undefined = undefined;

  constructor(private readonly opts: AuditLogOptions) {
    this.#lockPath = join(dirname(opts.anchorPath), AUDIT_LOCK_FILE);
    removeLockLeftovers(this.#lockPath);
    // Security: under the lock, so the tail and the anchor are read as the last appender left
    // them: lines another live runner appended come with their anchor and are not mistaken for a
    // rollback, while a log cut while no runner held the lock still shows.
    const opened = withLock(this.#lockPath, () => {
      settleRotation(opts.path);
      const fd = this.open();
      return { fd, finding: this.compareAnchor(tailLines(fd)) };
    });
    this.#fd = opened.fd;
    this.#ino = fstatSync(opened.fd).ino;
    this.anchorFinding = opened.finding;
  }

  /** Security: O_APPEND means every write lands at the end, even if someone seeks the fd. */
  private open(): number {
    return openPrivateFile(this.opts.path, constants.O_RDWR | constants.O_APPEND | constants.O_CREAT);
  }

  /**
   * Security: checked before the first append rewrites the anchor — otherwise a log truncated while
   * the runner was stopped would be re-anchored at its new end and the deletion would leave no trace.
   * The finding goes into `runner.start`, inside the chain, where `audit verify` reports it.
   */
  private compareAnchor(lines: string[]): AnchorFinding {
    const anchor = readAnchor(this.opts.anchorPath);
    if (anchor === undefined) return { audit_anchor: 'none' };
    if ('unreadable' in anchor) return { audit_anchor: 'unreadable' };
    if (anchor.log !== this.opts.path) return { audit_anchor: 'other-log' };
    const entries: TailEntry[] = [];
    lines.forEach((line, i) => {
      const seq = seqOf(line);
      if (seq !== undefined) entries.push({ line: i + 1, seq, sha256: lineHash(line) });
    });
    const check = checkAnchor(entries, anchor);
    return { audit_anchor: check.state, audit_anchor_seq: anchor.seq, audit_log_last_seq: entries[entries.length - 1]?.seq ?? 0 };
  }

  /** Whether the last write succeeded (false during an outage: runs are refused AUDIT_UNAVAILABLE). */
  get available(): boolean {
    return this.#outage === undefined;
  }

  /** The signing key's id (in `runner.start`, so a reader knows which public key checks this runner's checkpoints). */
  get keyId(): string | undefined {
    return this.opts.signer?.keyId;
  }

  /** Lines this runner wrote. */
  get linesWritten(): number {
    return this.#linesWritten;
  }

  /** Lines waiting to be written. */
  get pending(): number {
    return this.#queue.length;
  }

  /** Starts writing: `startLine` makes `runner.start`, written before this runner's first line. */
  begin(startLine: () => AuditEvent): void {
    this.#startLine = startLine;
    if (this.#queue.length > 0) this.kick();
  }

  /**
   * Records a decision. Never throws or rejects: a line that cannot be written now waits (see the
   * module doc). The promise resolves once it is written (and anchored), or when the first attempt
   * failed — so an answer can follow its own line without ever hanging on a full disk.
   */
  append(entry: AuditEvent): Promise<void> {
    return this.#enqueue(entry, false);
  }

  /**
   * Like {@link append}, but resolves as soon as the line is on disk (the log's fdatasync), while
   * the anchor that names it is still being published — for a line an answer waits on (run.exit).
   * Why that is no weaker: a crash between the fdatasync and the anchor's rename leaves the log one
   * batch ahead of its anchor whether or not an answer went out, and that state is recorded at the
   * next start and reported by verify as "ahead", never as a cut; the anchor is renamed right after
   * either way. Never rejects, like append.
   */
  appendDurable(entry: AuditEvent): Promise<void> {
    return this.#enqueue(entry, true);
  }

  #enqueue(entry: AuditEvent, early: boolean): Promise<void> {
    if (this.#closed) {
      this.warnOnce('closed', `an audit line (${entry.event}) came after the log was closed and was not written`);
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.#queue.push({ fields: entry as Pending['fields'], ts: new Date().toISOString(), done: resolve, ...(early ? { early } : {}) });
      this.trim();
      this.kick();
    });
  }

  /**
   * Records a decision that something may go ahead only once it is on disk (a run's accept, a
   * prepared token). Rejects with AUDIT_UNAVAILABLE when it cannot be written now; the line is then
   * not written later either (fsync failure aside: then it may be on disk, and the caller records
   * why the run did not go ahead).
   */
  commit(entry: AuditEvent): Promise<void> {
    if (this.#closed)
      return Promise.reject(new SkillMcpError('AUDIT_UNAVAILABLE', 'the runner is stopping; nothing more is recorded or run'));
    return new Promise((resolve, reject) => {
      this.#queue.push({ fields: entry as Pending['fields'], ts: new Date().toISOString(), commit: { resolve, reject } });
      this.kick();
    });
  }

  /** Resolves when every queued line was written, or the current attempt failed (tests, stop). */
  async flush(): Promise<void> {
    while (this.#draining !== undefined) await this.#draining;
  }

  /** Writes `runner.stop` (when this runner wrote anything) and what is queued, then closes. */
  async close(stop?: () => AuditEvent): Promise<void> {
    if (this.#closed) return;
    if (this.#started && stop) void this.append(stop());
    // One more attempt for what an outage left waiting, then whatever is still queued is reported.
    this.kick();
    await this.flush();
    this.#closed = true;
    if (this.#retry) clearTimeout(this.#retry);
    if (this.#queue.length > 0)
      this.opts.warn?.(
        `${this.#queue.length} audit line(s) could not be written before the runner stopped (${this.#outage?.error ?? 'write failed'})`,
      );
    closeSync(this.#fd);
  }

  private kick(): void {
    if (this.#draining || this.#closed || this.#startLine === undefined) return;
    this.#draining = this.drain().finally(() => {
      this.#draining = undefined;
      if (this.#queue.length > 0 && this.#outage === undefined) this.kick();
    });
  }

  /** Past MAX_PENDING, the oldest droppable lines go, counted for the gap line. */
  private trim(): void {
    for (let i = 0; this.#queue.length > MAX_PENDING && i < this.#queue.length; ) {
      const p = this.#queue[i]!;
      if (p.commit || KEPT_EVENTS.has(p.fields.event)) {
        i++;
        continue;
      }
      this.#queue.splice(i, 1);
      p.done?.();
      // A backlog this long means the disk cannot keep up or is gone: an outage either way.
      this.#outage ??= { from: new Date().toISOString(), error: 'backlog', lost: 0, lostEvents: {}, delayed: 0, refused: 0 };
      const outage = this.#outage;
      outage.lost += 1;
      outage.lostEvents[p.fields.event] = (outage.lostEvents[p.fields.event] ?? 0) + 1;
    }
  }

  private async drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0, BATCH_LINES);
      let written: { fd: number; last: string; seq: number; lines: number };
      try {
        written = await this.writeBatch(batch);
      } catch (error) {
        this.#queue.unshift(...batch.filter((p) => !p.commit));
        this.failed(batch, error);
        return;
      }
      try {
        this.opts.fault?.('sync');
        await syncData(written.fd);
      } catch (error) {
        // The lines are in the file but may not survive a power cut: not written again, but no
        // commit among them is believed (its caller records why its run did not go ahead).
        this.failed(batch, error);
        return;
      }
      if (this.#outage) this.opts.warn?.(`the audit log is writable again; the outage is recorded in an audit.gap line`);
      this.#outage = undefined;
      this.#retryMs = RETRY_FIRST_MS;
      this.#linesWritten += written.lines;
      // On disk: what waits on a commit may go ahead (a run may start) while the anchor is written.
      let released = false;
      for (const p of batch) {
        if (p.commit) p.commit.resolve();
        else if (p.early) p.done?.();
        else continue;
        released = true;
      }
      // The anchor only after the log's fdatasync, not beside it: on one file system the two syncs
      // share a journal commit, and the log's alone is what a run's start or answer waits for
      // (0.21 ms alone, 0.35 beside the anchor's fsync: bench/durable-floor.mjs). And only once what
      // those lines released has had its turn: the answer leaves before the anchor's lock and rename.
      if (released) await new Promise((resolve) => setImmediate(resolve));
      const anchor: AuditAnchor = { v: 1, log: this.opts.path, seq: written.seq, sha256: lineHash(written.last) };
      await stageAnchor(this.opts.anchorPath, anchor)
        .then((ready) =>
          publishAnchor(
            this.opts.anchorPath,
            anchor,
            ready,
            (fn) => withLockAsync(this.#lockPath, fn),
            () => {
              // Appends resolve once the anchor names their lines; the folder's fsync finishes before the next batch.
              for (const p of batch) p.done?.();
            },
          ),
        )
        .catch((error: unknown) => {
          this.warnOnce(
            'anchor',
            `the audit anchor ${basename(this.opts.anchorPath)} could not be written (${errnoOf(error)}); verify may report the log as ahead of it`,
          );
        });
      // Also when the anchor failed or another runner's was further along (onVisible not called);
      // resolving an append twice is a no-op.
      for (const p of batch) p.done?.();
      this.afterAppend?.();
    }
  }

  private failed(batch: Pending[], error: unknown): void {
    const code = errnoOf(error);
    this.#outage ??= { from: new Date().toISOString(), error: code, lost: 0, lostEvents: {}, delayed: 0, refused: 0 };
    const outage = this.#outage;
    for (const p of batch) {
      p.done?.();
      if (p.commit) {
        outage.refused += 1;
        p.commit.reject(
          new SkillMcpError(
            'AUDIT_UNAVAILABLE',
            `the audit log cannot be written (${code}), so nothing runs: every run must be on record first. The operator must free space on (or repair) the disk holding the audit log; the runner records the gap and takes runs again by itself`,
            { cause: error },
          ),
        );
      }
    }
    outage.delayed = this.#queue.length;
    this.trim();
    this.warnOnce(
      `fail:${code}`,
      `the audit log cannot be written (${code}); runs are refused AUDIT_UNAVAILABLE until it can, other lines wait (${this.#queue.length} now)`,
    );
    if (this.#retry === undefined && !this.#closed) {
      this.#retry = setTimeout(() => {
        this.#retry = undefined;
        this.kick();
      }, this.#retryMs);
      this.#retry.unref();
      this.#retryMs = Math.min(this.#retryMs * 2, RETRY_MAX_MS);
    }
  }

  private warnOnce(key: string, message: string): void {
    if (this.#warned.has(key)) return;
    this.#warned.add(key);
    this.opts.warn?.(message);
  }

  /** Reopens the live segment when another runner rotated it (or a crash left a rotation half done). */
  private settle(): void {
    settleRotation(this.opts.path);
    let ino: number | undefined;
    try {
      ino = statSync(this.opts.path).ino;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    if (ino === this.#ino) return;
    const fd = this.open();
    closeSync(this.#fd);
    this.#fd = fd;
    this.#ino = fstatSync(fd).ino;
  }

  /** Under the lock: seqs from the file, the lines made and written (rotating first when full). */
  private writeBatch(batch: Pending[]): Promise<{ fd: number; last: string; seq: number; lines: number }> {
    // Waits for another runner's hold on timers (the event loop goes on); the write itself is one synchronous span.
    return withLockAsync(this.#lockPath, () => {
      this.settle();
      let built = this.build(batch);
      const size = fstatSync(this.#fd).size;
      if (this.opts.maxBytes !== undefined && built.bytes.length > 0 && size > 0 && size + built.bytes.length > this.opts.maxBytes) {
        this.rotateNow();
        built = this.build(batch);
      }
      const before = fstatSync(this.#fd).size;
      try {
        this.opts.fault?.('write');
        for (let off = 0; off < built.bytes.length; ) off += writeSync(this.#fd, built.bytes, off);
      } catch (error) {
        // A short write on a full disk must not leave half a line for the next one to chain to.
        try {
          ftruncateSync(this.#fd, before);
        } catch {
          // the torn end is then a line verify names; the next write starts on a line of its own
        }
        throw error;
      }
      if (built.startWritten) this.#started = true;
      return { fd: this.#fd, last: built.last, seq: built.seq, lines: built.count };
    });
  }

  /** The batch's lines, continuing the file's chain (or the previous segment's, in a new segment). */
  private build(batch: Pending[]): { bytes: Buffer; last: string; seq: number; count: number; startWritten: boolean } {
    const { line: last, torn } = lastLine(this.#fd);
    let seq = last === undefined ? 0 : (seqOf(last) ?? lastSeq(tailLines(this.#fd)));
    let prev = last === undefined ? GENESIS_PREV : lineHash(last);
    const out: string[] = [];
    const make = (ts: string, fields: Record<string, unknown>): string => {
      seq += 1;
      const line = JSON.stringify({ seq, ts, prev, ...fields });
      prev = lineHash(line);
      out.push(line);
      return line;
    };
    const now = new Date().toISOString();
    if (last === undefined) {
      // A live segment made empty by a finished rotation continues the previous segment's chain.
      const end = latestSegmentEnd(this.opts.path);
      if (end) {
        seq = end.seq;
        prev = end.sha256;
        make(now, {
          event: 'audit.segment',
          previous: basename(end.path),
          previous_seq: end.seq,
          previous_sha256: end.sha256,
        } satisfies WriterEvent);
      }
    }
    const startWritten = !this.#started;
    if (startWritten) make(now, this.#startLine!() as Record<string, unknown>);
    const o = this.#outage;
    if (o)
      make(now, {
        event: 'audit.gap',
        lost: o.lost,
        lost_events: o.lostEvents,
        delayed: o.delayed,
        refused: o.refused,
        error: o.error,
        from: o.from,
        to: now,
      } satisfies WriterEvent);
    let checkpoint = false;
    for (const p of batch) {
      make(p.ts, p.fields);
      if (CHECKPOINT_AFTER.has(p.fields.event)) checkpoint = true;
    }
    if (checkpoint) this.checkpointLine(make, seq, prev, now);
    return { bytes: Buffer.from(`${torn ? '\n' : ''}${out.join('\n')}\n`), last: out.at(-1)!, seq, count: out.length, startWritten };
  }

  private checkpointLine(
    make: (ts: string, fields: Record<string, unknown>) => string,
    seq: number,
    prev: string,
    ts: string,
  ): string | undefined {
    const signer = this.opts.signer;
    if (!signer) return undefined;
    const head = signer.sign({ seq, sha256: prev, ts });
    return make(ts, {
      event: 'audit.checkpoint',
      head_seq: head.seq,
      head_sha256: head.sha256,
      key_id: head.key_id,
      sig: head.sig,
    } satisfies WriterEvent);
  }

  /** Ends the live segment with a signed checkpoint and starts the next from it (segments.ts). */
  private rotateNow(): void {
    const fd = this.#fd;
    const { line: last } = lastLine(fd);
    const first = firstLine(fd);
    const firstSeq = (first === undefined ? undefined : seqOf(first)) ?? 1;
    let seq = last === undefined ? 0 : (seqOf(last) ?? lastSeq(tailLines(fd)));
    let prev = last === undefined ? GENESIS_PREV : lineHash(last);
    const now = new Date().toISOString();
    // The old segment ends signed: a copy of it alone proves it complete up to its end.
    const closing: string[] = [];
    this.checkpointLine(
      (ts, fields) => {
        seq += 1;
        const line = JSON.stringify({ seq, ts, prev, ...fields });
        prev = lineHash(line);
        closing.push(line);
        return line;
      },
      seq,
      prev,
      now,
    );
    if (closing.length > 0) {
      for (let off = 0, bytes = Buffer.from(`${closing.join('\n')}\n`); off < bytes.length; ) off += writeSync(fd, bytes, off);
      fsyncSync(fd);
    }
    const victims = retentionVictims(this.opts.path, this.opts.keep);
    const segment = {
      event: 'audit.segment',
      previous: `${basename(this.opts.path)}.${String(firstSeq).padStart(12, '0')}`,
      previous_seq: seq,
      previous_sha256: prev,
      ...(victims.length > 0 ? { removed: victims.map((v) => basename(v)) } : {}),
    } satisfies WriterEvent;
    const firstOfNew = JSON.stringify({ seq: seq + 1, ts: now, prev, ...segment });
    rotate(this.opts.path, firstSeq, firstOfNew, victims, this.opts.fault);
    this.settle();
  }
}
