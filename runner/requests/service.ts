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
import { chownSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ErrorCode } from '../../shared/errors.js';
import { MAX_STREAM_BYTES, MAX_TIMEOUT_MS } from '../../shared/limits.js';
import type { DescribeResult, EgressSummary, Minted, Refusal, ResultOf, RunnerRequest, WillRun } from '../../shared/protocol.js';
import { mintToken, sameRequester, tokenLogId, verifyToken, willRunHash } from '../../shared/token.js';
import type { AuditLog } from '../audit/log.js';
import type { AuditEvent, RejectReason, RunGrant, RunWho } from '../audit/events.js';
import { deriveRun } from './derive.js';
import type { DeriveContext, RunPlan } from './derive.js';
import { describeRunner } from './describe.js';
import type { ScrubResult } from '../hygiene.js';
import { isSkillMcpError } from '../../shared/errors.js';
import type { SpendOutcome, TokenLedger } from '../ledger/types.js';
import { hitMemoryLimit } from '../sandbox/memory-limit.js';
import { runProcess } from '../sandbox/process.js';
import { RunCopy } from '../workspace/run-copy.js';
import { runFolderName } from '../workspace/scratch.js';
import { makeHome, makeWorkspace, removeRunFolder, withInputs } from '../workspace/workspace.js';
import type { Workspace } from '../workspace/workspace.js';
import { collectOutputs } from '../workspace/outputs.js';
import type { Collected } from '../workspace/outputs.js';
import { digestInputs, inputsRefusal } from '../../shared/run-io.js';
import { inputsCapProblem, workspaceFullNote } from '../workspace/capacity.js';
import type { WorkspaceCap, WorkspaceMode, WorkspaceUsage } from '../workspace/capacity.js';
import { mountWorkspace, unmountAll } from '../workspace/mount.js';
import type { Unmounted } from '../workspace/mount.js';
import { watchWorkspace } from '../workspace/watch.js';
import type { WorkspaceWatch } from '../workspace/watch.js';
import type { RunningProcess } from '../sandbox/process.js';
import { openRunProxy, socketPathProblem } from '../egress/run-proxy.js';
import type { RunProxy, RunProxyTotals } from '../egress/run-proxy.js';
import { buildSpawn, egressSocketPath } from '../sandbox/spawn.js';
import { usesBwrap } from '../sandbox/platform.js';
import { removeIpcOf } from '../sandbox/sysv-ipc.js';
import { makeRunCgroup, runCgroupLimit } from '../sandbox/run-cgroup.js';
import type { RunCgroup } from '../sandbox/run-cgroup.js';
import type { SandboxLimits } from '../sandbox/spawn.js';
import { reapUid } from '../uids/pool.js';
import { RunStats } from './stats.js';
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
  /** How the workspace cap is kept: a tmpfs the runner (root) mounts, or its watcher (runner/workspace/capacity.ts). */
  workspaceMode: WorkspaceMode;
  killGraceMs: number;
  drainMs: number;
  /** How many runs at once, one client's share, and how long a run over them waits. */
  admission: AdmissionLimits;
  /** Standalone: the OS user the runner (and so the person's own skill-mcp) runs as, the requester of every run; hosted: undefined. */
  osUser?: string | undefined;
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
  /** Its terminal line (a reject or its exit) is queued: nothing more ends it in the log. */
  ended?: boolean;
  /** Its queued lines (awaited before its answer). */
  lines: Promise<void>[];
}

/** The client of a front that names none (each such front's runs count as one client). */
const UNNAMED_CLIENT = '-';
/** Past a run's timeout, kill grace and drain: reaping its uid's leftovers (uids.ts gives up after ~2 s). */
const REAP_MS = 2_500;

const REUSED = 'this confirmation token was already used; each token runs once — ask again without a token';
const EXPIRED = 'the confirmation token has expired; ask again without a token for a fresh preview';

function refusal(code: ErrorCode, message: string): { ok: false; error: Refusal } {
  return { ok: false, error: { code, message } };
}

