/**
 * @module The runner's request handlers — the monitor of OpenSSH's privilege separation: a closed
 * set of requests, each re-checked from scratch. `prepare` re-derives a run and mints its token;
 * `run` verifies the token (MAC, ledger, expiry), re-derives again, refuses unless the recomputed
 * `willRun` hashes to what the token was minted for, spends the token durably, then runs the
 * script in the sandbox; `cancel` kills a run (or takes it out of the queue) at once, only when it
 * names the run's cancel id (which the front that asked for the run chose). Several runs at once,
 * each in a slot of runner/requests/admission.ts: its own uid, namespaces, scratch, limits and audit lines.
 * Everything of a run after its token is spent lives in runner/requests/run-path.ts.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { join } from 'node:path';
import type { ErrorCode } from '../../shared/errors.js';
import { MAX_TIMEOUT_MS } from '../../shared/limits.js';
import type { DescribeResult, Identity, Minted, Refusal, ResultOf, RunnerRequest, WillRun } from '../../shared/protocol.js';
import { mintToken, sameRequester, tokenLogId, verifyToken, willRunHash } from '../../shared/token.js';
import type { AuditLog } from '../audit/log.js';
import type { RejectReason, RunWho } from '../audit/events.js';
import { deriveRun } from './derive.js';
import type { DeriveContext, RunPlan } from './derive.js';
import { describeRunner } from './describe.js';
import type { ScrubResult } from '../hygiene.js';
import { isSkillMcpError } from '../../shared/errors.js';
import type { SpendOutcome, TokenLedger } from '../ledger/types.js';
import { RunCopy } from '../workspace/run-copy.js';
import { runFolderName } from '../workspace/scratch.js';
import { withInputs } from '../workspace/workspace.js';
import { digestInputs, inputsRefusal } from '../../shared/run-io.js';
import { inputsCapProblem } from '../workspace/capacity.js';
import type { WorkspaceCap, WorkspaceMode } from '../workspace/capacity.js';
import type { HelperPool, RunHelper } from '../egress/helper-link.js';
import type { RunWalks } from '../workspace/walk-link.js';
import type { RunBackend } from '../backend/backend.js';
import type { SandboxLimits } from '../sandbox/spawn.js';
import { RunStats } from './stats.js';
import { RunPhases } from './phases.js';
import type { UidPool } from '../uids/pool.js';
import { admissionClient, RunAdmission } from './admission.js';
import type { AdmissionLimits, BusyFigures } from './admission.js';
import { REAP_MS, runChecked } from './run-path.js';
import { clearData, type ClearRequest } from './data-clear.js';
import type { Answer, Reject, Slot } from './slot.js';
import { DataLocks } from '../data/locks.js';
import { takeFolderTurn } from '../data/folder-turn.js';
import { openDataFolder, readDataRecord } from '../data/folder.js';
import type { DataPlace, DataRecord, OpenedData } from '../data/folder.js';

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
  /** Proxied runs' helpers (runner/egress/helper-link.ts); undefined where no run can be proxied. */
  helpers: HelperPool | undefined;
  /** How a finished run's returns are walked and redacted (runner/workspace/walk-link.ts); undefined: a root runner without a walker. */
  walk: RunWalks | undefined;
  /** How an approved run becomes a sandboxed process (runner/backend/backend.ts): on this machine, runner/backend/local.ts. */
  backend: RunBackend;
  /** Standalone: the OS user the runner (and so the person's own skill-mcp) runs as, the requester of every run; hosted: undefined. */
  osUser?: string | undefined;
  /** Where skills' data folders live (runner/data/folder.ts); undefined: no run gets one. */
  data?: DataPlace;
}

type RunRequest = Extract<RunnerRequest, { type: 'run' }>;
type PrepareRequest = Extract<RunnerRequest, { type: 'prepare' }>;

/** How long a stopping runner waits for its runs to end and their folders to go (a run's reap alone may take REAP_MS). */
const STOP_WAIT_MS = 10_000;

/** The client of a front that names none (each such front's runs count as one client). */
const UNNAMED_CLIENT = '-';

