/**
 * @module A run's outputs walk, in a process of its own (docs/architecture.md §8, "What runs
 * privileged"): started ahead by a root runner, as root with nothing but CAP_SETUID and CAP_SETGID
 * (runner/workspace/walk-link.ts), it reads its orders from stdin once nothing of the run is left,
 * becomes the run's own uid with no capability (becomeRunUid), and only then walks the workspace
 * (walk.ts, runner/workspace/outputs.ts: no link followed, nothing but regular files of the run
 * opened, within the budget and the entry bound), redacts what the run returns (its files, names,
 * stdout and stderr), and writes one frame to stdout. A bug a hostile workspace finds in the walk is then a bug in a process holding
 * nothing but the run's own files. Built as its own small bundle (dist/skill-mcp-walk.cjs).
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FrameCodec } from '../../shared/frame-codec.js';
import { RunRedaction } from '../secrets/redact.js';
import { collectOutputs } from '../workspace/outputs.js';
import type { WalkOrders } from '../workspace/walk-protocol.js';
import { redactStreams } from '../secrets/returns.js';
import { redactRun, walkRun } from './walk.js';

// What a runner without privilege calls in its own process (runner/workspace/local-walk.ts).
export { redactRun, walkRun };

/**
 * What the walker may send at most: above the runner's own cap (walk-protocol.ts), which is the one
 * that counts; the walk itself carries no more than its budget. (No limits module here: it would
 * bring zod, and the walker must start fast.)
 */
const WALK_MAX_FRAME_BYTES = 96 * 1024 * 1024;

/** The orders, checked by hand: they come from the runner that started this process. */
function parseOrders(value: unknown): WalkOrders | undefined {
  const o = value as Partial<WalkOrders> | null;
  if (o === null || typeof o !== 'object') return undefined;
  const numbers = [o.dev, o.ino, o.uid, o.budgetBytes, o.maxEntries].every((n) => Number.isSafeInteger(n) && (n as number) >= 0);
  if (!numbers || typeof o.dir !== 'string' || !o.dir.startsWith('/') || !Array.isArray(o.inputs) || !Array.isArray(o.redact))
    return undefined;
  const s = o.streams;
  if (
    s !== undefined &&
    (s === null ||
      !Number.isSafeInteger(s.cap) ||
      !(s.stdout instanceof Uint8Array) ||
      !(s.stderr instanceof Uint8Array) ||
      typeof s.stdoutCut !== 'boolean' ||
      typeof s.stderrCut !== 'boolean')
  )
    return undefined;
  const d = o.data;
  if (
    d !== undefined &&
    (typeof d?.dir !== 'string' ||
      !d.dir.startsWith('/') ||
      !Number.isSafeInteger(d.maxEntries) ||
      (d.gid !== undefined && (!Number.isSafeInteger(d.gid) || d.gid <= 0)))
  )
    return undefined;
  return o as WalkOrders;
}

/**
 * Becomes `uid` (its gid the same; the run's data folder's `group` its one supplementary group when
 * it measures that folder, else none) and proves it: every uid and gid that one, that group alone,
 * no capability left. Security: the walker starts as root with CAP_SETUID and
 * CAP_SETGID only (walk-link.ts), so that it can wait ahead of its run; a walk done before this
 * drop, or after a partial one, would read the script's files — and follow what the script
 * planted — with root's ownership. Returns why not, or undefined once it is that uid.
 */
export function becomeRunUid(uid: number, group?: number): string | undefined {
  if (uid === 0) return 'the orders name uid 0';
  if (group === 0) return 'the orders name group 0';
  try {
    process.setgroups?.(group !== undefined ? [group] : []);
    process.setgid?.(uid);
    process.setuid?.(uid);
  } catch (error) {
    return `it could not become uid ${uid} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`;
  }
  const status = readFileSync('/proc/self/status', 'utf8');
  // One line per field: `Name:<tab>values` (Groups may be empty).
  const lines = new Map(status.split('\n').map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()]));
  const field = (name: string): string => lines.get(name) ?? '?';
  const ids = (name: string): boolean => {
    const each = field(name).split(/\s+/);
    return each.length === 4 && each.every((id) => id === String(uid));
  };
  const none = (name: string): boolean => /^0+$/.test(field(name));
  if (
    !ids('Uid') ||
    !ids('Gid') ||
    field('Groups') !== (group !== undefined ? String(group) : '') ||
    !['CapPrm', 'CapEff', 'CapAmb'].every(none)
  )
    return `it is not uid ${uid} alone with no capability after the drop`;
  return undefined;
}

function fail(why: string): never {
  process.stderr.write(`skill-mcp walker: ${why}\n`);
  process.exit(1);
}

/**
 * Runs the walk's code once while the walker waits for its run, on a folder of its own (0700, made
 * here, holding one file it wrote) — never a path the runner or a script named — so that the run's
 * walk does not pay the first call's compilation of every step (about 10 ms on a small machine).
 */
function warmUp(codec: FrameCodec): void {
  let dir: string | undefined;
  try {
    dir = mkdtempSync(join(tmpdir(), 'skill-mcp-walk-warm-'));
    writeFileSync(join(dir, 'warm.txt'), 'warm-up value');
    const { dev, ino, uid } = statSync(dir);
    const redaction = new RunRedaction([{ name: 'WARM', value: 'warm-up value' }]);
    const collected = collectOutputs({ dir, dev, ino, uid, inputs: new Map() }, 1024, 16, redaction);
    const said = Buffer.from('said: warm-up value');
    const streams = redactStreams(redaction, { cap: 1024, stdout: said, stderr: said, stdoutCut: false, stderrCut: true });
    codec.encode({ files: collected.files, bytes: collected.bytes, redacted: redaction.countsByName(), streams });
  } catch {
    // A warm-up only: the run's walk does the same work, and says what fails.
  } finally {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  }
}

export function walkerMain(): void {
  const codec = new FrameCodec(WALK_MAX_FRAME_BYTES);
  let done = false;
  process.stdin.on('data', (chunk: Buffer) => {
    for (const event of codec.push(chunk)) {
      if (done) return;
      if (!event.ok) fail(`the runner's orders cannot be read (${event.error.message})`);
      const orders = parseOrders(event.value);
      if (orders === undefined) fail("the runner's orders are not a walk");
      done = true;
      const notDropped = becomeRunUid(orders.uid, orders.data?.gid);
      if (notDropped !== undefined) fail(notDropped);
      process.stdout.write(codec.encode(walkRun(orders)), () => process.exit(0));
    }
  });
  process.stdin.on('end', () => {
    if (!done) fail('the runner sent no orders');
  });
  setImmediate(() => {
    if (!done) warmUp(codec);
  });
}

if (process.argv[1]?.endsWith('skill-mcp-walk.cjs')) walkerMain();
