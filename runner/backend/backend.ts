/**
 * @module The backend seam (docs/architecture.md §8, "The backend seam"): how an approved, derived
 * run becomes a sandboxed process, behind one interface. The runner decides and accounts — the
 * token, its spend, the accept and exit lines, the run's helper — and a backend turns the run's plan,
 * limits and mounts (all data) into a process: `prepareFolders` (its folder and workspace holding its
 * inputs), `prepareProcess` (its limits and the spawn itself, as data), `start` (the process, held
 * until the runner lets it go where the backend can hold it), its outcome's captured streams and a
 * `cancel` to stop it, `reap` (nothing of it left alive, so its outputs can be walked), then
 * `discard` (a run that ended before answering) or `cleanUp` (after its answer).
 *
 * The bubblewrap and uid levels on this machine are the first backend (local.ts). A cluster
 * sandbox would be a second: what it must provide is in docs/architecture.md.
 */
import type { ErrorCode } from '../../shared/errors.js';
import type { InputFile } from '../../shared/run-io.js';
import type { RunningProcess } from '../sandbox/process.js';
import type { RunCgroup } from '../sandbox/run-cgroup.js';
import type { SpawnPlan, SpawnSpec } from '../sandbox/spawn.js';
import type { WorkspaceCap } from '../workspace/capacity.js';
import type { Workspace } from '../workspace/workspace.js';
import type { OpenedData } from '../data/folder.js';

/** What a backend is given of a run: what it runs, as whom, with what, and its caps. */
export interface BackendRun {
  runId: string;
  plan: SpawnPlan & { willRun: SpawnPlan['willRun'] & { envNames: readonly string[] } };
  /** The run's own uid (root), or undefined (the runner's). */
  uid: number | undefined;
  /** The run's folder on the host. */
  scratch: string;
  files: readonly InputFile[];
  stdin?: Uint8Array;
  cap: WorkspaceCap;
  /** The skill's data folder, made ready (runner/data/folder.ts): bound read-write, `MCP_DATA_DIR`. */
  data?: OpenedData;
}

/** Why a backend could not make a run ready: nothing of it ran. */
export interface BackendRefusal {
  refused: true;
  code: ErrorCode;
  message: string;
}

/** The run's folders, made. */
export interface RunFolders {
  ws: Workspace;
  /** HOME outside bubblewrap (bubblewrap gives the run a private /tmp instead). */
  home: string;
  /** The workspace is a size-capped tmpfs of its own (root). */
  tmpfs: boolean;
}

/** The run ready to start: its folders, its memory group, and its spawn as data. */
export interface PreparedRun extends RunFolders {
  cgroup: RunCgroup | undefined;
  spec: SpawnSpec;
  /** The spawn is held until the runner lets it go (the go-ahead): the spend and the accept line may follow the spawn call. */
  held: boolean;
}

/** What a run's reap found: processes it killed or could not, SysV objects removed, and whether its group ended empty. */
export interface Reaped {
  leftovers: { killed: number; remaining: number };
  /** Why the group's kill failed (its uid was swept instead), if it did. */
  error?: string;
  ipcRemoved: number;
  /** The run's cgroup was killed and found empty: its uid has no process left. */
  emptied: boolean;
}

export interface StartHooks {
  timeoutMs: number;
  /** Held starts: settles with undefined to let the script go, or with why it must not start. */
  hold?: Promise<string | undefined>;
  /** After the process exited, before its outcome: the reap. */
  afterExit: () => Promise<void>;
}

export interface RunBackend {
  /** Whether this backend's starts can be held (the spend and the accept line then follow the spawn call). */
  readonly holdsStarts: boolean;
  prepareFolders(run: BackendRun): RunFolders | BackendRefusal;
  /** `helperDir`: a proxied run's helper folder (its socket and bundle are bound in). */
  prepareProcess(run: BackendRun, folders: RunFolders, helperDir: string | undefined): PreparedRun | BackendRefusal;
  start(prepared: PreparedRun, hooks: StartHooks): RunningProcess;
  reap(run: BackendRun, prepared: PreparedRun): Promise<Reaped>;
  /** Removes what a run that did not answer left (never throws); true when its folder is gone. */
  discard(run: BackendRun, folders: Partial<PreparedRun>): boolean;
}

export function isRefusal(value: unknown): value is BackendRefusal {
  return typeof value === 'object' && value !== null && (value as BackendRefusal).refused === true;
}