const REUSED = 'this confirmation token was already used; each token runs once — ask again without a token';
const EXPIRED = 'the confirmation token has expired; ask again without a token for a fresh preview';

function refusal(code: ErrorCode, message: string): { ok: false; error: Refusal } {
  return { ok: false, error: { code, message } };
}

const DATA_BUSY =
  "another run using this skill's data folder is in progress (one at a time, so its data is never changed by two runs at once); nothing ran and the approval still holds: call again with the same confirmToken once it has ended";

const DATA_WAIT_CANCELLED = 'the run was cancelled while it waited for its data folder; nothing ran and its approval still holds';
const DATA_BUSY_ELSEWHERE =
  "another process is changing this skill's data folder (the operator's skill-mcp data rm or import, or another runner on this state folder); nothing ran and the approval still holds: call again with the same confirmToken once it has ended";

/** How often a run waiting for a folder's turn held by another process looks again. */
const TURN_POLL_MS = 100;

/**
 * The folder's turn between processes (runner/data/folder-turn.ts), waiting up to `waitMs` for
 * another process to give it back; `busy` after that, `left` when the run was cancelled meanwhile.
 */
async function waitFolderTurn(
  base: string,
  key: readonly string[],
  leave: AbortSignal,
  waitMs: number,
): Promise<{ ok: true; give: () => void } | { ok: false; why: 'busy' | 'left' }> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const turn = takeFolderTurn(base, key);
    if (turn.ok) return turn;
    if (leave.aborted) return { ok: false, why: 'left' };
    if (Date.now() >= deadline) return { ok: false, why: 'busy' };
    await new Promise((resolve) => setTimeout(resolve, TURN_POLL_MS));
  }
}

const AUDIT_DOWN =
  'the audit log cannot be written, so nothing runs (every run must be on record first); nothing ran and the approval still holds — try again once the operator has freed the disk holding the audit log';

/**
 * Who asked and how (docs/audit.md): the verified identity the front passes (hosted with OAuth),
 * else the runner's own OS user (standalone: the person's own skill-mcp started it); the
 * approval channel as the front says it — the runner cannot check either (SECURITY.md).
 */
function whoOf(req: PrepareRequest | RunRequest | ClearRequest, osUser: string | undefined): RunWho {
  const who: RunWho = req.identity
    ? { requester: req.identity.subject, requester_from: 'oauth' }
    : osUser !== undefined
      ? { requester: osUser, requester_from: 'os-user' }
      : {};
  const approval = req.type === 'prepare' ? undefined : req.approval;
  if (approval !== undefined)
    who.approval = { channel: approval.channel, ...(approval.approver !== undefined ? { approver: approval.approver } : {}) };
  // The W3C trace the request came under (the front passes a well-formed one only), for joining logs.
  if (req.traceparent !== undefined) who.traceparent = req.traceparent;
  return who;
}

export class RunnerService {
  /** Every run from its request to its end, waiting or running. */
  private readonly runs = new Set<Slot>();
  /** Runs that answered and whose folders are still being removed (each holds its slot and uid until done). */
  private readonly removing = new Set<Promise<void>>();
  /** Every run() in progress, from its request to its answer. */
  private readonly answering = new Set<Promise<unknown>>();
  private readonly admission: RunAdmission;
  /** One run at a time per data folder. */
  private readonly dataLocks: DataLocks;
  /** Counts for the metrics endpoint (describe carries them). */
  readonly stats = new RunStats();

  constructor(private readonly deps: ServiceDeps) {
    this.admission = new RunAdmission(deps.admission, MAX_TIMEOUT_MS + deps.killGraceMs + deps.drainMs + REAP_MS);
    this.dataLocks = new DataLocks(deps.admission.queueMs);
  }

  /** The most runner connections runs can hold at once: every slot and every queue place. */
  get maxRunConnections(): number {
    return this.deps.admission.maxRuns + this.admission.maxWaiting;
  }

