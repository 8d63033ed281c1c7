import { isSkillMcpError } from '../../shared/errors.js';
import type { RedactionSummaryView, Refusal, ResultOf, RunnerRequest } from '../../shared/protocol.js';
import type { InputDigest, InputFile } from '../../shared/run-io.js';
import type { TokenClaims } from '../../shared/token.js';
import type { AuditLog } from '../audit/log.js';
import type { AuditEvent, RunGrant, RunWho } from '../audit/events.js';
import type { BackendRefusal, BackendRun, PreparedRun, Reaped, RunBackend, RunFolders } from '../backend/backend.js';
import { isRefusal } from '../backend/backend.js';
import type { RunHelper } from '../egress/helper-link.js';
import { openHelperDirTo } from '../egress/helper-link.js';
import { startRunEgress } from '../egress/run-egress.js';
import type { RunEgress, RunEgressEnd } from '../egress/run-egress.js';
import { hitMemoryLimit } from '../sandbox/memory-limit.js';
import type { RunningProcess } from '../sandbox/process.js';
import { usesBwrap } from '../sandbox/platform.js';
import type { RunCgroup } from '../sandbox/run-cgroup.js';
import type { SandboxLimits } from '../sandbox/spawn.js';
import { runPaths, sandboxFailedMessage, sandboxStartFailure } from '../sandbox/start-failure.js';
import { depsBinds } from '../deps/run-env.js';
import { lineWriter, readLogFormat } from '../../shared/log-line.js';
import type { UidPool } from '../uids/pool.js';
import { workspaceFullNote } from '../workspace/capacity.js';
import type { WorkspaceCap, WorkspaceMode, WorkspaceUsage } from '../workspace/capacity.js';
import { unmountAll } from '../workspace/mount.js';
import { MAX_WALK_ENTRIES } from '../workspace/walk-types.js';
import type { Collected } from '../workspace/walk-types.js';
import type { RedactionValue } from '../secrets/binding.js';
import type { StreamsIn, WalkResult } from '../workspace/walk-protocol.js';
import type { RunCopy } from '../workspace/run-copy.js';
import { removeRunFolderAsync } from '../workspace/workspace.js';
import type { Workspace } from '../workspace/workspace.js';
import { watchWorkspace } from '../workspace/watch.js';
import { checkWalk, nothing, returnedStreams } from '../workspace/walk-link.js';
import type { RunWalks, Walked } from '../workspace/walk-link.js';
import type { WorkspaceWatch } from '../workspace/watch.js';
import type { RunAdmission } from './admission.js';
import type { DeriveContext, RunPlan } from './derive.js';
import type { RunStats } from './stats.js';
import type { Answer, Reject, Slot } from './slot.js';
import { writeDataRecord } from '../data/folder.js';
import type { DataPlace, DataRecord, OpenedData } from '../data/folder.js';
import { dataVerdict } from '../data/usage.js';
import type { DataUsage } from '../data/usage.js';
import { MAX_STREAM_BYTES } from '../../shared/limits.js';

type RunRequest = Extract<RunnerRequest, { type: 'run' }>;

/** The runner's own line when a run's sandbox could not start (its stderr, as runner/main.ts writes). */
const sandboxLog = lineWriter('runner', 'skill-mcp runner', readLogFormat(process.env));

/** Past a run's timeout, kill grace and drain: reaping its uid's leftovers (uids.ts gives up after ~2 s). */
export const REAP_MS = 2_500;

/** What the result says of a run stopped because its helper failed (the why goes to the audit log only). */
const HELPER_FAILED_NOTE =
  "the run's network helper (its egress proxy) failed while the script ran, so the script was stopped; nothing of this run reached the network after that. Run it again; the runner's audit log has the details";

/** Why a held sandbox's script was not let go: its token could not be spent, or its run.accept line written. */
const TOKEN_NOT_SPENT = "the run's token could not be spent";
const ACCEPT_NOT_WRITTEN = "the run's accept line could not be written to the audit log";
const AUDIT_DOWN_SPENT =
  'the audit log could not be written just before the run would start, so it did not start (every run must be on record first); its token was spent — once the operator has freed the disk holding the audit log, ask again for a fresh preview';

const NO_NETWORK = "the run's network helper could not start";

/** A run whose helper could not be given it; `why` is the helper's (its own redaction's) or the runner's words. */
function networkRefusal(why: string, token: 'spent' | 'unspent'): BackendRefusal {
  return {
    refused: true,
    code: 'SANDBOX_UNAVAILABLE',
    message: `${NO_NETWORK} (${why}); nothing was run${token === 'unspent' ? ' and its token was not spent' : ', but its token was used: ask again for a fresh preview'}`,
  };
}

