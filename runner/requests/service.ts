/**
 * @module The runner's request handlers — the monitor of OpenSSH's privilege separation: a closed
 * set of requests, each re-checked from scratch. `prepare` re-derives a run and mints its token;
 * `run` verifies the token (MAC, ledger, expiry), re-derives again, refuses unless the recomputed
 * `willRun` hashes to what the token was minted for, spends the token durably, then runs the
 * script in the sandbox; `cancel` kills a run (or takes it out of the queue) at once, only when it
 * names the run's cancel id (which the front that asked for the run chose). Several runs at once,
 * each in a slot of runner/requests/admission.ts: its own uid, namespaces, scratch, limits and audit lines.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chownSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ErrorCode } from '../../shared/errors.js';
import { MAX_STREAM_BYTES, MAX_TIMEOUT_MS } from '../../shared/limits.js';
import type { DescribeResult, Identity, Minted, Refusal, ResultOf, RunnerRequest, WillRun } from '../../shared/protocol.js';
import { mintToken, tokenLogId, verifyToken, willRunHash } from '../../shared/token.js';
import type { AuditLog, RejectReason } from '../audit/log.js';
import { deriveRun } from './derive.js';
import type { DeriveContext } from './derive.js';
import { describeRunner } from './describe.js';
import type { ScrubResult } from '../hygiene.js';
import { isSkillMcpError } from '../../shared/errors.js';
import type { SpendOutcome, TokenLedger } from '../ledger/types.js';
import { hitMemoryLimit } from '../sandbox/memory-limit.js';
import { runProcess } from '../sandbox/process.js';
import { RunCopy } from '../workspace/run-copy.js';
import { runFolderName } from '../workspace/scratch.js';
import type { RunningProcess } from '../sandbox/process.js';
import { openRunProxy, socketPathProblem } from '../egress/run-proxy.js';
import type { RunProxy, RunProxyTotals } from '../egress/run-proxy.js';
import { buildSpawn, egressSocketPath } from '../sandbox/spawn.js';
import { usesBwrap } from '../sandbox/platform.js';
import { removeIpcOf } from '../sandbox/sysv-ipc.js';
import type { SandboxLimits } from '../sandbox/spawn.js';
import { reapUid } from '../uids/pool.js';
import type { UidPool } from '../uids/pool.js';
import { admissionClient, RunAdmission } from './admission.js';
import type { AdmissionLimits, BusyFigures, Lease } from './admission.js';

export interface ServiceDeps {
  ctx: DeriveContext;
  key: Buffer;
  ledger: TokenLedger;
  audit: AuditLog;
  environ: ScrubResult;
  /** Why every run is refused (unscrubbed hosted environ, missing sandbox tools), if so. */
  refusedWhy: { code: ErrorCode; message: string } | undefined;
  ttlMs: number;
  scratchDir: string;
  uidPool: UidPool | undefined;
  limits: SandboxLimits;
  killGraceMs: number;
  drainMs: number;
  /** How many runs at once, one client's share, and how long a run over them waits. */
  admission: AdmissionLimits;
}

export type Answer<T> = { ok: true; result: T } | { ok: false; error: Refusal };

type RunRequest = Extract<RunnerRequest, { type: 'run' }>;
type PrepareRequest = Extract<RunnerRequest, { type: 'prepare' }>;

/** A run from its request to its end: waiting for a slot, then holding one. */
interface Slot {
  runId: string;
  /** The front's name for this run: the only thing a cancel may name. */
  cancelId: string;
  /** Whose run it is (the front's client id), for the per-client share. */
  client: string;
  cancelled: boolean;
  /** Aborted by a cancel or an asker that went away: takes a waiting run out of the queue. */
  leave: AbortController;
  lease?: Lease;
  proc?: RunningProcess;
}

/** The client of a front that names none (each such front's runs count as one client). */
const UNNAMED_CLIENT = '-';
/** Past a run's timeout, kill grace and drain: reaping its uid's leftovers (uids.ts gives up after ~2 s). */
const REAP_MS = 2_500;

const REUSED = 'this confirmation token was already used; each token runs once — ask again without a token';
const EXPIRED = 'the confirmation token has expired; ask again without a token for a fresh preview';

