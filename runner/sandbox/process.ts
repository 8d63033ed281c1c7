/**
 * @module Runs one spawned script to its end (docs/architecture.md §8): wall-clock timeout → SIGTERM to the whole
 * process group, SIGKILL after a grace; after the process exits, a hook (kill the run uid's
 * leftovers), a short drain window, then the pipes are destroyed — so the call always returns,
 * even when a detached grandchild holds stdout. Each stream is kept up to a cap (`truncated`),
 * as the script wrote it, while bytes are still counted to the end. Nothing here reads what the
 * bytes say: a run's redaction is done after it, out of the runner (runner/walker/walk.ts).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { PassThrough, type Readable } from 'node:stream';
import { openGate, parentOf, parseInfo, readStat } from './go-ahead.js';
import { holdChild, type HeldProcess } from './pidfd.js';
import { loadPosixSpawn, noteSpawnFallback, type SpawnedChild } from './posix-spawn.js';
import type { SpawnSpec } from './spawn-spec.js';

/** Past timeout + grace, how long to wait for 'exit' before returning anyway. */
const HARD_DEADLINE_SLACK_MS = 5000;
/** How long a kill waits for bubblewrap to name its sandbox's pid 1 (it does so right after its clone). */
const INFO_WAIT_MS = 2000;

export interface RunTimes {
  timeoutMs: number;
  /** SIGTERM → SIGKILL grace at the timeout; 0 sends SIGKILL at once. */
  killGraceMs: number;
  drainMs: number;
}

/**
 * `workspace-full`: stopped by the runner's workspace watcher (runner/workspace/watch.ts);
 * `helper-failed`: stopped because the run's helper, its one way to the network, failed (runner/egress/helper-link.ts).
 */
export type Ending = 'exit' | 'timeout' | 'cancelled' | 'workspace-full' | 'helper-failed' | 'spawn-failed';
/** Why the runner stops a run before its end. */
export type StopWhy = 'cancelled' | 'workspace-full' | 'helper-failed';

export interface ProcessOutcome {
  exitCode: number | null;
  signal: string | null;
  ending: Ending;
  stdout: Buffer;
  stderr: Buffer;
  stdoutBytes: number;
  stderrBytes: number;
  stdoutSha256: string;
  stderrSha256: string;
  truncated: boolean;
  /** Per stream: the bytes returned are not all the script wrote (the cap cut it). */
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  durationMs: number;
  /** `performance.now()` when the main process's exit was seen, and when `afterExit` had run (the run's phases). */
  exitedAt: number;
  reapedAt: number;
  /** Why the script was never started, when the runner stopped it (the sandbox's go-ahead failed). */
  startError?: string;
  /**
   * bubblewrap's status lines (`--json-status-fd`: its sandbox's pid 1, then the command's exit code
   * when the command was started) and whether their end was read; absent without bubblewrap. Read by
   * runner/sandbox/start-failure.ts.
   */
  sandboxStatus?: { text: string; ended: boolean };
}

/**
 * One stream up to the cap: at most `cap` bytes of the script's output are kept, bytes past it
 * counted only. The digest is of the bytes kept (for a run with values to redact, the runner takes
 * it again of what redaction returns: docs/audit.md).
 */
class Capture {
  readonly chunks: Uint8Array[] = [];
  /** Bytes kept (at most the cap). */
  kept = 0;
  total = 0;
  readonly hash = createHash('sha256');
  ended: Promise<void>;

  constructor(
    stream: Readable,
    private readonly cap: number,
  ) {
    this.ended = new Promise((resolve) => {
      stream.on('end', resolve);
      stream.on('close', resolve);
      stream.on('error', () => resolve());
    });
    stream.on('data', (chunk: Buffer) => {
      this.total += chunk.length;
      this.keep(chunk);
    });
  }

  /** A line of the runner's own (why the script was not started), kept like the script's output. */
  note(text: string): void {
    const bytes = Buffer.from(text);
    this.total += bytes.length;
    this.keep(bytes);
  }

  private keep(piece: Uint8Array): void {
    const take = piece.subarray(0, Math.max(0, this.cap - this.kept));
    if (take.length === 0) return;
    this.chunks.push(take);
    this.kept += take.length;
    this.hash.update(take);
  }