/** What the run path reads of the runner service's deps (runner/requests/service.ts passes its own). */
export interface RunPathDeps {
  ctx: DeriveContext;
  audit: AuditLog;
  uidPool: UidPool | undefined;
  limits: SandboxLimits;
  /** How the workspace cap is kept: a tmpfs the runner (root) mounts, or its watcher (runner/workspace/capacity.ts). */
  workspaceMode: WorkspaceMode;
  killGraceMs: number;
  drainMs: number;
  /** How a finished run's returns are walked and redacted (runner/workspace/walk-link.ts); undefined: a root runner without a walker. */
  walk: RunWalks | undefined;
  /** How an approved run becomes a sandboxed process (runner/backend/backend.ts). */
  backend: RunBackend;
  /** Where data folders live (runner/data/folder.ts). */
  data?: DataPlace | undefined;
}

/** A run whose token and inputs passed every check, its token not spent yet (`spend` does it). */
export interface CheckedRun {
  req: RunRequest;
  slot: Slot;
  reject: Reject;
  copy: RunCopy;
  who: RunWho;
  tokenId: string;
  claims: TokenClaims;
  /** The re-derived plan, its inputs' digests joined (what the token was minted for). */
  plan: RunPlan;
  inputs: { files: InputDigest[]; stdin?: { size: number; sha256: string } };
  files: readonly InputFile[];
  /** The run's folder under the scratch directory. */
  scratch: string;
  proxied: boolean;
  /** A proxied run's helper (runner/egress/helper-link.ts), taken before the spend; given its run below. */
  helper: RunHelper | undefined;
  /** The run's own uid, taken before the spend (released by the finally below). */
  uid: number | undefined;
  /** The run's workspace caps (SKILL_MCP_RUN_WORKSPACE_BYTES, SKILL_MCP_RUN_WORKSPACE_FILES). */
  cap: WorkspaceCap;
  /** Spends the token durably and atomically in the ledger; a refusal (reused, expired, ledger down) when it cannot. */
  spend: () => Promise<{ ok: false; error: Refusal } | undefined>;
  /** Its data folder, made ready, and what its last run left there (service.ts holds its turn). */
  data?: { opened: OpenedData; before: DataRecord | undefined };
}

function grantOf(plan: RunPlan): RunGrant {
  const declarationFrom = (plan.willRun as { declarationFrom?: unknown }).declarationFrom;
  return {
    ...(plan.grantedBy ? { grant: plan.grantedBy } : {}),
    ...(typeof declarationFrom === 'string' ? { declaration_from: declarationFrom } : {}),
  };
}

/** Output files the run.exit line names at most (one line stays readable); the rest are counted. */
const AUDIT_MAX_OUTPUTS = 1000;

/** The run.exit fields for a run's output files: names, sizes, digests and why any was not carried. */
function outputsAudit(collected: Collected): Record<string, unknown> {
  const listed = collected.files
    .slice(0, AUDIT_MAX_OUTPUTS)
    .map((f) => ({ path: f.path, size: f.size, ...(f.sha256 ? { sha256: f.sha256 } : {}), ...(f.omitted ? { omitted: f.omitted } : {}) }));
  return {
    outputs: listed,
    output_bytes: collected.bytes,
    ...(collected.files.length > listed.length ? { outputs_not_logged: collected.files.length - listed.length } : {}),
    ...(collected.note !== undefined ? { outputs_note: collected.note } : {}),
  };
}

/**
 * What the result says about redaction (never a value): the markers written by name — by the walk
 * (files, names, streams) and by the run's helper (its connection records) — the names not searched
 * for, and what each stream held back at its cut.
 */
function redactionView(walked: Walked, network: RunEgressEnd | undefined): RedactionSummaryView {
  const counts = new Map<string, number>();
  for (const by of [walked.redacted, network?.redacted ?? {}])
    for (const [name, n] of Object.entries(by)) counts.set(name, (counts.get(name) ?? 0) + n);
  const names = [...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, count]) => ({ name, count }));
  const s = walked.streams;
  return {
    count: names.reduce((n, e) => n + e.count, 0),
    names,
    ...(walked.notSearched?.length ? { notSearched: walked.notSearched } : {}),
    ...(s !== undefined && (s.stdoutHeldBack > 0 || s.stderrHeldBack > 0)
      ? { heldBack: { stdout: s.stdoutHeldBack, stderr: s.stderrHeldBack } }
      : {}),
  };
}

/** The run.exit fields for redaction: counts by name, never a value. */
function redactionAudit(view: RedactionSummaryView): Record<string, unknown> {
  return {
    redacted: view.count,
    redacted_names: Object.fromEntries(view.names.map((n) => [n.name, n.count])),
    ...(view.notSearched ? { redaction_not_searched: view.notSearched } : {}),
    ...(view.heldBack ? { stdout_held_back: view.heldBack.stdout, stderr_held_back: view.heldBack.stderr } : {}),
  };
}