  async describe(skills?: readonly string[], identity?: Identity): Promise<DescribeResult> {
    return {
      ...(await describeRunner(this.deps.ctx, this.deps.environ, this.deps.refusedWhy?.message, skills, this.deps.data?.base, identity)),
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
    const bad =
      inputsRefusal(
        files.map((f) => f.path),
        files.map((f) => f.size),
        req.inputs?.stdin?.size ?? 0,
        this.deps.limits.inputBytes,
      ) ??
      this.capRefusal(
        files.map((f) => f.path),
        files.map((f) => f.size),
      );
    if (bad) {
      await this.deps.audit.append({
        event: 'run.prepare',
        skill: req.skill,
        script: req.script,
        refused: bad.code === 'TOO_LARGE' ? 'too-large' : 'invalid-path',
        ...who,
      });
      return refusal(bad.code, bad.message);
    }
    const derived = await deriveRun(this.deps.ctx, { skill: req.skill, script: req.script, args: req.args, caller: req.identity });
    if (!derived.ok) {
      await this.deps.audit.append({ event: 'run.prepare', skill: req.skill, script: req.script, refused: derived.reason, ...who });
      return refusal(derived.code, derived.message);
    }
    const minted = this.mint(withInputs(derived.plan.willRun, req.inputs), req.identity?.subject);
    const used = derived.plan.data && this.deps.data && readDataRecord(this.deps.data.base, derived.plan.data.key);
    if (used) minted.dataUsed = { bytes: used.bytes, entries: used.entries, full: used.full };
    const claims = verifyToken(this.deps.key, minted.confirmToken, Date.now(), this.deps.ttlMs);
    // Security: a token is handed out only once its prepare line is on disk.
    try {
      await this.deps.audit.commit({
        event: 'run.prepare',
        skill: req.skill,
        script: req.script,
        ...(claims.ok ? { token_id: tokenLogId(claims.claims) } : {}),
        will_run_sha256: willRunHash(minted.willRun),
        ...who,
      });
    } catch {
      return refusal('AUDIT_UNAVAILABLE', AUDIT_DOWN);
    }
    // The spares this run will take, started while a person looks at its preview (each is a node
    // start of its own): the outputs walker (a root runner) and, for a run through the proxy, its
    // helper. Not at the runner's start: a runner that is never asked for a run starts neither.
    // After this answer is written (its continuations run before any immediate).
    const proxied = derived.plan.egress.mode === 'proxy';
    setImmediate(() => {
      if (proxied) this.deps.helpers?.warm();
      this.deps.walk?.warm();
    });
    return { ok: true, result: minted };
  }

  /** A person's clear of their own data folder of a skill (runner/requests/data-clear.ts). */
  clearData(req: ClearRequest): ReturnType<typeof clearData> {
    return clearData(
      {
        ctx: this.deps.ctx,
        key: this.deps.key,
        ttlMs: this.deps.ttlMs,
        ledger: this.deps.ledger,
        audit: this.deps.audit,
        data: this.deps.data,
        locks: this.dataLocks,
      },
      req,
      whoOf(req, this.deps.osUser),
    );
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
    slot.lines.push(
      this.deps.audit.append({
        event: 'run.reject',
        reason: 'busy',
        skill: req.skill,
        script: req.script,
        run_id: slot.runId,
        client: slot.client,
        ...whoOf(req, this.deps.osUser),
        running: f.running,
        max_runs: f.maxRuns,
        queued: f.queued,
        client_running: f.clientRunning,
        client_share: f.clientShare,
        waited_ms: f.waitedMs,
      }),
    );
    const share =
      f.clientRunning >= f.clientShare ? `, ${f.clientRunning} of them this client's (one client may hold ${f.clientShare} at once)` : '';
    const waited = f.waitedMs > 0 ? `waited ${Math.round(f.waitedMs / 1000)} s for a free slot` : 'the queue for a slot is full';
    const message =
      `${f.running} of ${f.maxRuns} runs are in progress${share}, ${f.queued} waiting; ${waited}. Nothing ran and the approval still holds: ` +
      `call again with the same confirmToken in a few seconds (a slot is certain to be free within ${Math.ceil(f.retryAfterMs / 1000)} s, when the earliest of those runs reaches its timeout).`;
    return { ok: false, error: { code: 'BUSY', message, busy: f } };
  }

  /**
   * Runs with a token. `abandoned` fires when the asker went away: the run is then killed.
   * `connectedAt`: the `performance.now()` its connection began (the start of its `receive` phase).
   */
  async run(req: RunRequest, abandoned?: AbortSignal, connectedAt?: number): Promise<Answer<ResultOf<'run'>>> {
    const answer = this.answer(req, abandoned, connectedAt);
    const tracked = answer.catch(() => undefined);
    this.answering.add(tracked);
    void tracked.finally(() => {
      this.answering.delete(tracked);
      // The next spare helper and walker are started once this answer is written (the server
      // writes it in this promise's continuations, before any immediate): a node starting beside
      // the run's end would slow the answer it is there to speed up. Every answer starts one, used
      // or not: starting spares only for runs already previewed was tried and measured (2026-12-07,
      // bench/helper-cost.mjs): a run sent right after its preview then waited for its spare's
      // start, +34 ms without egress and +292 ms with it.
      setImmediate(() => {
        this.deps.helpers?.replenish();
        this.deps.walk?.replenish();
      });
    });
    return answer;
  }

  private async answer(req: RunRequest, abandoned?: AbortSignal, connectedAt?: number): Promise<Answer<ResultOf<'run'>>> {
    const phases = new RunPhases(connectedAt);
    phases.mark('receive');
    const runId = randomBytes(8).toString('hex');
    const who = whoOf(req, this.deps.osUser);
    let ended = false;
    // The lines this run queued: its answer goes back only once they are written (or could not be).
    const lines: Promise<void>[] = [];
    const reject = (
      reason: RejectReason,
      code: ErrorCode,
      message: string,
      extra: { token_id?: string; error?: string } = {},
    ): { ok: false; error: Refusal } => {
      ended = true;
      this.stats.refused(reason);
      lines.push(
        this.deps.audit.append({ event: 'run.reject', reason, skill: req.skill, script: req.script, run_id: runId, ...extra, ...who }),
      );
      return refusal(code, message);
    };
    // A cancel names one run: a second run under an id in use would make it ambiguous.
    if (this.named(req.cancelId))
      return reject('internal', 'BAD_REQUEST', 'a run with this cancel id is already in progress; each run needs a fresh cancel id', {
        error: 'cancel-id-in-use',
      });
    const slot: Slot = {
      runId,
      cancelId: req.cancelId,
      client: admissionClient(req.identity, req.client, UNNAMED_CLIENT),
      cancelled: false,
      leave: new AbortController(),
      lines,
      phases,
    };
    this.runs.add(slot);
    const onAbandon = (): void => this.kill(slot);
    abandoned?.addEventListener('abort', onAbandon);
    if (abandoned?.aborted) onAbandon();
    try {
      // Security: the wait holds nothing — the token is verified and spent only in the slot, so a
      // run refused BUSY (or cancelled while it waited) keeps its approval for later.
      const admitted = await this.admission.acquire(slot.client, slot.leave.signal, (at) => {
        void this.deps.audit.append({
          event: 'run.wait',
          run_id: slot.runId,
          skill: req.skill,
          script: req.script,
          client: slot.client,
          running: at.running,
          queued: at.queued,
        });
      });
      if (!admitted.ok) {
        if (admitted.why === 'busy') return this.busy(req, slot, admitted.figures);
        return reject(
          'cancelled',
          'CANCELLED',
          'the run was cancelled while it waited for a free slot; nothing ran and its approval still holds',
        );
      }
      slot.lease = admitted.lease;
      phases.mark('admission');
      try {
        return await this.runInSlot(req, slot, reject);
      } catch (error) {
        // Security: whatever failed, the run's end is on record once (a reject unless its exit was written).
        const code = isSkillMcpError(error) ? error.code : 'INTERNAL';
        if (ended || slot.ended) throw error;
        return reject('internal', code, `the runner failed to handle the run (${code}); see its log`, { error: code });
      } finally {
        // Security: a run that answered before its folders were gone keeps its slot until they are
        // (run-path.ts): a slot counts toward the caps until the run's disk use is gone.
        if (slot.after !== undefined) this.settleAfter(slot.after, () => admitted.lease.release());
        else admitted.lease.release();
        // Its data folder's record is written before its answer (run-path.ts), and its turn is given
        // back before it too (replicas: in their Redis, bounded by its command timeout): a run of
        // the folder that follows the answer is never refused for a turn this run still held.
        await slot.dataLease?.release();
      }
    } finally {
      abandoned?.removeEventListener('abort', onAbandon);
      this.runs.delete(slot);
      await Promise.all(lines);
    }
  }

  /** Tracks a run's removal after its answer (stop waits for it), then gives back its slot. */
  private settleAfter(after: Promise<void>, release: () => void): void {
    const settled = after.finally(() => {
      release();
      this.removing.delete(settled);
    });
    this.removing.add(settled);
  }

  private async runInSlot(req: RunRequest, slot: Slot, reject: Reject): Promise<Answer<ResultOf<'run'>>> {
    const copy = new RunCopy(this.deps.scratchDir, slot.runId);
    try {
      return await this.checkAndSpawn(req, slot, reject, copy);
    } finally {
      // A run that answered removes its copy after the answer (run-path.ts afterAnswer).
      if (slot.after === undefined) copy.remove();
    }
  }

  private async checkAndSpawn(req: RunRequest, slot: Slot, reject: Reject, copy: RunCopy): Promise<Answer<ResultOf<'run'>>> {
    const { deps } = this;
    const who = whoOf(req, deps.osUser);
    if (deps.refusedWhy)
      return reject(
        deps.refusedWhy.code === 'ENVIRON_UNSCRUBBED' ? 'environ-unscrubbed' : 'sandbox-failed',
        deps.refusedWhy.code,
        deps.refusedWhy.message,
      );
    // Security: MAC first (constant time), then the ledger, then expiry; nothing else is believed before.
    const verified = verifyToken(deps.key, req.confirmToken, Date.now(), deps.ttlMs);
    if (!verified.ok && verified.code === 'TOKEN_INVALID')
      return reject(
        'token-invalid',
        'TOKEN_INVALID',
        'the confirmation token is not one this runner issued; ask again without a token to get a fresh preview',
      );
    const claims = verified.claims!;
    const tokenId = tokenLogId(claims);
    // Security: before the ledger, so a token someone else presents stays unspent for its owner.
    if (!sameRequester(claims, req.identity?.subject)) {
      return reject(
        'token-invalid',
        'TOKEN_INVALID',
        'this confirmation token was issued to another identity; ask again without a token to get a preview of your own',
        { token_id: tokenId },
      );
    }
    // Security: a ledger that cannot answer (Redis away) refuses the run; the token stays unspent.
    const ledgerDown = (error: unknown): { ok: false; error: Refusal } => {
      if (isSkillMcpError(error) && error.code === 'LEDGER_UNAVAILABLE')
        return reject('ledger-unavailable', 'LEDGER_UNAVAILABLE', error.message, { token_id: tokenId });
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
    const bad =
      inputsRefusal(
        files.map((f) => f.path),
        files.map((f) => f.bytes.length),
        req.stdin?.length ?? 0,
        deps.limits.inputBytes,
      ) ??
      this.capRefusal(
        files.map((f) => f.path),
        files.map((f) => f.bytes.length),
      );
    if (bad) return reject(bad.code === 'TOO_LARGE' ? 'too-large' : 'invalid-path', bad.code, bad.message, { token_id: tokenId });
    const inputs = digestInputs(files, req.stdin);
    slot.phases.mark('verify');
    // Security: derived from the runner's private copy of the skill, hashed as it was written; the
    // plan runs that copy, so nothing edited in the skill folder from here on reaches the run.
    const derived = await deriveRun(deps.ctx, {
      skill: req.skill,
      script: req.script,
      args: req.args,
      content: copy.source(deps.ctx),
      caller: req.identity,
    });
    if (!derived.ok) return reject(derived.reason, derived.code, derived.message, { token_id: tokenId });
    slot.phases.mark('derive');
    const plan = { ...derived.plan, willRun: withInputs(derived.plan.willRun, inputs) };
    // Security: the token is bound to what was approved; a different skill, script, argv, env set,
    // isolation or content (script, module, data file, link, added file) now means the person has
    // not approved this run.
    if (willRunHash(plan.willRun) !== claims.wr) {
      reject('draft-changed', 'DRAFT_CHANGED', '', { token_id: tokenId });
      // The fresh preview is a prepare of its own: its token is on record like any other.
      const fresh = this.mint(plan.willRun, req.identity?.subject);
      const freshClaims = verifyToken(deps.key, fresh.confirmToken, Date.now(), deps.ttlMs);
      slot.lines.push(
        deps.audit.append({
          event: 'run.prepare',
          skill: req.skill,
          script: req.script,
          ...(freshClaims.ok ? { token_id: tokenLogId(freshClaims.claims) } : {}),
          will_run_sha256: willRunHash(plan.willRun),
          draft_changed: true,
          ...whoOf({ ...req, type: 'prepare' } as PrepareRequest, deps.osUser),
        }),
      );
      return {
        ok: false,
        error: {
          code: 'DRAFT_CHANGED',
          message: 'what would run differs from what this token was approved for; show the fresh preview and confirm again',
          fresh,
        },
      };
    }
    if (slot.cancelled) return reject('cancelled', 'CANCELLED', 'the run was cancelled before it started', { token_id: tokenId });
    const data = await this.dataFolder(plan, slot, reject, tokenId);
    if (data !== undefined && 'error' in data) return data;
    const scratch = join(deps.scratchDir, runFolderName(slot.runId));
    const proxied = plan.egress.mode === 'proxy';
    // Fail closed before the spend when the log is known to be down: the token stays unspent.
    if (!deps.audit.available) return reject('audit-unavailable', 'AUDIT_UNAVAILABLE', AUDIT_DOWN, { token_id: tokenId });
    // Security: spent durably before the script starts, so no crash or restart can replay it; and
    // atomically, so of two runners on one state dir racing with the same token only one gets past.
    // A uid first (BUSY when none is free), so a refused run never burns the person's approval.
    const uid = await deps.uidPool?.take();
    slot.phases.mark('uid');
    // A proxied run's helper too, before the spend: one that cannot start refuses the run unspent.
    let helper: RunHelper | undefined;
    if (proxied) {
      try {
        if (deps.helpers === undefined) throw new Error('this runner starts no helpers (no syscall filter for them here)');
        helper = await deps.helpers.take();
      } catch (error) {
        if (uid !== undefined) await deps.uidPool?.release(uid);
        const why = error instanceof Error ? error.message : String(error);
        return reject('sandbox-failed', 'SANDBOX_UNAVAILABLE', `the run's network helper could not be started (${why}); nothing was run`, {
          token_id: tokenId,
        });
      }
    }
    // When it is spent (before the workspace, or — a held sandbox — while bubblewrap builds it, always
    // before the script may start), and the run itself to its exit line: runner/requests/run-path.ts.
    // A refused spend gives the uid back there (its finally).
    const spend = async (): Promise<{ ok: false; error: Refusal } | undefined> => {
      let spent: SpendOutcome;
      try {
        spent = await deps.ledger.spend(claims.jti, claims.exp, Date.now());
      } catch (error) {
        return ledgerDown(error);
      }
      if (spent === 'reused') return reject('token-reused', 'TOKEN_REUSED', REUSED, { token_id: tokenId });
      if (spent === 'expired') return reject('token-expired', 'TOKEN_EXPIRED', EXPIRED, { token_id: tokenId });
      return undefined;
    };
    return await runChecked(deps, this.stats, this.admission, {
      req,
      slot,
      reject,
      copy,
      who,
      tokenId,
      claims,
      plan,
      inputs,
      files,
      scratch,
      proxied,
      helper,
      uid,
      cap: this.cap,
      spend,
      ...(data !== undefined ? { data } : {}),
    });
  }

  /**
   * The run's data folder, made ready before the spend: its turn (one run at a time per folder),
   * then its record — refused DATA_FULL while the last run left it over its quota — and the folder.
   * A refusal keeps the approval. Undefined for a run without one.
   */
  private async dataFolder(
    plan: RunPlan,
    slot: Slot,
    reject: Reject,
    tokenId: string,
  ): Promise<{ opened: OpenedData; before: DataRecord | undefined } | { ok: false; error: Refusal } | undefined> {
    const { data } = this.deps;
    if (plan.data === undefined) return undefined;
    if (data === undefined)
      return reject('internal', 'INTERNAL', 'this runner has no place for data folders; nothing was run', { token_id: tokenId });
    const folder = plan.data.key.join('/');
    const turn = await this.dataLocks.acquire(folder, slot.leave.signal, (at) => {
      void this.deps.audit.append({
        event: 'run.wait',
        run_id: slot.runId,
        skill: plan.willRun.skill,
        script: plan.willRun.argv[0]!,
        client: slot.client,
        running: at.running,
        queued: at.queued,
        data_folder: folder,
      });
    });
    const cancelledWaiting = () => reject('cancelled', 'CANCELLED', DATA_WAIT_CANCELLED, { token_id: tokenId });
    if (!turn.ok) return turn.why === 'busy' ? reject('busy', 'BUSY', DATA_BUSY, { token_id: tokenId }) : cancelledWaiting();
    slot.dataLease = turn.lease;
    // Security: other processes on this base (the operator's `data rm`, another runner on this state
    // folder) take the folder's turn as a file; a run waits for it as for its queue, then BUSY.
    const local = turn.lease;
    const fileTurn = await waitFolderTurn(
      data.base,
      plan.data.key,
      slot.leave.signal,
      Math.max(0, this.deps.admission.queueMs - local.waitedMs),
    );
    if (!fileTurn.ok)
      return fileTurn.why === 'busy' ? reject('busy', 'BUSY', DATA_BUSY_ELSEWHERE, { token_id: tokenId }) : cancelledWaiting();
    slot.dataLease = {
      release: () => {
        fileTurn.give();
        local.release();
      },
    };
    // Security: replicas sharing the base take the folder's turn in their Redis too; no answer, no run.
    const shared = await data.shared?.take(folder, slot.leave.signal, Math.max(0, this.deps.admission.queueMs - turn.lease.waitedMs));
    if (shared !== undefined && !shared.ok) {
      if (shared.why === 'down')
        return reject(
          'ledger-unavailable',
          'LEDGER_UNAVAILABLE',
          `the Redis its replicas share cannot be reached (${shared.detail}), so no run of a data folder starts (two replicas could change it at once); nothing ran and the approval still holds: call again once it is back`,
          { token_id: tokenId },
        );
      return shared.why === 'busy' ? reject('busy', 'BUSY', DATA_BUSY, { token_id: tokenId }) : cancelledWaiting();
    }
    if (shared !== undefined) {
      const held = slot.dataLease;
      slot.dataLease = {
        release: async () => {
          await shared.give();
          await held.release();
        },
      };
    }
    const before = readDataRecord(data.base, plan.data.key);
    if (before?.full)
      return reject(
        'data-full',
        'DATA_FULL',
        `the skill's data folder holds ${before.bytes} bytes in ${before.entries} entries, over its quota of ${plan.data.quota.bytes} bytes and ${plan.data.quota.files} entries; nothing ran and the approval still holds. Free space first (the person: their data tool; the operator: skill-mcp data rm), then call again`,
        { token_id: tokenId },
      );
    try {
      return { opened: openDataFolder(data, plan.data.key), before };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? (isSkillMcpError(error) ? error.code : 'error');
      return reject('internal', 'INTERNAL', `the skill's data folder could not be made ready (${code}); nothing was run`, {
        token_id: tokenId,
      });
    }
  }

  /**
   * Kills every run (waiting ones leave the queue) and waits, for at most `waitMs`, until each has
   * answered and its folders are removed (shutdown). Returns how many runs were still answering or
   * removing by then (the runner.stop line says so; the next start's sweep removes what they leave).
   */
  async stop(waitMs = STOP_WAIT_MS): Promise<{ removalsPending: number }> {
    for (const slot of this.runs) this.kill(slot);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)));
    await Promise.race([Promise.all(this.answering).then(() => Promise.all(this.removing)), deadline]);
    clearTimeout(timer);
    return { removalsPending: this.answering.size + this.removing.size };
  }
}