/** Who asked and under which trace, for the request's audit lines (absent fields are left out). */
function who(req: { identity?: Identity | undefined; traceparent?: string | undefined }): { requester?: Identity; traceparent?: string } {
  return { ...(req.identity ? { requester: req.identity } : {}), ...(req.traceparent ? { traceparent: req.traceparent } : {}) };
}

function refusal(code: ErrorCode, message: string): { ok: false; error: Refusal } {
  return { ok: false, error: { code, message } };
}

export class RunnerService {
  /** Every run from its request to its end, waiting or running. */
  private readonly runs = new Set<Slot>();
  private readonly admission: RunAdmission;

  constructor(private readonly deps: ServiceDeps) {
    this.admission = new RunAdmission(deps.admission, MAX_TIMEOUT_MS + deps.killGraceMs + deps.drainMs + REAP_MS);
  }

  /** The most runner connections runs can hold at once: every slot and every queue place. */
  get maxRunConnections(): number {
    return this.deps.admission.maxRuns + this.admission.maxWaiting;
  }

  async describe(skills?: readonly string[]): Promise<DescribeResult> {
    return { ...(await describeRunner(this.deps.ctx, this.deps.environ, this.deps.refusedWhy?.message, skills)), ledger: this.deps.ledger.status() };
  }

  private mint(willRun: WillRun): Minted {
    const now = Date.now();
    const { token, claims } = mintToken(this.deps.key, willRun, now, this.deps.ttlMs);
    return { willRun, confirmToken: token, expiresAt: new Date(claims.exp).toISOString() };
  }

  async prepare(req: PrepareRequest): Promise<Answer<Minted>> {
    if (this.deps.refusedWhy) return refusal(this.deps.refusedWhy.code, this.deps.refusedWhy.message);
    const derived = await deriveRun(this.deps.ctx, req.skill, req.script, req.args, undefined, undefined, req.identity);
    const requester = who(req);
    if (!derived.ok) {
      this.deps.audit.append({ event: 'run.prepare', skill: req.skill, script: req.script, refused: derived.reason, ...requester });
      return refusal(derived.code, derived.message);
    }
    const minted = this.mint(derived.plan.willRun);
    const claims = verifyToken(this.deps.key, minted.confirmToken, Date.now(), this.deps.ttlMs);
    this.deps.audit.append({ event: 'run.prepare', skill: req.skill, script: req.script, ...(claims.ok ? { token_id: tokenLogId(claims.claims) } : {}), ...requester });
    return { ok: true, result: minted };
  }

  /** The run (waiting or running) whose front chose `cancelId`, if any. */
  private named(cancelId: string): Slot | undefined {
    // Security: several fronts may share a runner; one that never saw a run's cancel id (the
    // schema makes it 32 hex digits on both sides) cannot name it. Every run is compared, in
    // constant time each: no guessing by timing.
    let found: Slot | undefined;
    for (const slot of this.runs) if (timingSafeEqual(Buffer.from(slot.cancelId), Buffer.from(cancelId))) found = slot;
    return found;
  }

  /** Kills the run whose front chose `cancelId` (a waiting one leaves the queue); anything else kills nothing. */
  cancel(cancelId: string): ResultOf<'cancel'> {
    const slot = this.named(cancelId);
    if (!slot) return { cancelled: false };
    this.kill(slot);
    return { cancelled: true, runId: slot.runId };
  }

  private kill(slot: Slot): void {
    slot.cancelled = true;
    slot.leave.abort();
    slot.proc?.cancel();
  }