/**
 * The run's returns, walked and redacted: as root by the run's own uid in a process of its own
 * (never a path the script chose opened by the runner, never its bytes read by it); otherwise in
 * the runner's own process, which then holds no more than the run's uid (runner/workspace/local-walk.ts).
 */
function collectRunOutputs(
  deps: RunPathDeps,
  ws: Workspace,
  plan: RunPlan,
  /** What the walk redacts: the run's values, or none when its helper redacts its returns. */
  redact: { values: readonly RedactionValue[]; streams: StreamsIn | undefined },
  data: OpenedData | undefined,
): Promise<Walked> {
  if (deps.walk === undefined)
    return Promise.resolve({
      collected: {
        files: [],
        bytes: 0,
        note: "this root runner has no outputs walker (its start said why), so the run's workspace was not read; nothing of it is returned",
      },
      redacted: {},
    });
  // The data folder is measured by the same walk (root: as the run's uid, in its group), at most one entry past its quota.
  return deps.walk.walk({
    ws,
    budgetBytes: deps.limits.outputFilesBytes,
    maxEntries: MAX_WALK_ENTRIES,
    redact: redact.values,
    ...(redact.streams !== undefined ? { streams: redact.streams } : {}),
    ...(data && plan.data
      ? { data: { dir: data.dir, maxEntries: plan.data.quota.files, ...(data.gid !== undefined ? { gid: data.gid } : {}) } }
      : {}),
  });
}

/**
 * The returns of a run with a helper, walked without a value, redacted by that helper (after its
 * network closed) and checked as a walk's answer is. Security: what it could not redact is not
 * returned — no file, no odd name of the data folder, and (returnedStreams) neither stream.
 */
async function redactedByHelper(helper: RunHelper, found: Walked, budgetBytes: number, streams: StreamsIn): Promise<Walked> {
  const data = found.data !== undefined ? { data: found.data } : {};
  const answer = await helper.redact({ walked: { ...found.collected, redacted: found.redacted, ...data }, budgetBytes, streams });
  const failed = 'why' in answer ? `its helper could not redact them (${answer.why})` : undefined;
  const checked = failed ?? checkWalk(answer as WalkResult, budgetBytes, streams);
  if (typeof checked !== 'string') return checked;
  return {
    ...nothing(failed ?? `its helper's answer was refused (${checked})`),
    ...(found.data !== undefined ? { data: { ...found.data, odd: [] } } : {}),
  };
}

/** What a run's cleanup did, and the `run.cleanup` line's fields when it has something to record. */
export interface Cleanup {
  removed: boolean;
  line?: { workspace_unmount?: 'lazy'; workspace_left?: true; copy_left?: true };
}

/**
 * Removes what a finished run left on disk: its workspace's tmpfs (lazily when a survivor still
 * holds it), its run folder and its copy of the skill. Never throws; only what was lazy or could
 * not be removed is recorded (the `run.cleanup` line).
 */
export async function cleanUpRun(scratch: string, tmpfs: boolean, copy: RunCopy): Promise<Cleanup> {
  let lazy = false;
  try {
    lazy = tmpfs && unmountAll(scratch).lazy > 0;
  } catch {
    // Then the removal below fails on the mount and says so.
  }
  const [removed, copyLeft] = await Promise.all([
    removeRunFolderAsync(scratch),
    copy.removeAsync().then(
      () => false,
      () => true,
    ),
  ]);
  const line = {
    ...(lazy ? { workspace_unmount: 'lazy' as const } : {}),
    ...(removed ? {} : { workspace_left: true as const }),
    ...(copyLeft ? { copy_left: true as const } : {}),
  };
  return { removed, ...(Object.keys(line).length > 0 ? { line } : {}) };
}

/**
 * What a run holds from its spend to its answer, in one object: each field is set by one step of
 * {@link RunLife} and read by the ones after it (and by its end, whichever way the run ended).
 */
interface RunHeld {
  /** The token is spent: a failure from here on says so. */
  spent: boolean;
  /** The run.accept line is on disk: the run's end is an exit line, not a reject. */
  accepted: boolean;
  /** The answer is ready and afterAnswer took over the removal and the releases. */
  handedOff: boolean;
  folders?: RunFolders;
  prepared?: PreparedRun;
  egress?: RunEgress;
  watch?: WorkspaceWatch;
  reaped?: Reaped;
  /** Settles a held sandbox's hold; undefined lets its script go. Every path that does not let it go settles it with why. */
  settleRecord: (why: string | undefined) => void;
}

/**
 * One checked run, from its spend to its answer, as named steps over one {@link RunHeld}:
 * spend → folders → network (begun) → process → network (ready) → accept line → start →
 * (held: network ready, spend, accept line) → end → outputs → exit line. In a held sandbox (the
 * go-ahead, runner/sandbox/go-ahead.ts) the helper's answer, the spend and the accept line come
 * after the spawn call instead, while bubblewrap builds the sandbox, and the script is let go only
 * once all three are there (runProcess's hold): the same promise — nothing of the script runs before
 * its token is spent, its run is on record and its network listens — at the cost of what is left of
 * them after the spawn.
 */