  /** Whether the stream was cut: the script wrote more than was kept. */
  finish(): boolean {
    return this.total > this.kept;
  }
}

export interface RunningProcess {
  pid: number | undefined;
  /** `performance.now()` once the spawn call returned (the chain's first program exec'd, or failed to). */
  spawnedAt: number;
  outcome: Promise<ProcessOutcome>;
  /** Kills the whole group now; the outcome then reports `why` (`cancelled` unless said). */
  cancel(why?: StopWhy): void;
}

/** How one process is run: its times, its streams' cap, what runs after its exit, and a hold on its start. */
export interface RunOptions extends RunTimes, StartHold {
  /** Each stream is kept up to this many bytes, then cut (counting goes on). */
  maxStreamBytes: number;
  /** After the process exited, before the outcome: the reap. */
  afterExit: () => Promise<void>;
}

/** The parent pid of `pid` (/proc), or undefined when it is gone. */
function parentPidOf(pid: number): number | undefined {
  const stat = readStat(pid);
  return stat === undefined ? undefined : parentOf(stat);
}

/** The same child through Node's `child_process.spawn` (libuv: fork + exec). */
function spawnWithNode(spec: SpawnSpec): SpawnedChild {
  const extra = spec.fds.map((bytes) => (bytes === undefined ? 'ignore' : 'pipe') as 'ignore' | 'pipe');
  if (spec.infoFd !== undefined) {
    while (3 + extra.length < spec.infoFd) extra.push('ignore');
    extra.push('pipe');
  }
  const child = spawn(spec.command, spec.args, {
    cwd: spec.cwd,
    env: spec.env,
    stdio: [spec.stdin !== undefined ? 'pipe' : 'ignore', 'pipe', 'pipe', ...extra],
    detached: true,
    shell: false,
  });
  return (spec.infoFd !== undefined ? Object.assign(child, { info: child.stdio[spec.infoFd] }) : child) as unknown as SpawnedChild;
}

/** A spawn that never happened: no pid, empty streams; the caller emits its exit. */
function unstarted(): SpawnedChild {
  const empty = (): PassThrough => new PassThrough().end() as PassThrough;
  const child = Object.assign(new EventEmitter(), { pid: undefined, stdin: null, stdout: empty(), stderr: empty() });
  return Object.assign(child, { stdio: [null, child.stdout, child.stderr] }) as unknown as SpawnedChild;
}

/**
 * What a gated spawn waits for besides its limits: `hold` settles with `undefined` when the script
 * may start, or with why it may not (then it never does: the run ends `spawn-failed`, that reason
 * its `startError`). The sandbox is built meanwhile; only the go-ahead's byte waits.
 */
export interface StartHold {
  hold?: Promise<string | undefined>;
}

