/**
 * @module A root runner's outputs walk, out of its own process (docs/architecture.md §8, "What runs
 * privileged"): once nothing of a run is left, the walk of its workspace runs as the run's own uid
 * (runner/walker/main.ts: no groups, no capabilities, no_new_privs, killed with the runner), and
 * the runner reads back one bounded frame — never a path the script chose. What comes back is
 * checked (walk-protocol.ts), bounded by the budget it was given, and every digest of bytes carried
 * is taken again here: the result and the audit line say only what the runner itself confirmed.
 *
 * A node start is tens of milliseconds, so it is not paid after the script: a spare walker waits,
 * started ahead (WalkerPool), holding nothing but CAP_SETUID and CAP_SETGID under no_new_privs; its
 * orders name the run's uid, and it becomes that uid — every capability gone, checked — before it
 * opens anything. Until then it has read nothing but the runner's own frame.
 *
 * A walk that cannot be done (the walker could not start, died, overran its time, or sent what the
 * protocol does not allow) returns no file and says why in the result's `filesNote` — never silent.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { FrameCodec } from '../../shared/frame.js';
import { sha256Hex } from '../../shared/content-digest.js';
import type { RedactionValue } from '../secrets/binding.js';
import type { DataUsage } from '../data/usage.js';
import type { Collected, OutputFile } from './walk-types.js';
import type { StreamsIn, StreamsOut, WalkOrders, WalkResult } from './walk-protocol.js';
import { WALK_MAX_FRAME_BYTES, walkResultSchema } from './walk-protocol.js';
import type { Workspace } from './workspace.js';
import type { ProcessOutcome } from '../sandbox/process.js';

/** A walk's time at most: a full budget (64 MiB) of small files is read in well under a second. */
export const WALK_TIMEOUT_MS = 30_000;
const STDERR_KEEP = 1024;

export interface WalkCommand {
  setpriv: string;
  /** A node every uid can run. */
  node: string;
  /** The runner's copy of the walker bundle, readable by every uid. */
  script: string;
}

/**
 * The walker's command line: root's uid with only the two capabilities that let it become the run's
 * uid, none it could pass on through an exec, killed with the runner. Pure.
 */
export function walkerArgv(command: WalkCommand): string[] {
  return [
    command.setpriv,
    '--clear-groups',
    '--no-new-privs',
    '--inh-caps=-all',
    '--bounding-set=-all,+setuid,+setgid',
    '--pdeathsig=KILL',
    '--',
    command.node,
    command.script,
  ];
}

/** A started walker, its stderr kept from the start (a failed start says why there). */
interface Walker {
  child: ChildProcess;
  stderr(): string;
}

function startWalker(command: WalkCommand): Walker {
  const argv = walkerArgv(command);
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: '/usr/bin:/bin', LANG: 'C' }, cwd: '/' });
  let stderr = '';
  // A spawn error with no listener would be thrown at the runner: each is said by the walk that takes it.
  child.on('error', () => undefined);
  child.stdin!.on('error', () => undefined);
  child.stderr!.on('data', (chunk: Buffer) => {
    if (stderr.length < STDERR_KEEP) stderr += chunk.toString('utf8').slice(0, STDERR_KEEP - stderr.length);
  });
  return { child, stderr: () => stderr };
}

/** What a run's end asks of its walk: its workspace, budget and bounds, its values, its streams, its data folder. */
export interface WalkAsk {
  /** The run's workspace; as root the walker becomes its owner, the run's uid. */
  ws: Workspace;
  budgetBytes: number;
  maxEntries: number;
  redact: readonly RedactionValue[];
  /** The run's stdout and stderr as kept, when it has values to redact. */
  streams?: StreamsIn;
  timeoutMs?: number;
  /** The run's data folder, to measure in the same walk (as root, its group joined). */
  data?: { dir: string; gid?: number; maxEntries: number };
}

/**
 * How a runner has a finished run's returns walked and redacted (docs/architecture.md §8): as root a
 * walker process of the run's uid ({@link WalkerPool}); otherwise the walker's code in the runner's
 * own process (local-walk.ts). Neither walk rejects: what cannot be done is said in the answer.
 */
export interface RunWalks {
  /** A run was previewed: have what its walk needs ready. */
  warm(): void;
  /** A run answered: the next one's. */
  replenish(): void;
  close(): void;
  walk(ask: WalkAsk): Promise<Walked>;
  /**
   * Only the streams redacted, for a run whose workspace is not read (processes of it outlived it);
   * undefined where that cannot be done safely (as root: a walker of the run's uid beside a process
   * of that uid still alive could be read by it).
   */
  redactOnly(values: readonly RedactionValue[], streams: StreamsIn): Promise<Walked | undefined>;
}