class RunLife {
  private readonly held: RunHeld = { spent: false, accepted: false, handedOff: false, settleRecord: () => undefined };
  private readonly backendRun: BackendRun;

  constructor(
    private readonly deps: RunPathDeps,
    private readonly stats: RunStats,
    private readonly admission: RunAdmission,
    private readonly run: CheckedRun,
  ) {
    this.backendRun = {
      runId: run.slot.runId,
      plan: run.plan,
      uid: run.uid,
      scratch: run.scratch,
      files: run.files,
      ...(run.req.stdin !== undefined ? { stdin: run.req.stdin } : {}),
      cap: run.cap,
      ...(run.data ? { data: run.data.opened } : {}),
    };
  }

  private refuse(refusal: BackendRefusal): Answer<ResultOf<'run'>> {
    return this.run.reject('sandbox-failed', refusal.code, refusal.message, { token_id: this.run.tokenId });
  }

  async go(): Promise<Answer<ResultOf<'run'>>> {
    const { deps, run } = this;
    if (!deps.backend.holdsStarts) {
      const refused = await this.spend();
      if (refused) {
        run.helper?.kill();
        if (run.uid !== undefined) await deps.uidPool?.release(run.uid);
        return refused;
      }
    }
    try {
      return await this.steps();
    } catch (error) {
      return await this.failed(error);
    } finally {
      await this.release();
    }
  }

  /** The token's spend, on record in `held` and the phases. */
  private async spend(): Promise<{ ok: false; error: Refusal } | undefined> {
    const refused = await this.run.spend();
    if (refused) return refused;
    this.held.spent = true;
    this.run.slot.phases.mark('spend');
    return undefined;
  }

  private async steps(): Promise<Answer<ResultOf<'run'>>> {
    const { deps, run, held } = this;
    const { slot, plan, proxied, tokenId } = run;
    const { phases } = slot;
    const folders = deps.backend.prepareFolders(this.backendRun);
    if (isRefusal(folders)) return this.refuse(folders);
    held.folders = folders;
    phases.mark('workspace');
    // Security: secrets are only ever injected by the run's own proxy; never a run that would hold them otherwise.
    if (plan.secrets.length > 0 && !(proxied && usesBwrap(deps.ctx.platform)))
      return this.refuse({
        refused: true,
        code: 'SANDBOX_UNAVAILABLE',
        message: "the run has secrets, which only the bubblewrap sandbox's egress proxy can inject; nothing was run",
      });
    // The helper is given its run now. In a held sandbox its answer is awaited only before the spend,
    // while bubblewrap builds the sandbox: the helper's folder is bound whole, so its socket and
    // bundle may appear there after the bind, and the script is let go only after (recordWhileHeld).
    const network = this.startNetwork();
    const prepared = deps.backend.prepareProcess(this.backendRun, folders, run.helper?.dir);
    if (isRefusal(prepared)) {
      await network;
      return this.refuse(prepared);
    }
    held.prepared = prepared;
    phases.mark('cgroup');
    if (!prepared.held) {
      // Not held: the script starts with the spawn, so the helper must listen before it. The token
      // was spent before the steps (go), so a helper that cannot start uses it up.
      const noNetwork = await network;
      if (noNetwork !== undefined) return this.refuse(networkRefusal(noNetwork, 'spent'));
      phases.mark('proxy');
    }
    const acceptLine = this.acceptLine(prepared.spec.envNames);
    // Held (see above): the spend and the line come after the spawn call. Elsewhere the line first, then the spawn.
    let onRecord: Promise<string | undefined> | undefined;
    if (prepared.held) onRecord = new Promise((resolve) => (held.settleRecord = resolve));
    else {
      try {
        await deps.audit.commit(acceptLine);
      } catch {
        return run.reject('audit-unavailable', 'AUDIT_UNAVAILABLE', AUDIT_DOWN_SPENT, { token_id: tokenId });
      }
      held.accepted = true;
      phases.mark('accept');
    }
    slot.lease?.endsBy(Date.now() + plan.willRun.timeoutMs + deps.killGraceMs + deps.drainMs + REAP_MS);
    const proc = deps.backend.start(prepared, {
      timeoutMs: plan.willRun.timeoutMs,
      ...(onRecord !== undefined ? { hold: onRecord } : {}),
      afterExit: async () => {
        const reapStarted = performance.now();
        held.reaped = await deps.backend.reap(this.backendRun, prepared);
        this.stats.reaped(performance.now() - reapStarted);
      },
    });
    slot.proc = proc;
    phases.mark('spawn', proc.spawnedAt);
    if (onRecord !== undefined) {
      const notRecorded = await this.recordWhileHeld(proc, acceptLine, onRecord, network);
      if (notRecorded !== undefined) return notRecorded;
    }
    if (slot.cancelled) proc.cancel();
    // A helper that failed before the script was there to stop.
    if (held.egress?.failed !== undefined) proc.cancel('helper-failed');
    // Security: without a tmpfs the watcher is the workspace's cap: the first look over it stops the run.
    held.watch = watchWorkspace(folders.ws, folders.tmpfs ? 'tmpfs' : 'watch', run.cap, () => proc.cancel('workspace-full'));
    return this.end(proc, prepared);
  }