/** Starts `spec` and supervises it. `afterExit` runs once the main process has exited. */
export function runProcess(spec: SpawnSpec, options: RunOptions): RunningProcess {
  const { maxStreamBytes, afterExit } = options;
  const times: RunTimes = options;
  const start: StartHold = options;
  const started = performance.now();
  // Security: no shell, argv array, stdin /dev/null (or a pipe holding the approved stdin), own
  // session and group (detached), env given whole (never merged with ours), every signal at its
  // default; fds above 2 are not passed (Node's are close-on-exec; posix_spawn also closes any the
  // runner inherited without it) but for fds 3+: the launcher's orders and bubblewrap's filter,
  // each a pipe written once and closed. posix_spawn where libc gives it (posix-spawn.ts: no fork
  // of the runner), else libuv's fork + exec.
  const spawner = loadPosixSpawn();
  const made = spawner?.spawn(spec);
  // Security: a gated chain has no prlimit step, so only a spawn that carries the go-ahead may start it.
  const gateLost =
    spec.gate !== undefined && !(made && 'child' in made)
      ? made && 'fallback' in made
        ? made.fallback
        : 'posix_spawn is not available'
      : undefined;
  if (made && 'fallback' in made && gateLost === undefined) noteSpawnFallback(made.fallback);
  const child = gateLost !== undefined ? unstarted() : made && 'child' in made ? made.child : spawnWithNode(spec);
  const spawnedAt = performance.now();
  if (spec.stdin !== undefined && child.stdin) {
    // A script that exits without reading all of it closes the pipe: EPIPE is its choice, not an error.
    child.stdin.on('error', () => undefined);
    child.stdin.end(spec.stdin);
  }
  spec.fds.forEach((bytes, i) => {
    const stream = child.stdio[3 + i] as (NodeJS.WritableStream & { on(event: 'error', listener: () => void): unknown }) | null | undefined;
    if (bytes === undefined || !stream) return;
    stream.on('error', () => undefined); // the chain died before reading: its exit says why
    stream.end(bytes);
  });
  const out = new Capture(child.stdout!, maxStreamBytes);
  const err = new Capture(child.stderr!, maxStreamBytes);
  let ending: Ending = 'exit';
  // The sandbox's pid 1: bubblewrap's child, named on its info fd (spawn.ts, `infoFd`). Security:
  // it leaves the chain's group (a session of its own) a moment before it arms its own death
  // signal, so a group kill in that moment — a cancel or a timeout — would leave its script running
  // with no time limit and, at `namespace`, nothing to end it (CI saw one). So it is held by a pidfd
  // from the moment it is named and killed with every SIGKILL of the group. A kill asked for before
  // the info is read waits for it: bubblewrap writes it right after its clone, before the child may
  // go on, so the wait is short; the hard deadline does not wait.
  let pid1: HeldProcess | undefined;
  const timers: NodeJS.Timeout[] = [];
  let infoPending = child.info !== undefined && child.pid !== undefined;
  let killWaiting: NodeJS.Signals | undefined;
  /** The outcome is settled: a pid 1 named after it is killed and let go at once. */
  let done = false;
  const killGroup = (signal: NodeJS.Signals, now = false): void => {
    if (child.pid === undefined) return;
    if (infoPending && !now) {
      if (killWaiting === undefined) timers.push(setTimeout(killTheWaiting, INFO_WAIT_MS));
      killWaiting = killWaiting === 'SIGKILL' ? killWaiting : signal;
      return;
    }
    try {
      process.kill(-child.pid, signal);
    } catch {
      // the group is gone already
    }
    // After the group: pid 1 killed first would let the outer bubblewrap see its child die and exit
    // by itself (137) before its own SIGKILL, and the run would not read as killed.
    if (signal === 'SIGKILL') pid1?.kill();
  };
  /** The kill that waited for the info, once (its info came, or the wait is over). */
  const killTheWaiting = (): void => {
    const signal = killWaiting;
    killWaiting = undefined;
    if (signal !== undefined) killGroup(signal, true);
  };
  timers.push(
    setTimeout(() => {
      ending = 'timeout';
      if (times.killGraceMs === 0) return killGroup('SIGKILL');
      killGroup('SIGTERM');
      timers.push(setTimeout(() => killGroup('SIGKILL'), times.killGraceMs));
    }, times.timeoutMs),
  );

  let startError: string | undefined;
  // bubblewrap's status fd: a few hundred bytes in all (two JSON lines), kept whole for the outcome.
  const statusChunks: Buffer[] = [];
  let statusEnded = false;
  const statusDone = child.info ? new Promise<void>((resolve) => child.info!.once('close', resolve)) : undefined;
  const refuseStart = (why: string): void => {
    startError = why;
    ending = 'spawn-failed';
    err.note(`skill-mcp: ${why}; the script was not started\n`);
  };
  if (gateLost !== undefined) {
    refuseStart(`the sandbox's go-ahead could not be set up (${gateLost})`);
    queueMicrotask(() => child.emit('exit', null, null));
  } else if (child.info && child.pid !== undefined) {
    const stream = child.info;
    const chainPid = child.pid;
    const chunks = statusChunks;
    stream.once('end', () => (statusEnded = true));
    const named = (): void => {
      if (!infoPending) return;
      infoPending = false;
      const text = Buffer.concat(chunks).toString('utf8');
      const found = parseInfo(text);
      if ('pid' in found) pid1 = holdChild(found.pid, chainPid, parentPidOf);
      const gate = child.gate;
      if (gate && start.hold === undefined) letGo(gate, text, chainPid);
      // Security: held, the byte waits for the hold too (the run's token spent and its accept line on
      // disk, run-path.ts); a hold that fails, or is refused, never lets the script start.
      else if (gate)
        start.hold!.then(
          (why) => (why === undefined ? letGo(gate, text, chainPid) : refuseHeld(gate, why)),
          () => refuseHeld(gate, 'its start was not confirmed'),
        );
      killTheWaiting();
      if (done) pid1?.release();
    };
    /** Sets the limits and writes the byte, unless the run was killed or ended first. */
    const letGo = (gate: NonNullable<SpawnedChild['gate']>, text: string, chainPid: number): void => {
      // Cancelled, timed out or ended first: no byte; the kill takes it (or has).
      if (ending !== 'exit' || killWaiting !== undefined || done) {
        gate.close();
        return;
      }
      const opened = openGate(text, chainPid, spec.gate!.limits, { prlimit: gate.prlimit, readStat, goAhead: gate.goAhead });
      if (opened.ok) return;
      gate.close();
      // A child gone by itself: bubblewrap failed in its setup, and its exit and stderr say why.
      if (!opened.gone) {
        refuseStart(opened.why);
        killGroup('SIGKILL');
      }
    };
    const refuseHeld = (gate: NonNullable<SpawnedChild['gate']>, why: string): void => {
      gate.close();
      if (ending !== 'exit' || done) return;
      refuseStart(why);
      killGroup('SIGKILL');
    };
    stream.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      // Whole once it parses (bubblewrap writes it in pieces, the last one the closing brace).
      if ('pid' in parseInfo(Buffer.concat(chunks).toString('utf8'))) named();
    });
    stream.once('end', named);
    stream.once('close', named);
    stream.once('error', () => stream.destroy());
  }

  const outcome = new Promise<ProcessOutcome>((resolve) => {
    let settled = false;
    const finish = async (exitCode: number | null, signal: string | null): Promise<void> => {
      if (settled) return;
      settled = true;
      const exitedAt = performance.now();
      for (const timer of timers) clearTimeout(timer);
      killGroup('SIGKILL'); // the rest of the group is a leftover of a finished run
      await afterExit().catch(() => undefined);
      const reapedAt = performance.now();
      // The drain window: output still in flight is kept; a pipe held open by an escapee is not waited on.
      await Promise.race([Promise.all([out.ended, err.ended, statusDone]), new Promise((r) => setTimeout(r, times.drainMs))]);
      child.stdout?.destroy();
      child.stderr?.destroy();
      done = true;
      if (!infoPending) pid1?.release(); // else the kill that waits for the info still needs it
      const stdoutTruncated = out.finish();
      const stderrTruncated = err.finish();
      resolve({
        exitCode,
        signal,
        ending,
        stdout: Buffer.concat(out.chunks),
        stderr: Buffer.concat(err.chunks),
        stdoutBytes: out.total,
        stderrBytes: err.total,
        stdoutSha256: out.hash.digest('hex'),
        stderrSha256: err.hash.digest('hex'),
        truncated: stdoutTruncated || stderrTruncated,
        stdoutTruncated,
        stderrTruncated,
        durationMs: Math.round(performance.now() - started),
        exitedAt,
        reapedAt,
        ...(startError !== undefined ? { startError } : {}),
        ...(child.info ? { sandboxStatus: { text: Buffer.concat(statusChunks).toString('utf8').slice(0, 4096), ended: statusEnded } } : {}),
      });
    };
    // The hard deadline: whatever happens to 'exit', the call returns and releases the slot.
    timers.push(
      setTimeout(
        () => {
          ending = 'timeout';
          killGroup('SIGKILL', true);
          void finish(null, 'SIGKILL');
        },
        times.timeoutMs + times.killGraceMs + HARD_DEADLINE_SLACK_MS,
      ),
    );
    child.on('exit', (code, signal) => void finish(code, signal));
    child.on('error', (error: NodeJS.ErrnoException) => {
      // Said on the run's stderr as well, so a run that never started does not read as a silent one.
      // Only the code (ENOENT, EACCES, EMFILE …): the message would name the command's host path.
      if (startError === undefined) refuseStart(`the run's first program could not be started (${error.code ?? 'error'})`);
      ending = 'spawn-failed';
      void finish(null, null);
    });
  });
  return {
    pid: child.pid,
    spawnedAt,
    outcome,
    cancel(why: StopWhy = 'cancelled'): void {
      if (ending === 'exit') ending = why;
      killGroup('SIGKILL');
    },
  };
}
