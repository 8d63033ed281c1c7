/**
 * @module The runner's request handlers — the monitor of OpenSSH's privilege separation: a closed
 * set of requests, each re-checked from scratch. `prepare` re-derives a run and mints its token;
 * `run` verifies the token (MAC, ledger, expiry), re-derives again, refuses unless the recomputed
 * `willRun` hashes to what the token was minted for, spends the token durably, then runs the
 * script in the sandbox; `cancel` kills the current run at once, only when it names the run's
 * cancel id (which the front that asked for the run chose). One run at a time.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chownSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ErrorCode } from '../shared/errors.js';
import { MAX_STREAM_BYTES } from '../shared/limits.js';
import type { DescribeResult, Minted, Refusal, ResultOf, RunnerRequest, WillRun } from '../shared/protocol.js';
import { mintToken, tokenLogId, verifyToken, willRunHash } from '../shared/token.js';
import type { AuditLog, RejectReason } from './audit-log.js';
import { deriveRun } from './derive.js';
import type { DeriveContext } from './derive.js';
import { describeRunner } from './describe.js';
import type { ScrubResult } from './hygiene.js';
import { isSkillMcpError } from '../shared/errors.js';
import type { SpendOutcome, TokenLedger } from './ledger-types.js';
import { hitMemoryLimit } from './memory-limit.js';
import { runProcess } from './run-process.js';
import { runFolderName } from './scratch.js';
import type { RunningProcess } from './run-process.js';
import { buildSpawn, usesBwrap } from './sandbox.js';
import { removeIpcOf } from './ipc.js';
import type { SandboxLimits } from './sandbox.js';
import { reapUid } from './uids.js';
import type { UidPool } from './uids.js';

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
}

export type Answer<T> = { ok: true; result: T } | { ok: false; error: Refusal };

type RunRequest = Extract<RunnerRequest, { type: 'run' }>;
type PrepareRequest = Extract<RunnerRequest, { type: 'prepare' }>;

interface Slot {
  runId: string;
  /** The front's name for this run: the only thing a cancel may name. */
  cancelId: string;
  cancelled: boolean;
  proc?: RunningProcess;
}

const REUSED = 'this confirmation token was already used; each token runs once — ask again without a token';
const EXPIRED = 'the confirmation token has expired; ask again without a token for a fresh preview';

function refusal(code: ErrorCode, message: string): { ok: false; error: Refusal } {
  return { ok: false, error: { code, message } };
}

export class RunnerService {
  private slot: Slot | undefined;

  constructor(private readonly deps: ServiceDeps) {}

  async describe(): Promise<DescribeResult> {
    return { ...(await describeRunner(this.deps.ctx, this.deps.environ, this.deps.refusedWhy?.message)), ledger: this.deps.ledger.status() };
  }

  private mint(willRun: WillRun): Minted {
    const now = Date.now();
    const { token, claims } = mintToken(this.deps.key, willRun, now, this.deps.ttlMs);
    return { willRun, confirmToken: token, expiresAt: new Date(claims.exp).toISOString() };
  }

  async prepare(req: PrepareRequest): Promise<Answer<Minted>> {
    if (this.deps.refusedWhy) return refusal(this.deps.refusedWhy.code, this.deps.refusedWhy.message);
    const derived = await deriveRun(this.deps.ctx, req.skill, req.script, req.args);
    if (!derived.ok) {
      this.deps.audit.append({ event: 'run.prepare', skill: req.skill, script: req.script, refused: derived.reason });
      return refusal(derived.code, derived.message);
    }
    const minted = this.mint(derived.plan.willRun);
    const claims = verifyToken(this.deps.key, minted.confirmToken, Date.now());
    this.deps.audit.append({ event: 'run.prepare', skill: req.skill, script: req.script, ...(claims.ok ? { token_id: tokenLogId(claims.claims) } : {}) });
    return { ok: true, result: minted };
  }

  /** Kills the current run if `cancelId` is the one its front chose; anything else kills nothing. */
  cancel(cancelId: string): ResultOf<'cancel'> {
    const slot = this.slot;
    // Security: several fronts may share a runner; one that never saw a run's cancel id (the
    // schema makes it 32 hex digits on both sides) cannot stop it. Constant time: no guessing by timing.
    if (!slot || !timingSafeEqual(Buffer.from(slot.cancelId), Buffer.from(cancelId))) return { cancelled: false };
    this.kill(slot);
    return { cancelled: true, runId: slot.runId };
  }

  private kill(slot: Slot): void {
    slot.cancelled = true;
    slot.proc?.cancel();
  }