  /** Security: the run's network is its helper's, an unprivileged process of its own (runner/egress/
   * helper-link.ts): given this run's entries and only this run's secrets, it listens where the
   * sandbox binds its socket and, with bindings, writes the run CA's bundle beside it. */
  private async startNetwork(): Promise<string | undefined> {
    const { deps, run, held } = this;
    const { helper, uid, slot, plan, who } = run;
    if (run.proxied && helper === undefined) throw new Error('a proxied run reached its start without a helper');
    if (helper === undefined) return undefined;
    try {
      if (uid !== undefined && helper.uid !== undefined) openHelperDirTo(helper.dir, helper.uid, uid);
      held.egress = await startRunEgress({
        helper,
        audit: deps.audit,
        runId: slot.runId,
        entries: plan.egress.entries,
        ...(plan.egress.rules ? { rules: plan.egress.rules } : {}),
        secrets: plan.secrets,
        redact: plan.redact,
        env: deps.ctx.env,
        timeoutMs: plan.willRun.timeoutMs,
        ...(who.requester !== undefined ? { requester: who.requester } : {}),
        onFailure: () => slot.proc?.cancel('helper-failed'),
      });
      return undefined;
    } catch (error) {
      // The helper's words are its own redaction's (runner/helper/main.ts); the rest is the runner's.
      return error instanceof Error ? error.message : String(error);
    }
  }

  /** The run.accept line. Security: nothing runs whose accept line is not on disk. */
  private acceptLine(envNames: readonly string[]): AuditEvent {
    const { run, admission } = this;
    const { slot, plan, req, inputs, who, claims, uid, tokenId } = run;
    return {
      event: 'run.accept',
      run_id: slot.runId,
      runner_pid: process.pid,
      token_id: tokenId,
      skill: plan.willRun.skill,
      script: req.script,
      interpreter: plan.willRun.interpreter,
      argv: plan.willRun.argv,
      env_names: [...envNames],
      timeout_ms: plan.willRun.timeoutMs,
      isolation: plan.willRun.isolation,
      sandbox: plan.willRun.sandbox,
      memory_bytes: plan.willRun.memoryBytes,
      uid: uid ?? process.getuid!(),
      script_sha256: plan.willRun.content.script,
      files_sha256: plan.willRun.content.files,
      ...(plan.egress.entries.length > 0 ? { egress: plan.egress.entries, egress_mode: plan.egress.mode } : {}),
      ...(plan.willRun.deps ? { deps: plan.willRun.deps.map((d) => `${d.kind}:${d.digest}`) } : {}),
      // Names and hosts only: never a value or a placeholder.
      ...(plan.secrets.length > 0 ? { secrets: plan.secrets.map((s) => ({ name: s.name, hosts: [...s.hosts] })) } : {}),
      ...(inputs.files.length > 0 ? { inputs: inputs.files } : {}),
      ...(inputs.stdin ? { stdin_bytes: inputs.stdin.size, stdin_sha256: inputs.stdin.sha256 } : {}),
      client: slot.client,
      queued_ms: slot.lease?.waitedMs ?? 0,
      runs_in_progress: admission.running,
      will_run_sha256: claims.wr,
      ...who,
      ...grantOf(plan),
    };
  }

  /**
   * A held spawn: after the spawn call, while bubblewrap starts, the spend, then the accept line
   * (never a line for a token that was not spent). The script waits for both; a refusal ends its
   * sandbox unstarted. Undefined once both are on disk and the script is let go.
   */
  private async recordWhileHeld(
    proc: RunningProcess,
    acceptLine: AuditEvent,
    onRecord: Promise<string | undefined>,
    network: Promise<string | undefined>,
  ): Promise<Answer<ResultOf<'run'>> | undefined> {
    const { deps, run, held } = this;
    // A held spawn that started nothing (its go-ahead could not be set up — out of fds, say — or
    // bubblewrap could not be executed) is known by now, with no pid: it ends before the spend,
    // so the person's approval is not used up by a run that never began, and no accept line is
    // written for it. The reason (never a host path: runProcess's startError) is the refusal's.
    if (proc.pid === undefined) {
      const [o] = await Promise.all([proc.outcome, network]);
      const why = o.startError ?? 'the sandbox could not be spawned';
      return this.refuse({ refused: true, code: 'SANDBOX_UNAVAILABLE', message: `${why}; nothing was run and its token was not spent` });
    }
    // The run's helper, given its run before the spawn call: one that could not start ends the
    // sandbox unstarted, before the spend (nothing ran, the approval is not used up).
    const noNetwork = await network;
    if (noNetwork !== undefined) {
      held.settleRecord(NO_NETWORK);
      await proc.outcome;
      return this.refuse(networkRefusal(noNetwork, 'unspent'));
    }
    run.slot.phases.mark('proxy');
    const refused = await this.spend();
    if (refused) {
      held.settleRecord(TOKEN_NOT_SPENT);
      await proc.outcome;
      return refused;
    }
    deps.audit.commit(acceptLine).then(
      () => held.settleRecord(undefined),
      () => held.settleRecord(ACCEPT_NOT_WRITTEN),
    );
    if ((await onRecord) !== undefined) {
      await proc.outcome;
      return run.reject('audit-unavailable', 'AUDIT_UNAVAILABLE', AUDIT_DOWN_SPENT, { token_id: run.tokenId });
    }
    held.accepted = true;
    run.slot.phases.mark('accept');
    return undefined;
  }

