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
import { sha256Hex } from '../../shared/run-io.js';
import type { RedactionValue } from '../secrets/binding.js';
import type { DataUsage } from '../data/usage.js';
import type { Collected, OutputFile } from './outputs.js';
import type { WalkResult } from './walk-protocol.js';
import { WALK_MAX_FRAME_BYTES, walkResultSchema } from './walk-protocol.js';
import type { Workspace } from './workspace.js';

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

/**
 * One spare walker, started ahead of its run (at the first preview) and used once; the next is
 * started once that run has answered (RunnerService.run).
 * A spare that died is replaced by a fresh start, whose cost the run then pays.
 */
export class WalkerPool {
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
}

/** What the walk gave back, or why there is nothing: a note the result and the audit line carry. */
export type Walked = { collected: Collected; redacted: Record<string, number>; data?: DataUsage };

function nothing(why: string): Walked {
  return {
    collected: { files: [], bytes: 0, note: `the run's files could not be collected: ${why}; nothing of its workspace is returned` },
    redacted: {},
  };
}

/**
 * Checks a walker's answer against what it was asked. Security: the bytes carried fit the budget, a
 * file's size is the length of its bytes, and its digest is the runner's own.
 */
export function checkWalk(result: WalkResult, budgetBytes: number): Walked | string {
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
  return {
    collected: { files, bytes: carried, ...(result.note !== undefined ? { note: result.note } : {}) },
    redacted: result.redacted,
    ...(result.data !== undefined ? { data: result.data } : {}),
  };
}

/** Walks `ws` as its owner (the run's uid) in a walker process; never rejects. */
export function walkAsRunUid(opts: {
  walkers: WalkerPool;
  /** The run's workspace; the walker becomes its owner, the run's uid. */
  ws: Workspace;
  budgetBytes: number;
  maxEntries: number;
  redact: readonly RedactionValue[];
  timeoutMs?: number;
  /** The run's data folder, to measure in the same walk (its group joined). */
  data?: { dir: string; gid?: number; maxEntries: number };
}): Promise<Walked> {
  const codec = new FrameCodec(WALK_MAX_FRAME_BYTES);
  const { child, stderr } = opts.walkers.take();
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
        const checked = checkWalk(parsed.data, opts.budgetBytes);
        walked = typeof checked === 'string' ? nothing(`the walker's answer was refused (${checked})`) : checked;
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
    child.stdin!.end(
      codec.encode({
        dir: opts.ws.dir,
        dev: opts.ws.dev,
        ino: opts.ws.ino,
        uid: opts.ws.uid,
        inputs: [...opts.ws.inputs].map(([path, i]) => ({ path, size: i.size, sha256: i.sha256 })),
        budgetBytes: opts.budgetBytes,
        maxEntries: opts.maxEntries,
        redact: opts.redact.map(({ name, value }) => ({ name, value })),
        ...(opts.data !== undefined
          ? {
              data: {
                dir: opts.data.dir,
                maxEntries: opts.data.maxEntries,
                ...(opts.data.gid !== undefined ? { gid: opts.data.gid } : {}),
              },
            }
          : {}),
      }),
    );
  });
}
