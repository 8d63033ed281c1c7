/**
 * @module The runner's side of a run's helper (docs/architecture.md §8, "The run's helper"): how
 * the helper is started, and the closed table of what the runner accepts from it.
 *
 * Started as (each step execs the next):
 *
 *   root:          setpriv (a uid of its own from the run range — neither root nor the run's —,
 *                    no groups, no capabilities, no_new_privs, killed with the runner)
 *                    → bwrap (user, pid, ipc, uts namespaces; the host's network) → prlimit → node helper
 *   ordinary user: bwrap (the same, no_new_privs and death with the runner by itself) → prlimit → node helper
 *
 * The helper sees /usr, the /etc files programs need, the run's node, its own bundle and its own
 * folder — not the runner's state, not the skill, not any run's workspace — and runs under the
 * same syscall filter as scripts. It lives in a folder of the scratch directory named like a run's
 * (`run-<pid>-<id>-helper`), so a dead runner's helper folders go with its run folders at the next
 * start. The run reaches its socket through that folder: as root the folder's group is set to the
 * run's gid when the helper is given its run (mode 2750: only the helper writes, only that run enters).
 *
 * Security: a helper is not trusted. Its messages are checked against helper-protocol.ts, `ready`
 * and `closed` are taken once and in turn, its egress lines are capped per run, and anything else —
 * a bad frame, a message out of turn, an exit — ends its run (`helper_failed`), never the runner.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { FrameCodec } from '../../shared/frame.js';
import type { HostLayout } from '../sandbox/bwrap.js';
import { SANDBOX_PROCESS, SEAL_VIEW, systemView } from '../sandbox/bwrap.js';
import type { Platform } from '../sandbox/platform.js';
import { usesBwrap } from '../sandbox/platform.js';
import type { UidPool } from '../uids/pool.js';
import { bridgeNode } from './plan.js';
import type { WalkResult } from '../workspace/walk-protocol.js';
import type { EgressRecord, HelperRedact, HelperStart, HelperToRunner, RequestRecord } from './helper-protocol.js';
import { HELPER_DIR_MOUNT, HELPER_MAX_FRAME_BYTES, helperToRunnerSchema } from './helper-protocol.js';

/** Where the helper's bundle appears inside its sandbox. */
const HELPER_SCRIPT_MOUNT = '/run/skill-mcp-helper.cjs';
/** The fd bubblewrap reads the syscall filter from. */
const HELPER_SECCOMP_FD = 3;
/** The helper's /tmp: it writes nothing there; node wants one. */
const HELPER_TMP_BYTES = 1024 * 1024;
/** How long a helper may take to answer `close` before it is killed (its connections are cut at once). */
export const HELPER_CLOSE_MS = 2_000;
/** How long a helper may take to redact its run's returns (as long as a walk may take: walk-link.ts). */
const HELPER_REDACT_MS = 30_000;
/** Diagnostics kept from a helper's stderr, for the line that says why it failed. */
const STDERR_KEEP_BYTES = 2048;

/** What the helper's command line is built from. */
export interface HelperPlan {
  bwrap: string;
  /** Caps the helper's memory and descriptors when present. */
  prlimit?: string;
  /** The node the runs' bridge uses: executable by every uid and inside the sandbox's view. */
  node: string;
  /** The runner's private copy of the helper bundle (runner/sandbox/bundles.ts). */
  script: string;
  layout: HostLayout;
  /** setpriv when the runner is root (the helper's uid is then set). */
  setpriv?: string;
}

/**
 * The helper's command line. Pure. Security: the network namespace is the host's (the helper is the
 * run's one way out), everything else is the helper's own; its writable places are its folder and
 * a 1 MiB /tmp; it may not make another user namespace; `prlimit` caps its memory and descriptors.
 */
export function helperCommand(plan: HelperPlan, dir: string, uid: number | undefined): { command: string; args: string[] } {
  const inner = [
    ...SANDBOX_PROCESS.filter((flag) => flag !== '--unshare-net'),
    '--hostname',
    'skill-helper',
    ...systemView(plan.layout, { tmpBytes: HELPER_TMP_BYTES }),
    '--ro-bind',
    plan.script,
    HELPER_SCRIPT_MOUNT,
    '--bind',
    dir,
    HELPER_DIR_MOUNT,
    '--seccomp',
    String(HELPER_SECCOMP_FD),
    ...SEAL_VIEW,
    '--chdir',
    HELPER_DIR_MOUNT,
    '--',
    // A node heap and its TLS state for 64 connections fit well within 1 GiB (RLIMIT_DATA; V8 reserves address space, so never RLIMIT_AS).
    ...(plan.prlimit ? [plan.prlimit, '--data=1073741824', '--nofile=512', '--core=0', '--'] : []),
    plan.node,
    HELPER_SCRIPT_MOUNT,
    '--dir',
    HELPER_DIR_MOUNT,
  ];
  if (uid === undefined) return { command: plan.bwrap, args: inner };
  const drop = [
    `--reuid=${uid}`,
    `--regid=${uid}`,
    '--clear-groups',
    '--no-new-privs',
    '--inh-caps=-all',
    '--bounding-set=-all',
    '--pdeathsig=KILL',
    '--',
  ];
  return { command: plan.setpriv!, args: [...drop, plan.bwrap, ...inner] };
}