  /** The run's end: its outcome, its workspace's last look, its network's end, its outputs, its exit line and its answer. */
  private async end(proc: RunningProcess, prepared: PreparedRun): Promise<Answer<ResultOf<'run'>>> {
    const { deps, run, held, stats } = this;
    const { slot, plan, scratch, uid, cap, who, copy } = run;
    const { phases } = slot;
    const o = await proc.outcome;
    // bubblewrap could not build the sandbox: the script never started, whatever the exit code says.
    const notStarted = sandboxStartFailure(
      o,
      runPaths({
        skillCopy: plan.realDir,
        workspace: prepared.ws.dir,
        runFolder: scratch,
        envs: depsBinds(plan.deps),
        envsDir: deps.ctx.deps.envsDir,
      }),
    );
    const startError = notStarted?.words ?? o.startError;
    phases.mark('script', o.exitedAt);
    phases.mark('reap', o.reapedAt);
    phases.mark('drain');
    // A run with values to redact and a helper has its returns redacted by that helper, which holds
    // its values already; its walk is given none (runner/secrets/returns.ts). Without a helper (legacy
    // `env` secrets, no egress) its walk redacts them.
    const redacting = plan.redact.length > 0;
    const egress = held.egress;
    held.egress = undefined;
    const byHelper = redacting && egress !== undefined;
    // The helper's end (its lines, one per connection, come before the run's exit line) overlaps the
    // workspace's last look and its walk: each waits on a process of its own.
    const closing: Promise<RunEgressEnd> | undefined = egress?.close(byHelper);
    // The last look, with nothing of the run left running (or the first one over the cap).
    const usage: WorkspaceUsage = await held.watch!.finish();
    held.watch = undefined;
    const reaped = held.reaped ?? { leftovers: { killed: 0, remaining: 0 }, ipcRemoved: 0, emptied: false };
    // Security: read only once nothing of the run is left alive to change the tree under the walk;
    // as root, by the run's own uid in a process of its own (walk-link.ts), never by the runner.
    const streams: StreamsIn | undefined = redacting
      ? { cap: MAX_STREAM_BYTES, stdout: o.stdout, stderr: o.stderr, stdoutCut: o.stdoutTruncated, stderrCut: o.stderrTruncated }
      : undefined;
    const walkValues = byHelper ? [] : plan.redact;
    const walkStreams = byHelper ? undefined : streams;
    const found: Walked =
      reaped.leftovers.remaining > 0
        ? {
            ...((walkStreams && (await deps.walk?.redactOnly(walkValues, walkStreams))) || { redacted: {} }),
            collected: {
              files: [],
              bytes: 0,
              note: `${reaped.leftovers.remaining} processes of the run outlived it, so its workspace was not read; nothing of it is returned`,
            },
          }
        : await collectRunOutputs(deps, prepared.ws, plan, { values: walkValues, streams: walkStreams }, run.data?.opened);
    const network = await closing;
    const walked = byHelper ? await redactedByHelper(run.helper!, found, deps.limits.outputFilesBytes, streams!) : found;
    const ret = returnedStreams(o, redacting, walked);
    // A helper that failed while the run lasted ends it as such, whether the runner's stop or the
    // script's own exit (its connection cut) came first.
    const ended =
      notStarted !== undefined ? 'spawn-failed' : network?.failed !== undefined && o.ending === 'exit' ? 'helper-failed' : o.ending;
    const collected: Collected = walked.collected;
    phases.mark('outputs');
    const data = this.dataAfter(walked.data);
    const full =
      usage.over !== undefined
        ? workspaceFullNote(usage.over, prepared.tmpfs ? 'tmpfs' : 'watch', cap, usage.why, o.ending === 'workspace-full')
        : undefined;
    const redacted = redacting ? redactionView(walked, network) : undefined;
    slot.ended = true;
    stats.ended(ended);
    const exitLine = deps.audit.appendDurable({
      event: 'run.exit',
      run_id: slot.runId,
      exit_code: o.exitCode,
      signal: o.signal,
      ended,
      duration_ms: o.durationMs,
      stdout_bytes: o.stdoutBytes,
      stderr_bytes: o.stderrBytes,
      stdout_sha256: ret.stdoutSha256,
      stderr_sha256: ret.stderrSha256,
      truncated: ret.stdoutTruncated || ret.stderrTruncated,
      leftovers_killed: reaped.leftovers.killed,
      leftovers_remaining: reaped.leftovers.remaining,
      ...(reaped.error !== undefined ? { reap_error: `the run's cgroup could not be killed (${reaped.error})` } : {}),
      ...(startError !== undefined ? { start_error: startError } : {}),
      ...(reaped.ipcRemoved > 0 ? { ipc_removed: reaped.ipcRemoved } : {}),
      ...(network?.totals ?? {}),
      ...(network?.failed !== undefined ? { helper_failed: network.failed } : {}),
      ...outputsAudit(collected),
      workspace_bytes: usage.bytes,
      workspace_files: usage.files,
      ...(usage.over !== undefined ? { workspace_full: usage.over } : {}),
      ...(redacted ? redactionAudit(redacted) : {}),
      ...(data?.line ?? {}),
      ...(who.requester !== undefined ? { requester: who.requester } : {}),
      phases_ms: phases.snapshot(),
    });
    slot.lines.push(exitLine);
    // The answer goes once the exit line is durable; the folders go after it (afterAnswer), the
    // run's uid and slot held until then. So the result says nothing of the removal — it cannot
    // know yet; a lazy unmount or anything left is the run.cleanup line's to record.
    slot.after = afterAnswer(deps, slot.runId, exitLine, {
      scratch,
      tmpfs: prepared.tmpfs,
      copy,
      cgroup: prepared.cgroup,
      uid,
      emptied: reaped.emptied,
    });
    held.handedOff = true;
    if (notStarted !== undefined) {
      // The operator's log gets bubblewrap's whole words; the answer only the ones safe to show (no host path).
      sandboxLog.say(`run ${slot.runId}: the sandbox could not be set up, the script did not start: ${notStarted.hostWords}`);
      return { ok: false, error: { code: 'SANDBOX_FAILED', message: sandboxFailedMessage(notStarted.words) } };
    }
    return {
      ok: true,
      result: {
        runId: slot.runId,
        exitCode: o.exitCode,
        signal: o.signal,
        stdout: ret.stdout,
        stderr: ret.stderr,
        truncated: ret.stdoutTruncated || ret.stderrTruncated,
        timedOut: o.ending === 'timeout',
        cancelled: ended === 'cancelled' || ended === 'helper-failed',
        durationMs: o.durationMs,
        stdoutBytes: o.stdoutBytes,
        stderrBytes: o.stderrBytes,
        stdoutTruncated: ret.stdoutTruncated,
        stderrTruncated: ret.stderrTruncated,
        memoryLimited: hitMemoryLimit(o.exitCode, o.signal, ret.stderr) || (prepared.cgroup?.oomKilled() ?? false),
        files: collected.files,
        ...(collected.note !== undefined ? { filesNote: collected.note } : {}),
        // What the proxy refused, so the model can tell a refusal from a failing network.
        ...(network?.summary ? { egress: network.summary } : {}),
        // Never silent: a run stopped because its network went away says so.
        ...(ended === 'helper-failed' ? { egressNote: HELPER_FAILED_NOTE } : {}),
        ...(full !== undefined ? { workspaceFull: true, workspaceNote: full } : {}),
        ...(redacted ? { redaction: redacted } : {}),
        ...(data?.result ?? {}),
      },
    };
  }