const AUDIT_DOWN = 'the audit log cannot be written, so nothing runs (every run must be on record first); nothing ran and the approval still holds — try again once the operator has freed the disk holding the audit log';
const AUDIT_DOWN_SPENT = 'the audit log could not be written just before the run would start, so it did not start (every run must be on record first); its token was spent — once the operator has freed the disk holding the audit log, ask again for a fresh preview';

/**
 * Who asked and how (docs/audit.md): the verified identity the front passes (hosted with OAuth),
 * else the runner's own OS user (standalone: the person's own skill-mcp started it); the
 * approval channel as the front says it — the runner cannot check either (SECURITY.md).
 */
function whoOf(req: PrepareRequest | RunRequest, osUser: string | undefined): RunWho {
  const who: RunWho = req.identity ? { requester: req.identity.subject, requester_from: 'oauth' } : osUser !== undefined ? { requester: osUser, requester_from: 'os-user' } : {};
  if (req.type === 'run') who.approval = { channel: req.approval.channel, ...(req.approval.approver !== undefined ? { approver: req.approval.approver } : {}) };
  // The W3C trace the request came under (the front passes a well-formed one only), for joining logs.
  if (req.traceparent !== undefined) who.traceparent = req.traceparent;
  return who;
}

function grantOf(plan: RunPlan): RunGrant {
  const declarationFrom = (plan.willRun as { declarationFrom?: unknown }).declarationFrom;
  return { ...(plan.grantedBy ? { grant: plan.grantedBy } : {}), ...(typeof declarationFrom === 'string' ? { declaration_from: declarationFrom } : {}) };
}

/** Output files the run.exit line names at most (one line stays readable); the rest are counted. */
const AUDIT_MAX_OUTPUTS = 1000;

/** The run.exit fields for a run's output files: names, sizes, digests and why any was not carried. */
function outputsAudit(collected: Collected): Record<string, unknown> {
  const listed = collected.files.slice(0, AUDIT_MAX_OUTPUTS).map((f) => ({ path: f.path, size: f.size, ...(f.sha256 ? { sha256: f.sha256 } : {}), ...(f.omitted ? { omitted: f.omitted } : {}) }));
  return {
    outputs: listed, output_bytes: collected.bytes,
    ...(collected.files.length > listed.length ? { outputs_not_logged: collected.files.length - listed.length } : {}),
    ...(collected.note !== undefined ? { outputs_note: collected.note } : {}),
  };
}

export class RunnerService {
  /** Every run from its request to its end, waiting or running. */
  private readonly runs = new Set<Slot>();
  private readonly admission: RunAdmission;
  /** Counts for the metrics endpoint (describe carries them). */
  readonly stats = new RunStats();

  constructor(private readonly deps: ServiceDeps) {
    this.admission = new RunAdmission(deps.admission, MAX_TIMEOUT_MS + deps.killGraceMs + deps.drainMs + REAP_MS);
  }

  /** The most runner connections runs can hold at once: every slot and every queue place. */
  get maxRunConnections(): number {
    return this.deps.admission.maxRuns + this.admission.maxWaiting;
  }

  async describe(skills?: readonly string[]): Promise<DescribeResult> {
    return {
      ...(await describeRunner(this.deps.ctx, this.deps.environ, this.deps.refusedWhy?.message, skills)),
      ledger: this.deps.ledger.status(),
      runs: { ...this.stats.snapshot(), running: this.admission.running, queued: this.admission.queued },
    };
  }

  /** The run's workspace caps (SKILL_MCP_RUN_WORKSPACE_BYTES, SKILL_MCP_RUN_WORKSPACE_FILES). */
  private get cap(): WorkspaceCap {
    return { bytes: this.deps.limits.workspaceBytes, files: this.deps.limits.workspaceFiles };
  }