/** The frame of orders for a walk (the walker's stdin, or the in-process call). */
export function walkOrders(ask: WalkAsk): WalkOrders {
  return {
    dir: ask.ws.dir,
    dev: ask.ws.dev,
    ino: ask.ws.ino,
    uid: ask.ws.uid,
    inputs: [...ask.ws.inputs].map(([path, i]) => ({ path, size: i.size, sha256: i.sha256 })),
    budgetBytes: ask.budgetBytes,
    maxEntries: ask.maxEntries,
    redact: ask.redact.map(({ name, value }) => ({ name, value })),
    ...(ask.streams !== undefined ? { streams: ask.streams } : {}),
    ...(ask.data !== undefined
      ? {
          data: {
            dir: ask.data.dir,
            maxEntries: ask.data.maxEntries,
            ...(ask.data.gid !== undefined ? { gid: ask.data.gid } : {}),
          },
        }
      : {}),
  };
}

/**
 * One spare walker, started ahead of its run (at the first preview) and used once; the next is
 * started once that run has answered (RunnerService.run).
 * A spare that died is replaced by a fresh start, whose cost the run then pays.
 */
export class WalkerPool implements RunWalks {
  private spare: Walker | undefined;
  private closed = false;

  constructor(readonly command: WalkCommand) {}

  /** Starts a spare when there is none (at a run's preview, and after each run's answer). */
  warm(): void {
    if (!this.closed && this.spare === undefined) this.spare = startWalker(this.command);
  }

  /** After a run's answer: the spare for the next. */
  replenish(): void {
    this.warm();
  }

  /** A walker for one run: the spare when it is alive, else a fresh one. */
  take(): Walker {
    const spare = this.spare;
    this.spare = undefined;
    if (spare && spare.child.exitCode === null && spare.child.signalCode === null && spare.child.pid !== undefined) return spare;
    spare?.child.kill('SIGKILL');
    return startWalker(this.command);
  }

  /** Kills the spare (the runner is stopping). */
  close(): void {
    this.closed = true;
    this.spare?.child.kill('SIGKILL');
    this.spare = undefined;
  }

  walk(ask: WalkAsk): Promise<Walked> {
    return walkAsRunUid(this, ask);
  }

  redactOnly(): Promise<undefined> {
    return Promise.resolve(undefined);
  }
}

/**
 * What the walk gave back, or why there is nothing: a note the result and the audit line carry.
 * `streams` absent for a run with values to redact: they could not be, and are withheld.
 */
export type Walked = {
  collected: Collected;
  redacted: Record<string, number>;
  notSearched?: string[];
  data?: DataUsage;
  streams?: StreamsOut;
};

export function nothing(why: string): Walked {
  return {
    collected: { files: [], bytes: 0, note: `the run's files could not be collected: ${why}; nothing of its workspace is returned` },
    redacted: {},
  };
}

/**
 * Checks a walker's answer against what it was asked. Security: the bytes carried fit the budget, a
 * file's size is the length of its bytes, and its digest is the runner's own; streams come back
 * only when asked for, each within the cap.
 */
export function checkWalk(result: WalkResult, budgetBytes: number, streams?: StreamsIn): Walked | string {
  let carried = 0;
  const files: OutputFile[] = [];
  for (const f of result.files) {
    if (f.bytes !== undefined) {
      carried += f.bytes.length;
      if (f.size !== f.bytes.length) return 'a file it returned is not the size it said';
      files.push({ path: f.path, size: f.size, sha256: sha256Hex(f.bytes), bytes: f.bytes });
    } else
      files.push({
        path: f.path,
        size: f.size,
        ...(f.sha256 !== undefined ? { sha256: f.sha256 } : {}),
        ...(f.omitted !== undefined ? { omitted: f.omitted } : {}),
      });
  }
  if (carried > budgetBytes) return `it returned ${carried} bytes, over the ${budgetBytes}-byte budget`;
  if (carried !== result.bytes) return 'its byte count does not add up';
  const out = result.streams;
  if (out !== undefined && (streams === undefined || out.stdout.length > streams.cap || out.stderr.length > streams.cap))
    return 'the streams it returned were not asked for, or are over their cap';
  return {
    collected: { files, bytes: carried, ...(result.note !== undefined ? { note: result.note } : {}) },
    redacted: result.redacted,
    ...(result.notSearched !== undefined ? { notSearched: result.notSearched } : {}),
    ...(result.data !== undefined ? { data: result.data } : {}),
    ...(out !== undefined ? { streams: out } : {}),
  };
}