  /**
   * The data folder after the run: judged against its quota, its record kept for the next run (and
   * a restarted runner), and what the result and the exit line say. Names only, never its host path.
   */
  private dataAfter(usage: DataUsage | undefined): { result: Record<string, unknown>; line: Record<string, unknown> } | undefined {
    const { deps, run } = this;
    const { plan } = run;
    if (run.data === undefined || plan.data === undefined || deps.data === undefined) return undefined;
    // (The names a script left there came back redacted from the walk, like every name it returns.)
    const verdict = dataVerdict(usage, plan.data.quota);
    const after = { bytes: usage?.bytes ?? 0, entries: usage?.entries ?? 0, full: verdict.full, quota: plan.data.quota };
    const before = run.data.before;
    // Written only when it changed: a run that left the folder as it found it costs no write.
    const same = before !== undefined && JSON.stringify(before) === JSON.stringify(after);
    let kept = true;
    try {
      if (!same) writeDataRecord(deps.data.base, plan.data.key, after);
    } catch {
      kept = false;
    }
    return {
      result: {
        ...(usage?.unmeasured === undefined && usage !== undefined ? { data: { bytes: usage.bytes, entries: usage.entries } } : {}),
        ...(verdict.full ? { dataFull: true } : {}),
        ...(verdict.note !== undefined ? { dataNote: verdict.note } : {}),
      },
      line: {
        data_folder: plan.data.key.join('/'),
        ...(before ? { data_bytes_before: before.bytes, data_entries_before: before.entries } : {}),
        data_bytes: after.bytes,
        data_entries: after.entries,
        ...(verdict.full ? { data_full: true } : {}),
        ...(usage?.unmeasured !== undefined ? { data_unmeasured: usage.unmeasured } : {}),
        ...(usage !== undefined && usage.odd.length > 0 ? { data_odd: usage.odd } : {}),
        ...(kept ? {} : { data_record_unwritten: true }),
      },
    };
  }