  /** Inputs that would fill the workspace by themselves are refused before anything runs. */
  private capRefusal(paths: readonly string[], sizes: readonly number[]): { code: 'TOO_LARGE'; message: string } | undefined {
    const problem = inputsCapProblem(paths, sizes, this.cap);
    return problem !== undefined ? { code: 'TOO_LARGE', message: problem } : undefined;
  }

  private mint(willRun: WillRun, subject: string | undefined): Minted {
    const now = Date.now();
    const { token, claims } = mintToken(this.deps.key, willRun, now, this.deps.ttlMs, subject);
    return { willRun, confirmToken: token, expiresAt: new Date(claims.exp).toISOString() };
  }

  async prepare(req: PrepareRequest): Promise<Answer<Minted>> {
    if (this.deps.refusedWhy) return refusal(this.deps.refusedWhy.code, this.deps.refusedWhy.message);
    const who = whoOf(req, this.deps.osUser);
    // Security: the input names are checked here too, so no preview ever shows a run that would be refused.
    const files = req.inputs?.files ?? [];
    const bad = inputsRefusal(files.map((f) => f.path), files.map((f) => f.size), req.inputs?.stdin?.size ?? 0, this.deps.limits.inputBytes) ?? this.capRefusal(files.map((f) => f.path), files.map((f) => f.size));
    if (bad) {
      await this.deps.audit.append({ event: 'run.prepare', skill: req.skill, script: req.script, refused: bad.code === 'TOO_LARGE' ? 'too-large' : 'invalid-path', ...who });
      return refusal(bad.code, bad.message);
    }
    const derived = await deriveRun(this.deps.ctx, req.skill, req.script, req.args, undefined, undefined, req.identity);
    if (!derived.ok) {
      await this.deps.audit.append({ event: 'run.prepare', skill: req.skill, script: req.script, refused: derived.reason, ...who });
      return refusal(derived.code, derived.message);
    }
    const minted = this.mint(withInputs(derived.plan.willRun, req.inputs), req.identity?.subject);
    const claims = verifyToken(this.deps.key, minted.confirmToken, Date.now(), this.deps.ttlMs);
    // Security: a token is handed out only once its prepare line is on disk.
    try {
      await this.deps.audit.commit({ event: 'run.prepare', skill: req.skill, script: req.script, ...(claims.ok ? { token_id: tokenLogId(claims.claims) } : {}), will_run_sha256: willRunHash(minted.willRun), ...who });
    } catch {
      return refusal('AUDIT_UNAVAILABLE', AUDIT_DOWN);
    }
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
    slot.ended = true;
    slot.lines.push(this.deps.audit.append({
      event: 'run.reject', reason: 'busy', skill: req.skill, script: req.script, run_id: slot.runId, client: slot.client, ...whoOf(req, this.deps.osUser),
      running: f.running, max_runs: f.maxRuns, queued: f.queued, client_running: f.clientRunning, client_share: f.clientShare, waited_ms: f.waitedMs,
    }));
    const share = f.clientRunning >= f.clientShare ? `, ${f.clientRunning} of them this client's (one client may hold ${f.clientShare} at once)` : '';
    const waited = f.waitedMs > 0 ? `waited ${Math.round(f.waitedMs / 1000)} s for a free slot` : 'the queue for a slot is full';
    const message = `${f.running} of ${f.maxRuns} runs are in progress${share}, ${f.queued} waiting; ${waited}. Nothing ran and the approval still holds: ` +
      `call again with the same confirmToken in a few seconds (a slot is certain to be free within ${Math.ceil(f.retryAfterMs / 1000)} s, when the earliest of those runs reaches its timeout).`;
    return { ok: false, error: { code: 'BUSY', message, busy: f } };
  }