  /** BUSY with the figures: how full the slots are, how long this run waited, when to try again. */
  private busy(req: RunRequest, slot: Slot, f: BusyFigures): { ok: false; error: Refusal } {
    this.deps.audit.append({
      event: 'run.reject', reason: 'busy', skill: req.skill, script: req.script, client: slot.client, ...who(req),
      running: f.running, max_runs: f.maxRuns, queued: f.queued, client_running: f.clientRunning, client_share: f.clientShare, waited_ms: f.waitedMs,
    });
    const share = f.clientRunning >= f.clientShare ? `, ${f.clientRunning} of them this client's (one client may hold ${f.clientShare} at once)` : '';
    const waited = f.waitedMs > 0 ? `waited ${Math.round(f.waitedMs / 1000)} s for a free slot` : 'the queue for a slot is full';
    const message = `${f.running} of ${f.maxRuns} runs are in progress${share}, ${f.queued} waiting; ${waited}. Nothing ran and the approval still holds: ` +
      `call again with the same confirmToken in a few seconds (a slot is certain to be free within ${Math.ceil(f.retryAfterMs / 1000)} s, when the earliest of those runs reaches its timeout).`;
    return { ok: false, error: { code: 'BUSY', message, busy: f } };
  }

  /** Runs with a token. `abandoned` fires when the asker went away: the run is then killed. */
  async run(req: RunRequest, abandoned?: AbortSignal): Promise<Answer<ResultOf<'run'>>> {
    const reject = (reason: RejectReason, code: ErrorCode, message: string, extra: { token_id?: string } = {}): { ok: false; error: Refusal } => {
      this.deps.audit.append({ event: 'run.reject', reason, skill: req.skill, script: req.script, ...extra, ...who(req) });
      return refusal(code, message);
    };
    // A cancel names one run: a second run under an id in use would make it ambiguous.
    if (this.named(req.cancelId)) return refusal('BAD_REQUEST', 'a run with this cancel id is already in progress; each run needs a fresh cancel id');
    const slot: Slot = { runId: randomBytes(8).toString('hex'), cancelId: req.cancelId, client: admissionClient(req.identity, req.client, UNNAMED_CLIENT), cancelled: false, leave: new AbortController() };
    this.runs.add(slot);
    const onAbandon = (): void => this.kill(slot);
    abandoned?.addEventListener('abort', onAbandon);
    if (abandoned?.aborted) onAbandon();
    try {
      // Security: the wait holds nothing — the token is verified and spent only in the slot, so a
      // run refused BUSY (or cancelled while it waited) keeps its approval for later.
      const admitted = await this.admission.acquire(slot.client, slot.leave.signal, (at) => {
        this.deps.audit.append({ event: 'run.wait', run_id: slot.runId, skill: req.skill, script: req.script, client: slot.client, running: at.running, queued: at.queued, ...who(req) });
      });
      if (!admitted.ok) {
        if (admitted.why === 'busy') return this.busy(req, slot, admitted.figures);
        return reject('cancelled', 'CANCELLED', 'the run was cancelled while it waited for a free slot; nothing ran and its approval still holds');
      }
      slot.lease = admitted.lease;
      try {
        return await this.runInSlot(req, slot, reject);
      } finally {
        admitted.lease.release();
      }
    } finally {
      abandoned?.removeEventListener('abort', onAbandon);
      this.runs.delete(slot);
    }
  }

  private async runInSlot(req: RunRequest, slot: Slot, reject: (r: RejectReason, c: ErrorCode, m: string, e?: { token_id?: string }) => { ok: false; error: Refusal }): Promise<Answer<ResultOf<'run'>>> {
    const copy = new RunCopy(this.deps.scratchDir, slot.runId);
    try {
      return await this.checkAndSpawn(req, slot, reject, copy);
    } finally {
      copy.remove();
    }
  }