/** Walks `ws` as its owner (the run's uid) in a walker process; never rejects. */
export function walkAsRunUid(walkers: WalkerPool, opts: WalkAsk): Promise<Walked> {
  const codec = new FrameCodec(WALK_MAX_FRAME_BYTES);
  const { child, stderr } = walkers.take();
  return new Promise<Walked>((resolve) => {
    // The answer, once known; given back only once the walker has exited, so no process of the
    // run's uid is left when the run answers (its uid is then given back: runner/uids/pool.ts).
    let walked: Walked | undefined;
    const settle = (answer: Walked): void => {
      walked ??= answer;
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    };
    const timer = setTimeout(
      () => settle(nothing(`the walk took over ${opts.timeoutMs ?? WALK_TIMEOUT_MS} ms`)),
      opts.timeoutMs ?? WALK_TIMEOUT_MS,
    );
    let startError: string | undefined;
    child.on('error', (error) => (startError ??= (error as NodeJS.ErrnoException).code ?? 'error'));
    child.stdout!.on('data', (chunk: Buffer) => {
      for (const event of codec.push(chunk)) {
        if (walked !== undefined) return;
        if (!event.ok) return settle(nothing(`the walker sent a frame the runner cannot read (${event.error.code})`));
        const parsed = walkResultSchema.safeParse(event.value);
        if (!parsed.success) return settle(nothing('the walker sent an answer outside its protocol'));
        const checked = checkWalk(parsed.data, opts.budgetBytes, opts.streams);
        walked = typeof checked === 'string' ? nothing(`the walker's answer was refused (${checked})`) : checked;
        // A checked answer is the walk's last word: the walker is killed (a Node's own exit is slower)
        // and the answer given back at its exit, not once its pipes have closed too.
        if (typeof checked !== 'string') {
          child.once('exit', () => resolve(checked));
          child.kill('SIGKILL');
        }
      }
    });
    const ended = (code: number | null, signal: NodeJS.Signals | null): void => {
      clearTimeout(timer);
      if (startError !== undefined) {
        resolve(walked ?? nothing(`the walker could not be started (${startError})`));
        return;
      }
      // Only its code and first line: never a host path the runner would pass on to the model.
      const line = stderr()
        .split('\n')[0]
        ?.replace(/^skill-mcp walker: /, '')
        .slice(0, 200);
      resolve(walked ?? nothing(`the walker ended without an answer (${signal ?? `status ${code}`}${line ? `: ${line}` : ''})`));
    };
    if (child.exitCode !== null || child.signalCode !== null) {
      ended(child.exitCode, child.signalCode);
      return;
    }
    // A pipe some process still held would keep 'close' away: past the walker's own exit, 2 s at most.
    child.on('exit', () =>
      setTimeout(() => resolve(walked ?? nothing('the walker exited with its output still held open')), 2_000).unref(),
    );
    child.on('close', ended);
    child.stdin!.end(codec.encode(walkOrders(opts)));
  });
}

/** What a run with values to redact returns on stderr when its streams could not be redacted. */
const STREAMS_WITHHELD =
  "[skill-mcp: this run's stdout and stderr are withheld: they could not be searched for its secret values (its filesNote says why)]\n";

/** The streams a run returns, as the result and the run.exit line carry them. */
interface Returned {
  stdout: Buffer;
  stderr: Buffer;
  stdoutSha256: string;
  stderrSha256: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
}

/**
 * The streams as captured — or, for a run with values to redact, as its walk redacted them (its
 * markers may have cut one at the cap). Security: never a stream that was not searched: when the
 * walk could not redact them, both are withheld and stderr says so.
 */
export function returnedStreams(o: ProcessOutcome, redacting: boolean, walked: Walked): Returned {
  if (!redacting) return o;
  const s = walked.streams;
  const stdout = s ? Buffer.from(s.stdout.buffer, s.stdout.byteOffset, s.stdout.byteLength) : Buffer.alloc(0);
  const stderr = s ? Buffer.from(s.stderr.buffer, s.stderr.byteOffset, s.stderr.byteLength) : Buffer.from(STREAMS_WITHHELD);
  return {
    stdout,
    stderr,
    stdoutSha256: sha256Hex(stdout),
    stderrSha256: sha256Hex(stderr),
    stdoutTruncated: s ? o.stdoutTruncated || s.stdoutOver : o.stdoutBytes > 0,
    stderrTruncated: s ? o.stderrTruncated || s.stderrOver : o.stderrBytes > 0,
  };
}
