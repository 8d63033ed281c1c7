/**
 * @module A run's outputs walk, in a process of its own (docs/architecture.md §8, "What runs
 * privileged"): started by a root runner as the run's own uid once nothing of the run is left
 * (runner/workspace/walk-link.ts), it reads its orders from stdin, walks the workspace with the
 * runner's own walk (runner/workspace/outputs.ts: no link followed, nothing but regular files of
 * the run opened, within the budget and the entry bound), redacts what it returns, and writes one
 * frame to stdout. A bug a hostile workspace finds in the walk is then a bug in a process holding
 * nothing but the run's own files. Built as its own small bundle (dist/skill-mcp-walk.cjs).
 */
import { FrameCodec } from '../../shared/frame-codec.js';
import { RunRedaction } from '../secrets/redact.js';
import { measureDataOrSay } from '../data/usage.js';
import { collectOutputs } from '../workspace/outputs.js';
import type { WalkOrders, WalkResult } from '../workspace/walk-protocol.js';

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
  const d = o.data;
  if (d !== undefined && (typeof d?.dir !== 'string' || !d.dir.startsWith('/') || !Number.isSafeInteger(d.maxEntries))) return undefined;
  return o as WalkOrders;
}

function fail(why: string): never {
  process.stderr.write(`skill-mcp walker: ${why}\n`);
  process.exit(1);
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
      const { dir, dev, ino, uid, inputs, budgetBytes, maxEntries, redact, data } = orders;
      const redaction = new RunRedaction(redact);
      const collected = collectOutputs(
        { dir, dev, ino, uid, inputs: new Map(inputs.map((i) => [i.path, { size: i.size, sha256: i.sha256 }])) },
        budgetBytes,
        maxEntries,
        redaction.reported ? redaction : undefined,
      );
      const result: WalkResult = {
        files: collected.files,
        ...(collected.note !== undefined ? { note: collected.note } : {}),
        bytes: collected.bytes,
        redacted: redaction.countsByName(),
        ...(data !== undefined ? { data: measureDataOrSay(data.dir, data.maxEntries) } : {}),
      };
      process.stdout.write(codec.encode(result), () => process.exit(0));
    }
  });
  process.stdin.on('end', () => {
    if (!done) fail('the runner sent no orders');
  });
}

if (process.argv[1]?.endsWith('skill-mcp-walk.cjs')) walkerMain();
