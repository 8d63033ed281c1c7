/**
 * @module The run after its token is spent: it makes the run's folder and workspace (a tmpfs of the
 * cap's size as root), its egress proxy and memory cgroup, writes the run.accept line (nothing runs
 * whose accept line is not on disk), spawns the script, reaps what it left, collects its output
 * files and writes its run.exit line. Its answer waits for that line on disk (its anchor follows), not for
 * the removal of its workspace and copy: that runs after, and the run keeps its uid and its slot
 * until it is done (`slot.after`). A failure after the spend still ends on record (a reject before
 * the accept, an exit after it), and the finally below unmounts, removes and releases whatever
 * other way the run ended. The checks that lead here (token,
 * ledger, re-derivation, the spend itself) stay in runner/requests/service.ts, in their order.
 */
import { chownSync, mkdirSync } from 'node:fs';
import { isSkillMcpError } from '../../shared/errors.js';
import { MAX_STREAM_BYTES } from '../../shared/limits.js';
import type { RedactionSummaryView, Refusal, ResultOf, RunnerRequest } from '../../shared/protocol.js';
import type { InputDigest, InputFile } from '../../shared/run-io.js';
import type { TokenClaims } from '../../shared/token.js';
import type { AuditLog } from '../audit/log.js';
import type { AuditEvent, RunGrant, RunWho } from '../audit/events.js';
import type { RunHelper } from '../egress/helper-link.js';
import { openHelperDirTo } from '../egress/helper-link.js';
import { startRunEgress } from '../egress/run-egress.js';
import type { RunEgress, RunEgressEnd } from '../egress/run-egress.js';
import { hitMemoryLimit } from '../sandbox/memory-limit.js';
import { runProcess } from '../sandbox/process.js';
import type { ProcessOutcome } from '../sandbox/process.js';
import { RunRedaction } from '../secrets/redact.js';
import { usesBwrap } from '../sandbox/platform.js';
import { makeRunCgroup, runCgroupLimit } from '../sandbox/run-cgroup.js';
import type { RunCgroup } from '../sandbox/run-cgroup.js';
import { buildSpawn, heldSpawn } from '../sandbox/spawn.js';
import type { SandboxLimits } from '../sandbox/spawn.js';
import { removeIpcOf } from '../sandbox/sysv-ipc.js';
import { runPaths, sandboxFailedMessage, sandboxStartFailure } from '../sandbox/start-failure.js';
import { depsBinds } from '../deps/run-env.js';
import { lineWriter, readLogFormat } from '../../shared/log-line.js';
import { reapUid } from '../uids/pool.js';
import type { UidPool } from '../uids/pool.js';
import { workspaceFullNote } from '../workspace/capacity.js';
import type { WorkspaceCap, WorkspaceMode, WorkspaceUsage } from '../workspace/capacity.js';
import { mountWorkspace, unmountAll } from '../workspace/mount.js';
import { collectOutputs, MAX_WALK_ENTRIES } from '../workspace/outputs.js';
import type { Collected } from '../workspace/outputs.js';
import type { RunCopy } from '../workspace/run-copy.js';
import { runFolderName } from '../workspace/scratch.js';
import { makeHome, makeWorkspace, removeRunFolder, removeRunFolderAsync } from '../workspace/workspace.js';
import type { Workspace } from '../workspace/workspace.js';
import { watchWorkspace } from '../workspace/watch.js';
import { walkAsRunUid } from '../workspace/walk-link.js';
import type { WalkCommand } from '../workspace/walk-link.js';
import type { WorkspaceWatch } from '../workspace/watch.js';
import type { RunAdmission } from './admission.js';
import type { DeriveContext, RunPlan } from './derive.js';
import type { RunStats } from './stats.js';
import type { Answer, Reject, Slot } from './slot.js';

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
  /** A root runner's outputs walk as the run's uid (runner/workspace/walk-link.ts). */
  walk: WalkCommand | undefined;
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