  /** Runs with a token. `abandoned` fires when the asker went away: the run is then killed. */
  async run(req: RunRequest, abandoned?: AbortSignal): Promise<Answer<ResultOf<'run'>>> {
    const reject = (reason: RejectReason, code: ErrorCode, message: string, extra: { token_id?: string } = {}): { ok: false; error: Refusal } => {
      this.deps.audit.append({ event: 'run.reject', reason, skill: req.skill, script: req.script, ...extra });
      return refusal(code, message);
    };
    // Security: one run at a time; a second is refused at once, never queued behind a hostile one.
    if (this.slot) return reject('busy', 'BUSY', 'another script is running; wait for it to finish (or cancel it) and try again');
    const slot: Slot = { runId: randomBytes(8).toString('hex'), cancelId: req.cancelId, cancelled: false };
    this.slot = slot;
    const onAbandon = (): void => this.kill(slot);
    abandoned?.addEventListener('abort', onAbandon);
    if (abandoned?.aborted) onAbandon();
    try {
      return await this.runInSlot(req, slot, reject);
    } finally {
      abandoned?.removeEventListener('abort', onAbandon);
      this.slot = undefined;
    }
  }

  private async runInSlot(req: RunRequest, slot: Slot, reject: (r: RejectReason, c: ErrorCode, m: string, e?: { token_id?: string }) => { ok: false; error: Refusal }): Promise<Answer<ResultOf<'run'>>> {
    const { deps } = this;
    if (deps.refusedWhy) return reject(deps.refusedWhy.code === 'ENVIRON_UNSCRUBBED' ? 'environ-unscrubbed' : 'sandbox-failed', deps.refusedWhy.code, deps.refusedWhy.message);
    // Security: MAC first (constant time), then the ledger, then expiry; nothing else is believed before.
    const verified = verifyToken(deps.key, req.confirmToken, Date.now());
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
    const derived = await deriveRun(deps.ctx, req.skill, req.script, req.args);
    if (!derived.ok) return reject(derived.reason, derived.code, derived.message, { token_id: tokenId });
    const { plan } = derived;
    // Security: the token is bound to what was approved; a different skill, script, argv, env set
    // or isolation now means the person has not approved this run.
    if (willRunHash(plan.willRun) !== claims.wr) {
      this.deps.audit.append({ event: 'run.reject', reason: 'draft-changed', skill: req.skill, script: req.script, token_id: tokenId });
      return { ok: false, error: { code: 'DRAFT_CHANGED', message: 'what would run differs from what this token was approved for; show the fresh preview and confirm again', fresh: this.mint(plan.willRun) } };
    }
    if (slot.cancelled) return reject('busy', 'CANCELLED', 'the run was cancelled before it started', { token_id: tokenId });
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
    const scratch = join(deps.scratchDir, runFolderName(slot.runId));
    try {
      // The namespace levels give the run a RAM-backed /tmp of their own; the others a folder on disk.
      if (!usesBwrap(deps.ctx.platform)) {
        mkdirSync(scratch, { mode: 0o700 });
        if (uid !== undefined) chownSync(scratch, uid, uid);
      }
      const spec = buildSpawn(plan, deps.ctx.platform, deps.ctx.env, scratch, uid, deps.limits);
      if (spec.envNames.join('\0') !== plan.willRun.envNames.join('\0')) return reject('sandbox-failed', 'INTERNAL', 'the run environment differs from the preview; nothing was run');
      deps.audit.append({
        event: 'run.accept', run_id: slot.runId, runner_pid: process.pid, token_id: tokenId, skill: plan.willRun.skill, script: req.script, interpreter: plan.willRun.interpreter,
        argv: plan.willRun.argv, env_names: spec.envNames, timeout_ms: plan.willRun.timeoutMs, isolation: plan.willRun.isolation, sandbox: plan.willRun.sandbox,
        memory_bytes: plan.willRun.memoryBytes, uid: uid ?? process.getuid!(),
      });
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
      deps.audit.append({
        event: 'run.exit', run_id: slot.runId, exit_code: o.exitCode, signal: o.signal, ended: o.ending, duration_ms: o.durationMs,
        stdout_bytes: o.stdoutBytes, stderr_bytes: o.stderrBytes, stdout_sha256: o.stdoutSha256, stderr_sha256: o.stderrSha256,
        truncated: o.truncated, leftovers_killed: leftovers.killed, leftovers_remaining: leftovers.remaining,
        ...(ipcRemoved > 0 ? { ipc_removed: ipcRemoved } : {}),
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
      rmSync(scratch, { recursive: true, force: true });
      if (uid !== undefined) deps.uidPool?.release(uid);
    }
  }

  /** Kills the current run and waits for it to wind down (shutdown). */
  async stop(): Promise<void> {
    const slot = this.slot;
    if (!slot) return;
    this.kill(slot);
    await slot.proc?.outcome;
  }
}