  private async checkAndSpawn(req: RunRequest, slot: Slot, reject: (r: RejectReason, c: ErrorCode, m: string, e?: { token_id?: string }) => { ok: false; error: Refusal }, copy: RunCopy): Promise<Answer<ResultOf<'run'>>> {
    const { deps } = this;
    if (deps.refusedWhy) return reject(deps.refusedWhy.code === 'ENVIRON_UNSCRUBBED' ? 'environ-unscrubbed' : 'sandbox-failed', deps.refusedWhy.code, deps.refusedWhy.message);
    // Security: MAC first (constant time), then the ledger, then expiry; nothing else is believed before.
    const verified = verifyToken(deps.key, req.confirmToken, Date.now(), deps.ttlMs);
    if (!verified.ok && verified.code === 'TOKEN_INVALID') return reject('token-invalid', 'TOKEN_INVALID', 'the confirmation token is not one this runner issued; ask again without a token to get a fresh preview');
    const claims = verified.claims!;
    const tokenId = tokenLogId(claims);
    // Security: a ledger that cannot answer (Redis away) refuses the run; the token stays unspent.
    const ledgerDown = (error: unknown): { ok: false; error: Refusal } => {
      if (isSkillMcpError(error) && error.code === 'LEDGER_UNAVAILABLE') return reject('ledger-unavailable', 'LEDGER_UNAVAILABLE', error.message, { token_id: tokenId });
      throw error;
    };
    let seen: boolean;
    try {
      seen = await deps.ledger.has(claims.jti);
    } catch (error) {
      return ledgerDown(error);
    }
    if (seen) return reject('token-reused', 'TOKEN_REUSED', REUSED, { token_id: tokenId });
    if (!verified.ok) return reject('token-expired', 'TOKEN_EXPIRED', EXPIRED, { token_id: tokenId });
    // Security: derived from the runner's private copy of the skill, hashed as it was written; the
    // plan runs that copy, so nothing edited in the skill folder from here on reaches the run.
    const derived = await deriveRun(deps.ctx, req.skill, req.script, req.args, undefined, copy.source(deps.ctx), req.identity);
    if (!derived.ok) return reject(derived.reason, derived.code, derived.message, { token_id: tokenId });
    const { plan } = derived;
    // Security: the token is bound to what was approved; a different skill, script, argv, env set,
    // isolation or content (script, module, data file, link, added file) now means the person has
    // not approved this run.
    if (willRunHash(plan.willRun) !== claims.wr) {
      this.deps.audit.append({ event: 'run.reject', reason: 'draft-changed', skill: req.skill, script: req.script, token_id: tokenId, ...who(req) });
      return { ok: false, error: { code: 'DRAFT_CHANGED', message: 'what would run differs from what this token was approved for; show the fresh preview and confirm again', fresh: this.mint(plan.willRun) } };
    }
    if (slot.cancelled) return reject('cancelled', 'CANCELLED', 'the run was cancelled before it started', { token_id: tokenId });
    const scratch = join(deps.scratchDir, runFolderName(slot.runId));
    const proxied = plan.egress.mode === 'proxy';
    const socketProblem = proxied ? socketPathProblem(egressSocketPath(scratch)) : undefined;
    if (socketProblem !== undefined) return reject('sandbox-failed', 'INTERNAL', `${socketProblem}; nothing was run`, { token_id: tokenId });
    // Security: spent durably before the script starts, so no crash or restart can replay it; and
    // atomically, so of two runners on one state dir racing with the same token only one gets past.
    // A uid first (BUSY when none is free), so a refused run never burns the person's approval.
    const uid = deps.uidPool?.take();
    let spent: SpendOutcome;
    try {
      spent = await deps.ledger.spend(claims.jti, claims.exp, Date.now());
    } catch (error) {
      if (uid !== undefined) deps.uidPool?.release(uid);
      return ledgerDown(error);
    }
    if (spent !== 'spent' && uid !== undefined) deps.uidPool?.release(uid);
    if (spent === 'reused') return reject('token-reused', 'TOKEN_REUSED', REUSED, { token_id: tokenId });
    if (spent === 'expired') return reject('token-expired', 'TOKEN_EXPIRED', EXPIRED, { token_id: tokenId });
    let proxy: RunProxy | undefined;
    try {
      // The namespace levels give the run a RAM-backed /tmp of their own; the others a folder on
      // disk. A proxied run's folder holds its egress socket.
      if (!usesBwrap(deps.ctx.platform) || proxied) {
        mkdirSync(scratch, { mode: 0o700 });
        if (uid !== undefined) chownSync(scratch, uid, uid);
      }
      if (proxied) proxy = await openRunProxy({ socketPath: egressSocketPath(scratch), uid, entries: plan.egress.entries, audit: deps.audit, runId: slot.runId });
      const spec = buildSpawn(plan, deps.ctx.platform, deps.ctx.env, scratch, uid, deps.limits);
      if (spec.envNames.join('\0') !== plan.willRun.envNames.join('\0')) return reject('sandbox-failed', 'INTERNAL', 'the run environment differs from the preview; nothing was run');
      deps.audit.append({
        event: 'run.accept', run_id: slot.runId, runner_pid: process.pid, token_id: tokenId, skill: plan.willRun.skill, script: req.script, interpreter: plan.willRun.interpreter,
        argv: plan.willRun.argv, env_names: spec.envNames, timeout_ms: plan.willRun.timeoutMs, isolation: plan.willRun.isolation, sandbox: plan.willRun.sandbox,
        memory_bytes: plan.willRun.memoryBytes, uid: uid ?? process.getuid!(), script_sha256: plan.willRun.content.script, files_sha256: plan.willRun.content.files,
        ...(plan.egress.entries.length > 0 ? { egress: plan.egress.entries, egress_mode: plan.egress.mode } : {}),
        client: slot.client, queued_ms: slot.lease?.waitedMs ?? 0, runs_in_progress: this.admission.running,
        ...who(req),
      });
      slot.lease?.endsBy(Date.now() + plan.willRun.timeoutMs + deps.killGraceMs + deps.drainMs + REAP_MS);
      const { setpriv, kill, ipcrm } = deps.ctx.platform.tools;
      let leftovers = { killed: 0, remaining: 0 };
      let ipcRemoved = 0;
      const afterExit = async (): Promise<void> => {
        if (uid !== undefined && setpriv && kill) leftovers = await reapUid(uid, setpriv, kill);
        // Security: without an ipc namespace, SysV objects of the uid would wait for its next run.
        if (uid !== undefined && ipcrm && deps.ctx.platform.isolation === 'uid') ipcRemoved = await removeIpcOf(uid, ipcrm);
      };
      // In bubblewrap a SIGTERM would only reach bubblewrap, whose death kills the script at once:
      // the namespace levels end a timed-out run with SIGKILL straight away (its /tmp goes with it).
      const killGraceMs = usesBwrap(deps.ctx.platform) ? 0 : deps.killGraceMs;
      const proc = runProcess(spec, { timeoutMs: plan.willRun.timeoutMs, killGraceMs, drainMs: deps.drainMs }, MAX_STREAM_BYTES, afterExit);
      slot.proc = proc;
      if (slot.cancelled) proc.cancel();
      const o = await proc.outcome;
      // The proxy's lines (one per connection) come before the run's exit line.
      const egressTotals: RunProxyTotals | undefined = await proxy?.close();
      proxy = undefined;
      deps.audit.append({
        event: 'run.exit', run_id: slot.runId, ...who(req), exit_code: o.exitCode, signal: o.signal, ended: o.ending, duration_ms: o.durationMs,
        stdout_bytes: o.stdoutBytes, stderr_bytes: o.stderrBytes, stdout_sha256: o.stdoutSha256, stderr_sha256: o.stderrSha256,
        truncated: o.truncated, leftovers_killed: leftovers.killed, leftovers_remaining: leftovers.remaining,
        ...(ipcRemoved > 0 ? { ipc_removed: ipcRemoved } : {}),
        ...(egressTotals ?? {}),
      });
      return {
        ok: true,
        result: {
          runId: slot.runId, exitCode: o.exitCode, signal: o.signal, stdout: o.stdout, stderr: o.stderr,
          truncated: o.truncated, timedOut: o.ending === 'timeout', cancelled: o.ending === 'cancelled', durationMs: o.durationMs,
          stdoutBytes: o.stdoutBytes, stderrBytes: o.stderrBytes,
          memoryLimited: hitMemoryLimit(o.exitCode, o.signal, o.stderr),
        },
      };
    } finally {
      await proxy?.close();
      rmSync(scratch, { recursive: true, force: true });
      if (uid !== undefined) deps.uidPool?.release(uid);
    }
  }

  /** Kills every run (waiting ones leave the queue) and waits for them to wind down (shutdown). */
  async stop(): Promise<void> {
    const slots = [...this.runs];
    for (const slot of slots) this.kill(slot);
    await Promise.all(slots.map((slot) => slot.proc?.outcome));
  }
}