export interface HelperEvents {
  /** One connection the helper reports (validated). */
  onRecord(record: EgressRecord): void;
  /** One request to a host with rules (validated). */
  onRequest(record: RequestRecord): void;
  /** The helper broke its contract or died while its run lasted: the run must end. Called once. */
  onFailure(why: string): void;
}

/** `closed`: its network ended, it waits for its run's returns (`close(true)`); `redacting`: it has them. */
type HelperState = 'idle' | 'starting' | 'running' | 'closing' | 'closed' | 'redacting' | 'ended';

/**
 * One helper process, used for one run. Made ahead of its run (a spare) or on demand; `start` gives
 * it its run, `close` takes it back; it is killed at the end either way.
 */
export class RunHelper {
  readonly child: ChildProcess;
  private state: HelperState = 'idle';
  private readonly reader = new FrameCodec(HELPER_MAX_FRAME_BYTES);
  private readonly writer = new FrameCodec(HELPER_MAX_FRAME_BYTES);
  private events: HelperEvents | undefined;
  private stderr = '';
  private whyEnded: string | undefined;
  private settleReady: ((why: string | undefined) => void) | undefined;
  private settleClosed: ((closed: boolean) => void) | undefined;
  private settleReturns: ((answer: WalkResult | { why: string }) => void) | undefined;
  /** `close` asked it to wait for its run's returns. */
  private keep = false;
  /** Resolves once the process has exited (and been released: see `released`). */
  readonly exited: Promise<void>;

  constructor(
    command: { command: string; args: string[] },
    filter: Buffer,
    /** The helper's folder on the host. */
    readonly dir: string,
    /** The helper's own uid (root), given back by `released` once it has exited. */
    readonly uid: number | undefined,
    released: () => Promise<void>,
  ) {
    this.child = spawn(command.command, command.args, {
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      env: { PATH: '/usr/bin:/bin', LANG: 'C' },
      cwd: '/',
    });
    const filterPipe = this.child.stdio[HELPER_SECCOMP_FD] as NodeJS.WritableStream | null;
    filterPipe?.on('error', () => undefined);
    filterPipe?.end(filter);
    this.child.stdin!.on('error', () => undefined);
    this.child.stdout!.on('data', (chunk: Buffer) => this.onData(chunk));
    this.child.stderr!.on('data', (chunk: Buffer) => {
      if (this.stderr.length < STDERR_KEEP_BYTES) this.stderr += chunk.toString('utf8').slice(0, STDERR_KEEP_BYTES - this.stderr.length);
    });
    this.exited = new Promise<void>((resolve) => {
      let gone = false;
      const done = (why: string): void => {
        this.end(why);
        if (gone) return;
        gone = true;
        void released().then(resolve, resolve);
      };
      this.child.once('error', (error) => done(`it could not be started (${(error as NodeJS.ErrnoException).code ?? 'error'})`));
      this.child.once('close', (code, signal) => done(`it exited (${signal ?? `status ${code}`})${this.firstStderrLine()}`));
    });
  }

  /** Gives the helper its run; resolves once its socket listens, or rejects with why it could not. */
  start(orders: HelperStart, events: HelperEvents): Promise<void> {
    if (this.state !== 'idle') return Promise.reject(new Error(this.whyEnded ?? 'the helper was already used'));
    this.state = 'starting';
    this.events = events;
    return new Promise<void>((resolve, reject) => {
      this.settleReady = (why) => (why === undefined ? resolve() : reject(new Error(why)));
      this.send(orders);
    });
  }

  /**
   * Ends the run's network: the helper cuts every connection, each reported. True when it said so
   * in turn. `returns`: it then waits for {@link redact} (killed if that does not come within
   * {@link HELPER_REDACT_MS}); otherwise it is killed now. Never rejects.
   */
  close(returns = false): Promise<boolean> {
    if (this.state !== 'running') {
      this.kill();
      return Promise.resolve(false);
    }
    this.state = 'closing';
    this.keep = returns;
    const closed = new Promise<boolean>((resolve) => (this.settleClosed = resolve));
    this.send(returns ? { type: 'close', returns: true } : { type: 'close' });
    const timer = setTimeout(() => this.end(`it did not answer close within ${HELPER_CLOSE_MS} ms`), HELPER_CLOSE_MS);
    return closed.finally(() => {
      clearTimeout(timer);
      if (this.state !== 'closed') this.kill();
      // Waiting past the longest walk (30 s) and then some: never sent its returns, it is ended.
      else setTimeout(() => this.state === 'closed' && this.end('its returns never came'), 2 * HELPER_REDACT_MS).unref();
    });
  }