/** What the result says about redaction: the run's tally, and what each stream held back at its cap. */
function redactionView(redaction: RunRedaction, o: ProcessOutcome): RedactionSummaryView {
  const held = o.heldBack !== undefined && (o.heldBack.stdout > 0 || o.heldBack.stderr > 0) ? { heldBack: o.heldBack } : {};
  return { ...redaction.summary(), ...held };
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
 * The run's outputs: as root, walked by the run's own uid in a process of its own (never a path the
 * script chose opened by the runner); otherwise by the runner, which then holds no more than the run's uid.
 */
async function collectRunOutputs(
  deps: RunPathDeps,
  ws: Workspace,
  uid: number | undefined,
  plan: RunPlan,
  redaction: RunRedaction,
): Promise<Collected> {
  if (uid === undefined) return collectOutputs(ws, deps.limits.outputFilesBytes, MAX_WALK_ENTRIES, redaction);
  if (deps.walk === undefined)
    return {
      files: [],
      bytes: 0,
      note: "this root runner has no outputs walker (its start said why), so the run's workspace was not read; nothing of it is returned",
    };
  const walked = await walkAsRunUid({
    command: deps.walk,
    uid,
    ws,
    budgetBytes: deps.limits.outputFilesBytes,
    maxEntries: MAX_WALK_ENTRIES,
    redact: plan.redact,
  });
  redaction.absorb(walked.redacted);
  return walked.collected;
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
 * Runs a checked run: spend, workspace, proxy, cgroup, accept line, spawn, reap, collect, exit line.
 * In a held sandbox (the go-ahead, runner/sandbox/go-ahead.ts) the spend and the accept line come
 * after the spawn call instead, while bubblewrap builds the sandbox, and the script is let go only
 * once both are on disk (runProcess's hold): the same promise — nothing of the script runs before
 * its token is spent and its run is on record — at the cost of what is left of them after the spawn.
 */
export async function runChecked(
  deps: RunPathDeps,
  stats: RunStats,
  admission: RunAdmission,
  run: CheckedRun,
): Promise<Answer<ResultOf<'run'>>> {
  const { req, slot, reject, copy, who, tokenId, claims, plan, inputs, files, scratch, proxied, uid, cap } = run;
  const { phases } = slot;
  const held = heldSpawn(deps.ctx.platform);
  if (!held) {
    const refused = await run.spend();
    if (refused) {
      run.helper?.kill();
      if (uid !== undefined) await deps.uidPool?.release(uid);
      return refused;
    }
    phases.mark('spend');
  }
  /** The token is spent: a failure from here on says so. */
  let spent = !held;
  /** Settles a held sandbox's hold; undefined lets its script go. Every path that does not let it go settles it with why. */
  let settleRecord: (why: string | undefined) => void = () => undefined;
  let egress: RunEgress | undefined;
  let cgroup: RunCgroup | undefined;
  let watch: WorkspaceWatch | undefined;
  let tmpfs = false;
  let accepted = false;
  // Set once the answer is ready and afterAnswer took over the removal and the releases.
  let handedOff = false;
  // Issue 30: every value the run could see, searched for in everything it returns (runner/secrets/redact.ts).
  const redaction = new RunRedaction(plan.redact);
  // Set once the run's cgroup was killed and found empty: its uid has no process left (uids/pool.ts).
  let emptied = false;
  try {
    // The run's folder holds its workspace (the cwd), at the other levels its HOME (the namespace
    // levels give the run a RAM-backed /tmp instead), and a proxied run's egress socket.
    mkdirSync(scratch, { mode: 0o700 });
    if (uid !== undefined) chownSync(scratch, uid, uid);
    let ws: Workspace;
    let home: string;
    // Security: as root the workspace is a tmpfs of the cap's size, mounted before the inputs go in (mount.ts).
    tmpfs = deps.workspaceMode === 'tmpfs' && uid !== undefined;
    let mountFailed: string | undefined;
    const mount = tmpfs
      ? (dir: string): void => {
          try {
            mountWorkspace(dir, cap, uid!);
          } catch (error) {
            mountFailed = (error as NodeJS.ErrnoException).code ?? 'error';
            throw error;
          }
        }
      : undefined;
    try {
      ws = makeWorkspace(scratch, uid, files, mount);
      home = usesBwrap(deps.ctx.platform) ? scratch : makeHome(scratch, uid);
    } catch (error) {
      // Never run without the cap the runner keeps for every run.
      if (mountFailed !== undefined)
        return reject(
          'sandbox-failed',
          'SANDBOX_UNAVAILABLE',
          `the run's workspace could not be mounted with its size cap (${mountFailed}); nothing was run`,
          { token_id: tokenId },
        );
      return reject(
        'sandbox-failed',
        'INTERNAL',
        `the runner could not write the run's workspace (${(error as NodeJS.ErrnoException).code ?? 'error'}); nothing was run — check the scratch directory's free space`,
        { token_id: tokenId },
      );
    }
    phases.mark('workspace');
    // Security: secrets are only ever injected by the run's own proxy; never a run that would hold them otherwise.
    if (plan.secrets.length > 0 && !(proxied && usesBwrap(deps.ctx.platform)))
      return reject(
        'sandbox-failed',
        'SANDBOX_UNAVAILABLE',
        "the run has secrets, which only the bubblewrap sandbox's egress proxy can inject; nothing was run",
        { token_id: tokenId },
      );
    // Security: the run's network is its helper's, an unprivileged process of its own (runner/egress/
    // helper-link.ts): given this run's entries and only this run's secrets, it listens where the
    // sandbox binds its socket and, with bindings, writes the run CA's bundle beside it.
    const helper = run.helper;
    if (proxied && helper === undefined) throw new Error('a proxied run reached its start without a helper');
    if (helper !== undefined) {
      try {
        if (uid !== undefined && helper.uid !== undefined) openHelperDirTo(helper.dir, helper.uid, uid);
        egress = await startRunEgress({
          helper,
          audit: deps.audit,
          runId: slot.runId,
          entries: plan.egress.entries,
          secrets: plan.secrets,
          redactText: (text) => redaction.text(text),
          env: deps.ctx.env,
          timeoutMs: plan.willRun.timeoutMs,
          ...(who.requester !== undefined ? { requester: who.requester } : {}),
          onFailure: () => slot.proc?.cancel('helper-failed'),
        });
      } catch (error) {
        const why = redaction.text(error instanceof Error ? error.message : String(error));
        return reject('sandbox-failed', 'SANDBOX_UNAVAILABLE', `the run's network helper could not start (${why}); nothing was run`, {
          token_id: tokenId,
        });
      }
    }
    phases.mark('proxy');
    // Security: a root runner caps and ends the run by its own cgroup (every page counted, every task killed).
    const { cgroups } = deps.ctx.platform;
    if (cgroups) {
      try {
        // A tmpfs workspace's pages are charged to the group too.
        cgroup = makeRunCgroup(
          cgroups,
          runFolderName(slot.runId),
          runCgroupLimit(plan.willRun.memoryBytes, deps.limits.tmpBytes + (tmpfs ? cap.bytes : 0)),
        );
      } catch (error) {
        // Never run uncapped what the preview said would be capped.
        return reject(
          'sandbox-failed',
          'SANDBOX_UNAVAILABLE',
          `the run's memory cgroup could not be made (${(error as NodeJS.ErrnoException).code ?? 'error'}); nothing was run`,
          { token_id: tokenId },
        );
      }
    }
    phases.mark('cgroup');
    // Without a tmpfs, no one file may pass the workspace cap either (RLIMIT_FSIZE): the watcher then bounds the rest.
    const limits = tmpfs ? deps.limits : { ...deps.limits, fsizeBytes: Math.min(deps.limits.fsizeBytes, cap.bytes) };
    const spec = {
      ...buildSpawn({
        plan,
        platform: deps.ctx.platform,
        sourceEnv: deps.ctx.env,
        uid,
        limits,
        dirs: { workspace: ws.dir, home, ...(helper !== undefined ? { helper: helper.dir } : {}) },
        extras: cgroup ? { cgroupProcs: cgroup.procs } : {},
      }),
      ...(req.stdin !== undefined ? { stdin: req.stdin } : {}),
    };
    if (spec.envNames.join('\0') !== plan.willRun.envNames.join('\0'))
      return reject('sandbox-failed', 'INTERNAL', 'the run environment differs from the preview; nothing was run', { token_id: tokenId });
    // Security: nothing runs whose accept line is not on disk.
    const acceptLine: AuditEvent = {
      event: 'run.accept',
      run_id: slot.runId,
      runner_pid: process.pid,
      token_id: tokenId,
      skill: plan.willRun.skill,
      script: req.script,
      interpreter: plan.willRun.interpreter,
      argv: plan.willRun.argv,
      env_names: spec.envNames,
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
    // Held (see above): the spend and the line come after the spawn call. Elsewhere the line first, then the spawn.
    // Security: a held run whose spawn carried no gate would start unspent; buildSpawn gates exactly
    // where heldSpawn says, and this keeps the two from ever parting silently.
    const gated = spec.gate !== undefined;
    if (gated !== held)
      return reject('sandbox-failed', 'INTERNAL', "the run's spawn is not the one its start was planned for; nothing was run", {
        token_id: tokenId,
      });
    let onRecord: Promise<string | undefined> | undefined;
    if (gated) onRecord = new Promise((resolve) => (settleRecord = resolve));
    else {
      try {
        await deps.audit.commit(acceptLine);
      } catch {
        return reject('audit-unavailable', 'AUDIT_UNAVAILABLE', AUDIT_DOWN_SPENT, { token_id: tokenId });
      }
      accepted = true;
      phases.mark('accept');
    }
    slot.lease?.endsBy(Date.now() + plan.willRun.timeoutMs + deps.killGraceMs + deps.drainMs + REAP_MS);
    const { setpriv, kill, ipcrm } = deps.ctx.platform.tools;
    let leftovers = { killed: 0, remaining: 0 };
    let reapError: string | undefined;
    let ipcRemoved = 0;
    const afterExit = async (): Promise<void> => {
      const reapStarted = performance.now();
      await reapLeftovers();
      stats.reaped(performance.now() - reapStarted);
    };
    const reapLeftovers = async (): Promise<void> => {
      if (cgroup) {
        try {
          leftovers = await cgroup.kill();
          emptied = leftovers.remaining === 0;
        } catch (error) {
          // Security: a group whose kill failed is never taken as empty. The uid sweep (root) kills
          // what the run's uid still has; without it, the run counts one process left, so its
          // workspace is not read and the exit line says why (reap_error).
          reapError = (error as NodeJS.ErrnoException).code ?? 'error';
          leftovers = uid !== undefined && setpriv && kill ? await reapUid(uid, setpriv, kill) : { killed: 0, remaining: 1 };
        }
      } else if (uid !== undefined && setpriv && kill) leftovers = await reapUid(uid, setpriv, kill);
      // Security: without an ipc namespace, SysV objects of the uid would wait for its next run.
      if (uid !== undefined && ipcrm && deps.ctx.platform.isolation === 'uid') ipcRemoved = await removeIpcOf(uid, ipcrm);
    };
    // In bubblewrap a SIGTERM would only reach bubblewrap, whose death kills the script at once:
    // the namespace levels end a timed-out run with SIGKILL straight away (its /tmp goes with it).
    const killGraceMs = usesBwrap(deps.ctx.platform) ? 0 : deps.killGraceMs;
    const proc = runProcess(
      spec,
      { timeoutMs: plan.willRun.timeoutMs, killGraceMs, drainMs: deps.drainMs },
      MAX_STREAM_BYTES,
      afterExit,
      { stdout: redaction.stream(), stderr: redaction.stream() },
      onRecord !== undefined ? { hold: onRecord } : {},
    );
    slot.proc = proc;
    phases.mark('spawn', proc.spawnedAt);
    if (onRecord !== undefined) {
      // A held spawn that started nothing (its go-ahead could not be set up — out of fds, say — or
      // bubblewrap could not be executed) is known by now, with no pid: it ends before the spend,
      // so the person's approval is not used up by a run that never began, and no accept line is
      // written for it. The reason (never a host path: runProcess's startError) is the refusal's.
      if (proc.pid === undefined) {
        const o = await proc.outcome;
        const why = o.startError ?? 'the sandbox could not be spawned';
        return reject('sandbox-failed', 'SANDBOX_UNAVAILABLE', `${why}; nothing was run and its token was not spent`, {
          token_id: tokenId,
        });
      }
      // After the spawn call, while bubblewrap starts: the spend, then the line (never a line for a
      // token that was not spent). The script waits for both; a refusal ends its sandbox unstarted.
      const refused = await run.spend();
      if (refused) {
        settleRecord(TOKEN_NOT_SPENT);
        await proc.outcome;
        return refused;
      }
      spent = true;
      phases.mark('spend');
      deps.audit.commit(acceptLine).then(
        () => settleRecord(undefined),
        () => settleRecord(ACCEPT_NOT_WRITTEN),
      );
      if ((await onRecord) !== undefined) {
        await proc.outcome;
        return reject('audit-unavailable', 'AUDIT_UNAVAILABLE', AUDIT_DOWN_SPENT, { token_id: tokenId });
      }
      accepted = true;
      phases.mark('accept');
    }
    if (slot.cancelled) proc.cancel();
    // A helper that failed before the script was there to stop.
    if (egress?.failed !== undefined) proc.cancel('helper-failed');
    // Security: without a tmpfs the watcher is the workspace's cap: the first look over it stops the run.
    watch = watchWorkspace(ws, tmpfs ? 'tmpfs' : 'watch', cap, () => proc.cancel('workspace-full'));
    const o = await proc.outcome;
    // bubblewrap could not build the sandbox: the script never started, whatever the exit code says.
    const notStarted = sandboxStartFailure(
      o,
      runPaths({
        skillCopy: plan.realDir,
        workspace: ws.dir,
        runFolder: scratch,
        envs: depsBinds(plan.deps),
        envsDir: deps.ctx.deps.envsDir,
      }),
    );
    const startError = notStarted?.words ?? o.startError;
    phases.mark('script', o.exitedAt);
    phases.mark('reap', o.reapedAt);
    phases.mark('drain');
    // The last look, with nothing of the run left running (or the first one over the cap).
    const usage: WorkspaceUsage = await watch.finish();
    watch = undefined;
    // The helper's lines (one per connection) come before the run's exit line.
    const network: RunEgressEnd | undefined = await egress?.close();
    egress = undefined;
    // A helper that failed while the run lasted ends it as such, whether the runner's stop or the
    // script's own exit (its connection cut) came first.
    const ended =
      notStarted !== undefined ? 'spawn-failed' : network?.failed !== undefined && o.ending === 'exit' ? 'helper-failed' : o.ending;
    // Security: read only once nothing of the run is left alive to change the tree under the walk;
    // as root, by the run's own uid in a process of its own (walk-link.ts), never by the runner.
    const collected: Collected =
      leftovers.remaining > 0
        ? {
            files: [],
            bytes: 0,
            note: `${leftovers.remaining} processes of the run outlived it, so its workspace was not read; nothing of it is returned`,
          }
        : await collectRunOutputs(deps, ws, uid, plan, redaction);
    phases.mark('outputs');
    const full =
      usage.over !== undefined
        ? workspaceFullNote(usage.over, tmpfs ? 'tmpfs' : 'watch', cap, usage.why, o.ending === 'workspace-full')
        : undefined;
    const redacted = redaction.reported ? redactionView(redaction, o) : undefined;
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
      stdout_sha256: o.stdoutSha256,
      stderr_sha256: o.stderrSha256,
      truncated: o.truncated,
      leftovers_killed: leftovers.killed,
      leftovers_remaining: leftovers.remaining,
      ...(reapError !== undefined ? { reap_error: `the run's cgroup could not be killed (${reapError})` } : {}),
      ...(startError !== undefined ? { start_error: startError } : {}),
      ...(ipcRemoved > 0 ? { ipc_removed: ipcRemoved } : {}),
      ...(network?.totals ?? {}),
      ...(network?.failed !== undefined ? { helper_failed: network.failed } : {}),
      ...outputsAudit(collected),
      workspace_bytes: usage.bytes,
      workspace_files: usage.files,
      ...(usage.over !== undefined ? { workspace_full: usage.over } : {}),
      ...(redacted ? redactionAudit(redacted) : {}),
      ...(who.requester !== undefined ? { requester: who.requester } : {}),
      phases_ms: phases.snapshot(),
    });
    slot.lines.push(exitLine);
    // The answer goes once the exit line is durable; the folders go after it (afterAnswer), the
    // run's uid and slot held until then. So the result says nothing of the removal — it cannot
    // know yet; a lazy unmount or anything left is the run.cleanup line's to record.
    slot.after = afterAnswer(deps, slot.runId, exitLine, { scratch, tmpfs, copy, cgroup, uid, emptied });
    handedOff = true;
    if (notStarted !== undefined) {
      // The operator's log has bubblewrap's whole words (host paths and all); the model gets them without.
      sandboxLog.say(`run ${slot.runId}: the sandbox could not be set up, the script did not start: ${notStarted.hostWords}`);
      return { ok: false, error: { code: 'SANDBOX_FAILED', message: sandboxFailedMessage(notStarted.words) } };
    }
    return {
      ok: true,
      result: {
        runId: slot.runId,
        exitCode: o.exitCode,
        signal: o.signal,
        stdout: o.stdout,
        stderr: o.stderr,
        truncated: o.truncated,
        timedOut: o.ending === 'timeout',
        cancelled: ended === 'cancelled' || ended === 'helper-failed',
        durationMs: o.durationMs,
        stdoutBytes: o.stdoutBytes,
        stderrBytes: o.stderrBytes,
        stdoutTruncated: o.stdoutTruncated,
        stderrTruncated: o.stderrTruncated,
        memoryLimited: hitMemoryLimit(o.exitCode, o.signal, o.stderr) || (cgroup?.oomKilled() ?? false),
        files: collected.files,
        ...(collected.note !== undefined ? { filesNote: collected.note } : {}),
        // What the proxy refused, so the model can tell a refusal from a failing network.
        ...(network?.summary ? { egress: network.summary } : {}),
        // Never silent: a run stopped because its network went away says so.
        ...(ended === 'helper-failed' ? { egressNote: HELPER_FAILED_NOTE } : {}),
        ...(full !== undefined ? { workspaceFull: true, workspaceNote: full } : {}),
        ...(redacted ? { redaction: redacted } : {}),
      },
    };
  } catch (error) {
    // Security: a failure after the spend still leaves its line — a reject before the accept, an
    // exit after it — so no spent token and no accepted run is left without its end on record.
    const code = isSkillMcpError(error) ? error.code : 'INTERNAL';
    if (slot.ended) throw error;
    if (!accepted && slot.proc) {
      // A held sandbox whose run failed before its accept line was confirmed: ended unstarted.
      settleRecord('the run failed before it started');
      slot.proc.cancel();
      await slot.proc.outcome;
    }
    if (!accepted)
      return reject(
        'internal',
        code,
        `the run could not be started (${code}); nothing ran${spent ? ', but its token was spent — ask again for a fresh preview' : ''}`,
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
  } finally {
    if (egress) await egress.close();
    else run.helper?.kill();
    await watch?.finish();
    if (!handedOff) {
      // Security: no run's tmpfs stays mounted, whatever way this ended (before the folder's removal, which it would stop).
      if (tmpfs) unmountAll(scratch);
      cgroup?.remove();
      const removed = removeRunFolder(scratch);
      if (uid !== undefined) await deps.uidPool?.release(uid, emptied, !removed);
    }
  }
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