  /**
   * Security: a failure after the spend still leaves its line — a reject before the accept, an
   * exit after it — so no spent token and no accepted run is left without its end on record.
   */
  private async failed(error: unknown): Promise<Answer<ResultOf<'run'>>> {
    const { deps, run, held, stats } = this;
    const { slot, tokenId, who } = run;
    const code = isSkillMcpError(error) ? error.code : 'INTERNAL';
    if (slot.ended) throw error;
    if (!held.accepted && slot.proc) {
      // A held sandbox whose run failed before its accept line was confirmed: ended unstarted.
      held.settleRecord('the run failed before it started');
      slot.proc.cancel();
      await slot.proc.outcome;
    }
    if (!held.accepted)
      return run.reject(
        'internal',
        code,
        `the run could not be started (${code}); nothing ran${held.spent ? ', but its token was spent — ask again for a fresh preview' : ''}`,
        { token_id: tokenId, error: code },
      );
    slot.ended = true;
    stats.ended('error');
    slot.lines.push(
      deps.audit.append({
        event: 'run.exit',
        run_id: slot.runId,
        ended: 'error',
        error: code,
        ...(who.requester !== undefined ? { requester: who.requester } : {}),
      }),
    );
    throw error;
  }

  /** Whatever way the run ended: its network closed, its watcher stopped, and — unless its answer took them over — its folders, group and uid released. */
  private async release(): Promise<void> {
    const { deps, run, held } = this;
    if (held.egress) await held.egress.close();
    else if (!held.handedOff) run.helper?.kill();
    await held.watch?.finish();
    if (held.handedOff) return;
    const removed = deps.backend.discard(this.backendRun, { ...held.folders, ...held.prepared });
    if (run.uid !== undefined) await deps.uidPool?.release(run.uid, held.reaped?.emptied ?? false, !removed);
  }
}

/** Runs a checked run (see {@link RunLife}). */
export function runChecked(deps: RunPathDeps, stats: RunStats, admission: RunAdmission, run: CheckedRun): Promise<Answer<ResultOf<'run'>>> {
  return new RunLife(deps, stats, admission, run).go();
}

/** What a run that answered leaves to remove, and what it holds until then. */
export interface Leftover {
  scratch: string;
  tmpfs: boolean;
  copy: RunCopy;
  cgroup: RunCgroup | undefined;
  uid: number | undefined;
  /** Its cgroup was killed and found empty (uids/pool.ts). */
  emptied: boolean;
}

/**
 * A run's end after its answer: once its exit line is durable, removes its workspace and copy
 * (cleanUpRun, on the thread pool), then its cgroup, then gives back its uid; records a lazy
 * unmount or anything left in a `run.cleanup` line. Never rejects. The caller holds the run's
 * slot until this settles (service.ts).
 * Security: the uid is released only after the removal, so no later run gets a uid whose previous
 * run's files are still on disk, and one whose folder could not be removed is never handed out
 * again by this runner (uids/pool.ts). A runner that dies before the removal leaves both folders
 * to the next start's sweep (runner/workspace/scratch.ts: named by the dead runner's pid).
 */
export async function afterAnswer(
  deps: { uidPool: UidPool | undefined; audit: Pick<AuditLog, 'append'> },
  runId: string,
  exitLine: Promise<void>,
  left: Leftover,
): Promise<void> {
  // After the exit line's fsync, not beside it: the removal's metadata would join its journal commit.
  await exitLine;
  // And after the answer has left: this continuation was attached to the exit line before the
  // answer's, and the unmount is synchronous (a tmpfs's umount2 through koffi).
  await new Promise((resolve) => setImmediate(resolve));
  const cleanup = await cleanUpRun(left.scratch, left.tmpfs, left.copy);
  left.cgroup?.remove();
  if (left.uid !== undefined) await deps.uidPool?.release(left.uid, left.emptied, !cleanup.removed);
  if (cleanup.line) await deps.audit.append({ event: 'run.cleanup', run_id: runId, ...cleanup.line });
}