  /**
   * The run's returns redacted by the helper, which holds the run's values (after `close(true)`
   * answered): its answer, unchecked yet (walk-link.ts `checkWalk` checks it as a walk's), or why
   * there is none. The helper is killed after. Never rejects.
   */
  redact(returns: Omit<HelperRedact, 'type'>): Promise<WalkResult | { why: string }> {
    if (this.state !== 'closed') {
      this.kill();
      return Promise.resolve({ why: this.whyEnded ?? 'it was not waiting for them' });
    }
    this.state = 'redacting';
    const answer = new Promise<WalkResult | { why: string }>((resolve) => (this.settleReturns = resolve));
    this.send({ type: 'redact', ...returns });
    const timer = setTimeout(() => this.end(`it did not answer within ${HELPER_REDACT_MS} ms`), HELPER_REDACT_MS);
    return answer.finally(() => {
      clearTimeout(timer);
      this.kill();
    });
  }

  /** Kills the helper (its bubblewrap, and with it everything inside). */
  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }

  private send(message: unknown): void {
    this.child.stdin!.write(this.writer.encode(message));
  }

  private firstStderrLine(): string {
    const line = this.stderr.split('\n')[0]?.trim();
    return line ? `: ${line.slice(0, 300)}` : '';
  }

  /** Security: a helper's bytes are parsed by the frame codec and its schema only, and any breach ends it. */
  private onData(chunk: Buffer): void {
    for (const event of this.reader.push(chunk)) {
      if (this.state === 'ended') return;
      if (!event.ok) {
        this.end(`it sent a frame the runner cannot read (${event.error.code})`);
        return;
      }
      const parsed = helperToRunnerSchema.safeParse(event.value);
      if (!parsed.success) {
        this.end('it sent a message outside the helper protocol');
        return;
      }
      this.onMessage(parsed.data);
    }
  }

  private onMessage(message: HelperToRunner): void {
    if (message.type === 'failed') {
      this.end(`it failed: ${message.why}`);
      return;
    }
    if (message.type === 'ready' && this.state === 'starting') {
      this.state = 'running';
      this.settleReady?.(undefined);
      return;
    }
    // Records are taken while the run lasts and while it closes (connections cut at close are reported then).
    if ((message.type === 'egress' || message.type === 'request') && (this.state === 'running' || this.state === 'closing')) {
      if (message.type === 'egress') this.events?.onRecord(message.record);
      else this.events?.onRequest(message.record);
      return;
    }
    if (message.type === 'closed' && this.state === 'closing') {
      this.state = this.keep ? 'closed' : 'ended';
      this.settleClosed?.(true);
      return;
    }
    if (message.type === 'returns' && this.state === 'redacting') {
      this.state = 'ended';
      this.settleReturns?.(message.returns);
      return;
    }
    this.end(`it sent ${message.type} out of turn`);
  }

  /** The helper is done with, for `why`: whatever waits is told, and the process is killed. */
  private end(why: string): void {
    if (this.state === 'ended') return;
    const was = this.state;
    this.state = 'ended';
    this.whyEnded = why;
    this.settleReady?.(why);
    this.settleClosed?.(false);
    this.settleReturns?.({ why });
    // Closing too: a helper that died while its script ran may be heard of only once the script,
    // its connection cut, has ended by itself — and one that ends without `closed` lost its
    // connections' records. Either way the run ends as its helper's failure, whichever came first.
    if (was === 'running' || was === 'closing') this.events?.onFailure(why);
    this.kill();
  }
}

/** Makes the folder a helper works in: the helper's own (root: owned by its uid), 0700 until it is given its run. */
export function makeHelperDir(scratchDir: string, uid: number | undefined): string {
  const dir = join(scratchDir, `run-${process.pid}-${randomBytes(8).toString('hex')}-helper`);
  mkdirSync(dir, { mode: 0o700 });
  if (uid !== undefined) chownSync(dir, uid, uid);
  return dir;
}

/**
 * Opens a helper's folder to its run (root): the run's gid as the folder's group, mode 2750 — the
 * helper (owner) writes its socket and bundle there, which inherit that group; the run's uid may
 * enter and connect; nobody else may enter at all.
 */
export function openHelperDirTo(dir: string, helperUid: number, runGid: number): void {
  chownSync(dir, helperUid, runGid);
  chmodSync(dir, 0o2750);
}

