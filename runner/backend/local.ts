/**
 * @module The first backend (backend.ts): runs on this machine, at the isolation level its probe
 * found (docs/isolation.md) — bubblewrap with or without a uid of the run's own, or the uid levels
 * without it. Each step is the one the run path always took, in the same order: the run's folder
 * and workspace (as root a size-capped tmpfs, mounted before the inputs go in), its memory cgroup
 * (root), its spawn as data (runner/sandbox/spawn.ts), the process (runner/sandbox/process.ts), and
 * the reap of everything of its uid or group.
 */
import { chownSync, mkdirSync } from 'node:fs';
import { MAX_STREAM_BYTES } from '../../shared/limits.js';
import type { Platform } from '../sandbox/platform.js';
import { usesBwrap } from '../sandbox/platform.js';
import { runProcess } from '../sandbox/process.js';
import type { RunningProcess } from '../sandbox/process.js';
import { makeRunCgroup, runCgroupLimit } from '../sandbox/run-cgroup.js';
import type { RunCgroup } from '../sandbox/run-cgroup.js';
import { buildSpawn, heldSpawn } from '../sandbox/spawn.js';
import type { SandboxLimits } from '../sandbox/spawn.js';
import { removeIpcOf } from '../sandbox/sysv-ipc.js';
import { reapUid } from '../uids/pool.js';
import type { WorkspaceMode } from '../workspace/capacity.js';
import { mountWorkspace, unmountAll } from '../workspace/mount.js';
import { runFolderName } from '../workspace/scratch.js';
import { makeHome, makeWorkspace, removeRunFolder } from '../workspace/workspace.js';
import type { BackendRefusal, BackendRun, PreparedRun, Reaped, RunBackend, RunFolders, StartHooks } from './backend.js';

export interface LocalBackendOptions {
  platform: Platform;
  /** The runner's environment, which the allowlist takes a script's variables from. */
  sourceEnv: Readonly<Record<string, string | undefined>>;
  limits: SandboxLimits;
  /** How the workspace cap is kept: a tmpfs the runner (root) mounts, or its watcher (runner/workspace/capacity.ts). */
  workspaceMode: WorkspaceMode;
  killGraceMs: number;
  drainMs: number;
}

const refuse = (code: BackendRefusal['code'], message: string): BackendRefusal => ({ refused: true, code, message });

export class LocalBackend implements RunBackend {
  readonly holdsStarts: boolean;

  constructor(private readonly opts: LocalBackendOptions) {
    this.holdsStarts = heldSpawn(opts.platform);
  }