  /** Runs with a token. `abandoned` fires when the asker went away: the run is then killed. */
  async run(req: RunRequest, abandoned?: AbortSignal): Promise<Answer<ResultOf<'run'>>> {
    const runId = randomBytes(8).toString('hex');
    const who = whoOf(req, this.deps.osUser);
    let ended = false;
    // The lines this run queued: its answer goes back only once they are written (or could not be).
    const lines: Promise<void>[] = [];
    const reject = (reason: RejectReason, code: ErrorCode, message: string, extra: { token_id?: string; error?: string } = {}): { ok: false; error: Refusal } => {
      ended = true;
      this.stats.refused(reason);
      lines.push(this.deps.audit.append({ event: 'run.reject', reason, skill: req.skill, script: req.script, run_id: runId, ...extra, ...who }));
      return refusal(code, message);
    };
    // A cancel names one run: a second run under an id in use would make it ambiguous.
    if (this.named(req.cancelId)) return reject('internal', 'BAD_REQUEST', 'a run with this cancel id is already in progress; each run needs a fresh cancel id', { error: 'cancel-id-in-use' });
    const slot: Slot = { runId, cancelId: req.cancelId, client: admissionClient(req.identity, req.client, UNNAMED_CLIENT), cancelled: false, leave: new AbortController(), lines };
    this.runs.add(slot);
    const onAbandon = (): void => this.kill(slot);
    abandoned?.addEventListener('abort', onAbandon);
    if (abandoned?.aborted) onAbandon();
    try {
      // Security: the wait holds nothing — the token is verified and spent only in the slot, so a
      // run refused BUSY (or cancelled while it waited) keeps its approval for later.
      const admitted = await this.admission.acquire(slot.client, slot.leave.signal, (at) => {
        void this.deps.audit.append({ event: 'run.wait', run_id: slot.runId, skill: req.skill, script: req.script, client: slot.client, running: at.running, queued: at.queued });
      });
      if (!admitted.ok) {
        if (admitted.why === 'busy') return this.busy(req, slot, admitted.figures);
        return reject('cancelled', 'CANCELLED', 'the run was cancelled while it waited for a free slot; nothing ran and its approval still holds');
      }
      slot.lease = admitted.lease;
      try {
        return await this.runInSlot(req, slot, reject);
      } catch (error) {
        // Security: whatever failed, the run's end is on record once (a reject unless its exit was written).
        const code = isSkillMcpError(error) ? error.code : 'INTERNAL';
        if (ended || slot.ended) throw error;
        return reject('internal', code, `the runner failed to handle the run (${code}); see its log`, { error: code });
      } finally {
        admitted.lease.release();
      }
    } finally {
      abandoned?.removeEventListener('abort', onAbandon);
      this.runs.delete(slot);
      await Promise.all(lines);
    }
  }

  private async runInSlot(req: RunRequest, slot: Slot, reject: (r: RejectReason, c: ErrorCode, m: string, e?: { token_id?: string; error?: string }) => { ok: false; error: Refusal }): Promise<Answer<ResultOf<'run'>>> {
    const copy = new RunCopy(this.deps.scratchDir, slot.runId);
    try {
      return await this.checkAndSpawn(req, slot, reject, copy);
    } finally {
      copy.remove();
    }
  }