/** Removes a helper's folder (its socket and bundle). Never throws. */
export function removeHelperDir(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch {
    // Left for the next start's sweep (named like a run folder of this runner).
  }
}

/**
 * One spare helper, started ahead of its run, so a run with egress does not wait for a node to
 * start (tens of milliseconds on a small machine). A spare is used once; the next is started when
 * its run has answered (RunnerService.run). A spare that died is replaced by a fresh start.
 */
export class HelperPool {
  private spare: Promise<RunHelper | Error> | undefined;
  private closed = false;
  /** A run has needed a helper: from then on a spare is kept (as root, a spare holds a run uid). */
  private wanted = false;

  /** `make` is told whether the pool is closed (the runner stopping) before it spawns. */
  constructor(private readonly make: (stopping: () => boolean) => Promise<RunHelper>) {}

  private start(): Promise<RunHelper> {
    return this.make(() => this.closed);
  }

  /**
   * Starts a spare when there is none: at the preview of a run through the proxy (as root a spare
   * holds a uid of the run range, so a runner whose runs never reach the network holds none).
   */
  warm(): void {
    this.wanted = true;
    if (!this.closed && this.spare === undefined) this.spare = this.start().catch((error: unknown) => error as Error);
  }

  /** After a run's answer: the spare for the next, once any run has needed one. */
  replenish(): void {
    if (this.wanted) this.warm();
  }

  /** A helper for one run: the spare when it is alive, else a fresh one. Throws when none can be started. */
  async take(): Promise<RunHelper> {
    this.wanted = true;
    const spare = this.spare;
    this.spare = undefined;
    const ready = spare === undefined ? undefined : await spare;
    if (ready instanceof RunHelper && ready.child.exitCode === null && ready.child.signalCode === null) return ready;
    return this.start();
  }

  /**
   * Kills the spare (the runner is stopping), waiting for its end at most HELPER_CLOSE_MS: a stop
   * must end even if a killed helper's pipes were to stay open (CI once saw a runner's stop hang
   * past 60 s as an ordinary user; not reproduced, so bounded here).
   */
  async close(): Promise<void> {
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, HELPER_CLOSE_MS)));
    const ended = (async () => {
      const spare = await this.spare;
      if (spare instanceof RunHelper) {
        spare.kill();
        await spare.exited;
      }
    })();
    await Promise.race([ended, late]);
    clearTimeout(timer);
  }
}

/**
 * The helpers of this runner, or why it has none: the bubblewrap levels only (no other level has a
 * run proxy), with the syscall filter (a helper never runs without it) and the node the runs' bridge
 * uses. The helper bundle sits beside the runner's own in dist/.
 */
export function helperPoolFor(opts: {
  platform: Platform;
  scratchDir: string;
  uidPool: UidPool | undefined;
  /** The runner's copy of the helper bundle (runner/sandbox/bundles.ts), or why there is none. */
  bundle: { path: string } | { why: string };
}): HelperPool | { why: string } {
  const { platform } = opts;
  const { bwrap, prlimit, setpriv } = platform.tools;
  const node = bridgeNode(platform);
  if (!usesBwrap(platform) || platform.layout === undefined || bwrap === undefined) return { why: 'no bubblewrap sandbox here' };
  if (platform.seccomp === undefined) return { why: `no syscall filter for ${process.arch}` };
  if (node === undefined) return { why: 'no node interpreter every uid can run' };
  if (opts.uidPool !== undefined && setpriv === undefined) return { why: 'no setpriv to give a helper its own uid' };
  if ('why' in opts.bundle) return { why: opts.bundle.why };
  const script = opts.bundle.path;
  const plan: HelperPlan = {
    bwrap,
    ...(prlimit ? { prlimit } : {}),
    node,
    script,
    layout: platform.layout,
    ...(opts.uidPool ? { setpriv: setpriv! } : {}),
  };
  const filter = platform.seccomp;
  return new HelperPool(async (stopping) => {
    const uid = await opts.uidPool?.take();
    // Security: a spare whose uid came only after the runner began to stop is never spawned — its
    // stop may have given up waiting for it, and a helper started then would outlive the runner.
    if (stopping()) {
      if (uid !== undefined) await opts.uidPool?.release(uid);
      throw new Error('the runner is stopping');
    }
    let dir: string;
    try {
      dir = makeHelperDir(opts.scratchDir, uid);
    } catch (error) {
      if (uid !== undefined) await opts.uidPool?.release(uid);
      throw error;
    }
    return new RunHelper(helperCommand(plan, dir, uid), filter, dir, uid, async () => {
      removeHelperDir(dir);
      if (uid !== undefined) await opts.uidPool?.release(uid);
    });
  });
}