  prepareFolders(run: BackendRun): RunFolders | BackendRefusal {
    const { scratch, uid, cap, files } = run;
    // The run's folder holds its workspace (the cwd) and, at the levels without bubblewrap, its HOME.
    mkdirSync(scratch, { mode: 0o700 });
    if (uid !== undefined) chownSync(scratch, uid, uid);
    // Security: as root the workspace is a tmpfs of the cap's size, mounted before the inputs go in (mount.ts).
    const tmpfs = this.opts.workspaceMode === 'tmpfs' && uid !== undefined;
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
      const ws = makeWorkspace(scratch, uid, files, mount);
      const home = usesBwrap(this.opts.platform) ? scratch : makeHome(scratch, uid);
      return { ws, home, tmpfs };
    } catch (error) {
      // Never run without the cap the runner keeps for every run.
      if (mountFailed !== undefined)
        return refuse(
          'SANDBOX_UNAVAILABLE',
          `the run's workspace could not be mounted with its size cap (${mountFailed}); nothing was run`,
        );
      return refuse(
        'INTERNAL',
        `the runner could not write the run's workspace (${(error as NodeJS.ErrnoException).code ?? 'error'}); nothing was run — check the scratch directory's free space`,
      );
    }
  }

  prepareProcess(run: BackendRun, folders: RunFolders, helperDir: string | undefined): PreparedRun | BackendRefusal {
    const { plan, uid, cap } = run;
    let cgroup: RunCgroup | undefined;
    // Security: a root runner caps and ends the run by its own cgroup (every page counted, every task killed).
    const { cgroups } = this.opts.platform;
    if (cgroups) {
      try {
        // A tmpfs workspace's pages are charged to the group too.
        cgroup = makeRunCgroup(
          cgroups,
          runFolderName(run.runId),
          runCgroupLimit(plan.willRun.memoryBytes, this.opts.limits.tmpBytes + (folders.tmpfs ? cap.bytes : 0)),
        );
      } catch (error) {
        // Never run uncapped what the preview said would be capped.
        return refuse(
          'SANDBOX_UNAVAILABLE',
          `the run's memory cgroup could not be made (${(error as NodeJS.ErrnoException).code ?? 'error'}); nothing was run`,
        );
      }
    }
    // Without a tmpfs, no one file may pass the workspace cap either (RLIMIT_FSIZE): the watcher then bounds the rest.
    const limits = folders.tmpfs ? this.opts.limits : { ...this.opts.limits, fsizeBytes: Math.min(this.opts.limits.fsizeBytes, cap.bytes) };
    const spec = {
      ...buildSpawn({
        plan,
        platform: this.opts.platform,
        sourceEnv: this.opts.sourceEnv,
        uid,
        limits,
        dirs: {
          workspace: folders.ws.dir,
          home: folders.home,
          ...(helperDir !== undefined ? { helper: helperDir } : {}),
          ...(run.data !== undefined ? { data: run.data } : {}),
        },
        extras: cgroup ? { cgroupProcs: cgroup.procs } : {},
      }),
      ...(run.stdin !== undefined ? { stdin: run.stdin } : {}),
    };
    const prepared: PreparedRun = { ...folders, cgroup, spec, held: spec.gate !== undefined };
    if (spec.envNames.join('\0') !== plan.willRun.envNames.join('\0')) {
      cgroup?.remove();
      return refuse('INTERNAL', 'the run environment differs from the preview; nothing was run');
    }
    // Security: a held run whose spawn carried no gate would start unspent; buildSpawn gates exactly
    // where heldSpawn says, and this keeps the two from ever parting silently.
    if (prepared.held !== this.holdsStarts) {
      cgroup?.remove();
      return refuse('INTERNAL', "the run's spawn is not the one its start was planned for; nothing was run");
    }
    return prepared;
  }

  start(prepared: PreparedRun, hooks: StartHooks): RunningProcess {
    // In bubblewrap a SIGTERM would only reach bubblewrap, whose death kills the script at once:
    // the namespace levels end a timed-out run with SIGKILL straight away (its /tmp goes with it).
    const killGraceMs = usesBwrap(this.opts.platform) ? 0 : this.opts.killGraceMs;
    return runProcess(prepared.spec, {
      timeoutMs: hooks.timeoutMs,
      killGraceMs,
      drainMs: this.opts.drainMs,
      maxStreamBytes: MAX_STREAM_BYTES,
      afterExit: hooks.afterExit,
      ...(hooks.hold !== undefined ? { hold: hooks.hold } : {}),
    });
  }

  async reap(run: BackendRun, prepared: PreparedRun): Promise<Reaped> {
    const { uid } = run;
    const { setpriv, kill, ipcrm } = this.opts.platform.tools;
    const reaped: Reaped = { leftovers: { killed: 0, remaining: 0 }, ipcRemoved: 0, emptied: false };
    if (prepared.cgroup) {
      try {
        reaped.leftovers = await prepared.cgroup.kill();
        reaped.emptied = reaped.leftovers.remaining === 0;
      } catch (error) {
        // Security: a group whose kill failed is never taken as empty. The uid sweep (root) kills
        // what the run's uid still has; without it, the run counts one process left, so its
        // workspace is not read and the exit line says why (reap_error).
        reaped.error = (error as NodeJS.ErrnoException).code ?? 'error';
        reaped.leftovers = uid !== undefined && setpriv && kill ? await reapUid(uid, setpriv, kill) : { killed: 0, remaining: 1 };
      }
    } else if (uid !== undefined && setpriv && kill) reaped.leftovers = await reapUid(uid, setpriv, kill);
    // Security: without an ipc namespace, SysV objects of the uid would wait for its next run.
    if (uid !== undefined && ipcrm && this.opts.platform.isolation === 'uid') reaped.ipcRemoved = await removeIpcOf(uid, ipcrm);
    return reaped;
  }

  discard(run: BackendRun, prepared: Partial<PreparedRun>): boolean {
    // Security: no run's tmpfs stays mounted, whatever way this ended (before the folder's removal, which it would stop).
    if (prepared.tmpfs) unmountAll(run.scratch);
    prepared.cgroup?.remove();
    return removeRunFolder(run.scratch);
  }
}