  private async checkAndSpawn(req: RunRequest, slot: Slot, reject: (r: RejectReason, c: ErrorCode, m: string, e?: { token_id?: string; error?: string }) => { ok: false; error: Refusal }, copy: RunCopy): Promise<Answer<ResultOf<'run'>>> {
    const { deps } = this;
    const who = whoOf(req, deps.osUser);
    if (deps.refusedWhy) return reject(deps.refusedWhy.code === 'ENVIRON_UNSCRUBBED' ? 'environ-unscrubbed' : 'sandbox-failed', deps.refusedWhy.code, deps.refusedWhy.message);
    // Security: MAC first (constant time), then the ledger, then expiry; nothing else is believed before.
    const verified = verifyToken(deps.key, req.confirmToken, Date.now(), deps.ttlMs);
    if (!verified.ok && verified.code === 'TOKEN_INVALID') return reject('token-invalid', 'TOKEN_INVALID', 'the confirmation token is not one this runner issued; ask again without a token to get a fresh preview');
    const claims = verified.claims!;
    const tokenId = tokenLogId(claims);
    // Security: before the ledger, so a token someone else presents stays unspent for its owner.
    if (!sameRequester(claims, req.identity?.subject)) {
      return reject('token-invalid', 'TOKEN_INVALID', 'this confirmation token was issued to another identity; ask again without a token to get a preview of your own', { token_id: tokenId });
    }
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
    // Security: the bytes sent now are checked from scratch and digested; the digests join the
    // re-derived run, so an input changed since the approval is DRAFT_CHANGED like changed code.
    const files = req.files ?? [];
    const bad = inputsRefusal(files.map((f) => f.path), files.map((f) => f.bytes.length), req.stdin?.length ?? 0, deps.limits.inputBytes) ?? this.capRefusal(files.map((f) => f.path), files.map((f) => f.bytes.length));
    if (bad) return reject(bad.code === 'TOO_LARGE' ? 'too-large' : 'invalid-path', bad.code, bad.message, { token_id: tokenId });
    const inputs = digestInputs(files, req.stdin);
    // Security: derived from the runner's private copy of the skill, hashed as it was written; the
    // plan runs that copy, so nothing edited in the skill folder from here on reaches the run.
    const derived = await deriveRun(deps.ctx, req.skill, req.script, req.args, undefined, copy.source(deps.ctx), req.identity);
    if (!derived.ok) return reject(derived.reason, derived.code, derived.message, { token_id: tokenId });
    const plan = { ...derived.plan, willRun: withInputs(derived.plan.willRun, inputs) };
    // Security: the token is bound to what was approved; a different skill, script, argv, env set,
    // isolation or content (script, module, data file, link, added file) now means the person has
    // not approved this run.
    if (willRunHash(plan.willRun) !== claims.wr) {
      reject('draft-changed', 'DRAFT_CHANGED', '', { token_id: tokenId });
      // The fresh preview is a prepare of its own: its token is on record like any other.
      const fresh = this.mint(plan.willRun, req.identity?.subject);
      const freshClaims = verifyToken(deps.key, fresh.confirmToken, Date.now(), deps.ttlMs);
      slot.lines.push(deps.audit.append({ event: 'run.prepare', skill: req.skill, script: req.script, ...(freshClaims.ok ? { token_id: tokenLogId(freshClaims.claims) } : {}), will_run_sha256: willRunHash(plan.willRun), draft_changed: true, ...whoOf({ ...req, type: 'prepare' } as PrepareRequest, deps.osUser) }));
      return { ok: false, error: { code: 'DRAFT_CHANGED', message: 'what would run differs from what this token was approved for; show the fresh preview and confirm again', fresh } };
    }
    if (slot.cancelled) return reject('cancelled', 'CANCELLED', 'the run was cancelled before it started', { token_id: tokenId });
    const scratch = join(deps.scratchDir, runFolderName(slot.runId));
    const proxied = plan.egress.mode === 'proxy';
    const socketProblem = proxied ? socketPathProblem(egressSocketPath(scratch)) : undefined;
    if (socketProblem !== undefined) return reject('sandbox-failed', 'INTERNAL', `${socketProblem}; nothing was run`, { token_id: tokenId });
    // Fail closed before the spend when the log is known to be down: the token stays unspent.
    if (!deps.audit.available) return reject('audit-unavailable', 'AUDIT_UNAVAILABLE', AUDIT_DOWN, { token_id: tokenId });
    // Security: spent durably before the script starts, so no crash or restart can replay it; and
    // atomically, so of two runners on one state dir racing with the same token only one gets past.
    // A uid first (BUSY when none is free), so a refused run never burns the person's approval.
    const uid = await deps.uidPool?.take();
    let spent: SpendOutcome;
    try {
      spent = await deps.ledger.spend(claims.jti, claims.exp, Date.now());
    } catch (error) {
      if (uid !== undefined) await deps.uidPool?.release(uid);
      return ledgerDown(error);
    }
    if (spent !== 'spent' && uid !== undefined) await deps.uidPool?.release(uid);
    if (spent === 'reused') return reject('token-reused', 'TOKEN_REUSED', REUSED, { token_id: tokenId });
    if (spent === 'expired') return reject('token-expired', 'TOKEN_EXPIRED', EXPIRED, { token_id: tokenId });
    let proxy: RunProxy | undefined;
    let cgroup: RunCgroup | undefined;
    let watch: WorkspaceWatch | undefined;
    let tmpfs = false;
    let accepted = false;
    try {
      // The run's folder holds its workspace (the cwd), at the other levels its HOME (the namespace
      // levels give the run a RAM-backed /tmp instead), and a proxied run's egress socket.
      mkdirSync(scratch, { mode: 0o700 });
      if (uid !== undefined) chownSync(scratch, uid, uid);
      let ws: Workspace;
      let home: string;
      const cap = this.cap;
      // Security: as root the workspace is a tmpfs of the cap's size, mounted before the inputs go in (mount.ts).
      tmpfs = deps.workspaceMode === 'tmpfs' && uid !== undefined;
      let mountFailed: string | undefined;
      const mount = tmpfs ? (dir: string): void => {
        try {
          mountWorkspace(dir, cap, uid!);
        } catch (error) {
          mountFailed = (error as NodeJS.ErrnoException).code ?? 'error';
          throw error;
        }
      } : undefined;
      try {
        ws = makeWorkspace(scratch, uid, files, mount);
        home = usesBwrap(deps.ctx.platform) ? scratch : makeHome(scratch, uid);
      } catch (error) {
        // Never run without the cap the runner keeps for every run.
        if (mountFailed !== undefined) return reject('sandbox-failed', 'SANDBOX_UNAVAILABLE', `the run's workspace could not be mounted with its size cap (${mountFailed}); nothing was run`, { token_id: tokenId });
        return reject('sandbox-failed', 'INTERNAL', `the runner could not write the run's workspace (${(error as NodeJS.ErrnoException).code ?? 'error'}); nothing was run — check the scratch directory's free space`, { token_id: tokenId });
      }
      if (proxied) proxy = await openRunProxy({ socketPath: egressSocketPath(scratch), uid, entries: plan.egress.entries, audit: deps.audit, runId: slot.runId });
      // Security: a root runner caps and ends the run by its own cgroup (every page counted, every task killed).
      const { cgroups } = deps.ctx.platform;
      if (cgroups) {
        try {
          // A tmpfs workspace's pages are charged to the group too.
          cgroup = makeRunCgroup(cgroups, runFolderName(slot.runId), runCgroupLimit(plan.willRun.memoryBytes, deps.limits.tmpBytes + (tmpfs ? cap.bytes : 0)));
        } catch (error) {
          // Never run uncapped what the preview said would be capped.
          return reject('sandbox-failed', 'SANDBOX_UNAVAILABLE', `the run's memory cgroup could not be made (${(error as NodeJS.ErrnoException).code ?? 'error'}); nothing was run`, { token_id: tokenId });
        }
      }
      // Without a tmpfs, no one file may pass the workspace cap either (RLIMIT_FSIZE): the watcher then bounds the rest.
      const limits = tmpfs ? deps.limits : { ...deps.limits, fsizeBytes: Math.min(deps.limits.fsizeBytes, cap.bytes) };
      const spec = { ...buildSpawn(plan, deps.ctx.platform, deps.ctx.env, scratch, uid, limits, { workspace: ws.dir, home }, { ...(cgroup ? { cgroupProcs: cgroup.procs } : {}) }), ...(req.stdin !== undefined ? { stdin: req.stdin } : {}) };
      if (spec.envNames.join('\0') !== plan.willRun.envNames.join('\0')) return reject('sandbox-failed', 'INTERNAL', 'the run environment differs from the preview; nothing was run', { token_id: tokenId });
      // Security: nothing runs whose accept line is not on disk.
      const acceptLine: AuditEvent = {
        event: 'run.accept', run_id: slot.runId, runner_pid: process.pid, token_id: tokenId, skill: plan.willRun.skill, script: req.script, interpreter: plan.willRun.interpreter,
        argv: plan.willRun.argv, env_names: spec.envNames, timeout_ms: plan.willRun.timeoutMs, isolation: plan.willRun.isolation, sandbox: plan.willRun.sandbox,
        memory_bytes: plan.willRun.memoryBytes, uid: uid ?? process.getuid!(), script_sha256: plan.willRun.content.script, files_sha256: plan.willRun.content.files,
        ...(plan.egress.entries.length > 0 ? { egress: plan.egress.entries, egress_mode: plan.egress.mode } : {}),
        ...(plan.willRun.deps ? { deps: plan.willRun.deps.map((d) => `${d.kind}:${d.digest}`) } : {}),
        ...(inputs.files.length > 0 ? { inputs: inputs.files } : {}),
        ...(inputs.stdin ? { stdin_bytes: inputs.stdin.size, stdin_sha256: inputs.stdin.sha256 } : {}),
        client: slot.client, queued_ms: slot.lease?.waitedMs ?? 0, runs_in_progress: this.admission.running,
        will_run_sha256: claims.wr, ...who, ...grantOf(plan),
      };
      try {
        await deps.audit.commit(acceptLine);
      } catch {
        return reject('audit-unavailable', 'AUDIT_UNAVAILABLE', AUDIT_DOWN_SPENT, { token_id: tokenId });
      }
      accepted = true;
      slot.lease?.endsBy(Date.now() + plan.willRun.timeoutMs + deps.killGraceMs + deps.drainMs + REAP_MS);
      const { setpriv, kill, ipcrm } = deps.ctx.platform.tools;
      let leftovers = { killed: 0, remaining: 0 };
      let ipcRemoved = 0;
      const afterExit = async (): Promise<void> => {
        const reapStarted = performance.now();
        await reapLeftovers();
        this.stats.reaped(performance.now() - reapStarted);
      };
      const reapLeftovers = async (): Promise<void> => {
        if (cgroup) leftovers = await cgroup.kill();
        else if (uid !== undefined && setpriv && kill) leftovers = await reapUid(uid, setpriv, kill);
        // Security: without an ipc namespace, SysV objects of the uid would wait for its next run.
        if (uid !== undefined && ipcrm && deps.ctx.platform.isolation === 'uid') ipcRemoved = await removeIpcOf(uid, ipcrm);
      };
      // In bubblewrap a SIGTERM would only reach bubblewrap, whose death kills the script at once:
      // the namespace levels end a timed-out run with SIGKILL straight away (its /tmp goes with it).
      const killGraceMs = usesBwrap(deps.ctx.platform) ? 0 : deps.killGraceMs;
      const proc = runProcess(spec, { timeoutMs: plan.willRun.timeoutMs, killGraceMs, drainMs: deps.drainMs }, MAX_STREAM_BYTES, afterExit);
      slot.proc = proc;
      if (slot.cancelled) proc.cancel();
      // Security: without a tmpfs the watcher is the workspace's cap: the first look over it stops the run.
      watch = watchWorkspace(ws, tmpfs ? 'tmpfs' : 'watch', cap, () => proc.cancel('workspace-full'));
      const o = await proc.outcome;
      // The last look, with nothing of the run left running (or the first one over the cap).
      const usage: WorkspaceUsage = await watch.finish();
      watch = undefined;
      // The proxy's lines (one per connection) come before the run's exit line.
      const egress: { totals: RunProxyTotals; summary: EgressSummary } | undefined = await proxy?.close();
      proxy = undefined;
      // Security: read only once nothing of the run is left alive to change the tree under the walk.
      const collected: Collected = leftovers.remaining > 0
        ? { files: [], bytes: 0, note: `${leftovers.remaining} processes of the run outlived it, so its workspace was not read; nothing of it is returned` }
        : collectOutputs(ws, deps.limits.outputFilesBytes);
      // The workspace never outlives the result (the finally below removes it again on every other path);
      // its tmpfs comes off first, lazily when a survivor still holds it.
      const off: Unmounted | undefined = tmpfs ? unmountAll(scratch) : undefined;
      const removed = removeRunFolder(scratch);
      // So is the run's copy of its skill: nothing of the run is on disk once its exit line is written.
      copy.remove();
      const full = usage.over !== undefined ? workspaceFullNote(usage.over, tmpfs ? 'tmpfs' : 'watch', cap, usage.why, o.ending === 'workspace-full') : undefined;
      const filesNote = [collected.note, removed ? undefined : 'the run\'s workspace could not be removed in full; the operator was told in the audit log'].filter((n) => n !== undefined).join('; ');
      slot.ended = true;
      this.stats.ended(o.ending);
      slot.lines.push(deps.audit.append({
        event: 'run.exit', run_id: slot.runId, exit_code: o.exitCode, signal: o.signal, ended: o.ending, duration_ms: o.durationMs,
        stdout_bytes: o.stdoutBytes, stderr_bytes: o.stderrBytes, stdout_sha256: o.stdoutSha256, stderr_sha256: o.stderrSha256,
        truncated: o.truncated, leftovers_killed: leftovers.killed, leftovers_remaining: leftovers.remaining,
        ...(ipcRemoved > 0 ? { ipc_removed: ipcRemoved } : {}),
        ...(egress?.totals ?? {}),
        ...outputsAudit(collected),
        workspace_bytes: usage.bytes, workspace_files: usage.files,
        ...(usage.over !== undefined ? { workspace_full: usage.over } : {}),
        ...(off !== undefined && off.lazy > 0 ? { workspace_unmount: 'lazy' } : {}),
        ...(removed ? {} : { workspace_left: true }),
        ...(who.requester !== undefined ? { requester: who.requester } : {}),
      }));
      return {
        ok: true,
        result: {
          runId: slot.runId, exitCode: o.exitCode, signal: o.signal, stdout: o.stdout, stderr: o.stderr,
          truncated: o.truncated, timedOut: o.ending === 'timeout', cancelled: o.ending === 'cancelled', durationMs: o.durationMs,
          stdoutBytes: o.stdoutBytes, stderrBytes: o.stderrBytes,
          memoryLimited: hitMemoryLimit(o.exitCode, o.signal, o.stderr) || (cgroup?.oomKilled() ?? false),
          files: collected.files,
          ...(filesNote !== '' ? { filesNote } : {}),
          // What the proxy refused, so the model can tell a refusal from a failing network.
          ...(egress ? { egress: egress.summary } : {}),
          ...(full !== undefined ? { workspaceFull: true, workspaceNote: full } : {}),
        },
      };
    } catch (error) {
      // Security: a failure after the spend still leaves its line — a reject before the accept, an
      // exit after it — so no spent token and no accepted run is left without its end on record.
      const code = isSkillMcpError(error) ? error.code : 'INTERNAL';
      if (slot.ended) throw error;
      if (!accepted) return reject('internal', code, `the run could not be started (${code}); nothing ran, but its token was spent — ask again for a fresh preview`, { token_id: tokenId, error: code });
      slot.ended = true;
      this.stats.ended('error');
      slot.lines.push(deps.audit.append({ event: 'run.exit', run_id: slot.runId, ended: 'error', error: code, ...(who.requester !== undefined ? { requester: who.requester } : {}) }));
      throw error;
    } finally {
      await proxy?.close();
      await watch?.finish();
      // Security: no run's tmpfs stays mounted, whatever way this ended (before the folder's removal, which it would stop).
      if (tmpfs) unmountAll(scratch);
      cgroup?.remove();
      removeRunFolder(scratch);
      if (uid !== undefined) await deps.uidPool?.release(uid);
    }
  }

  /** Kills every run (waiting ones leave the queue) and waits for them to wind down (shutdown). */
  async stop(): Promise<void> {
    const slots = [...this.runs];
    for (const slot of slots) this.kill(slot);
    await Promise.all(slots.map((slot) => slot.proc?.outcome));
  }
}
