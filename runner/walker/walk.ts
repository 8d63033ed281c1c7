/**
 * @module What a finished run hands back, made safe to return (docs/architecture.md §8, "What runs
 * privileged"): its workspace walked (runner/workspace/outputs.ts), its data folder measured
 * (runner/data/measure.ts), and everything it returns — files, the names it chose, stdout and stderr —
 * searched for its values and each occurrence replaced (runner/secrets/redact.ts). A run with a
 * helper is walked without a value (its orders carry none) and redacted by its helper instead
 * (runner/secrets/returns.ts): its walker never holds a secret it did not already hold. A root runner
 * runs this in a walker process that has become the run's own uid (main.ts); a runner without
 * privilege loads this bundle into its own process (runner/workspace/local-walk.ts). Either way the
 * root process holds none of this code: it never reads what a script's bytes say.
 */
import { measureDataOrSay } from '../data/measure.js';
import { RunRedaction } from '../secrets/redact.js';
import type { RedactionValue } from '../secrets/binding.js';
import { collectOutputs } from '../workspace/outputs.js';
import type { StreamsIn, WalkOrders, WalkResult } from '../workspace/walk-protocol.js';
import { redactStreams } from '../secrets/returns.js';

/** A run's streams alone redacted (its workspace not read): what the answer carries of redaction. */
export function redactRun(values: readonly RedactionValue[], streams: StreamsIn): Pick<WalkResult, 'streams' | 'redacted' | 'notSearched'> {
  const redaction = new RunRedaction(values);
  const redacted = redactStreams(redaction, streams);
  const { notSearched } = redaction.summary();
  return { streams: redacted, redacted: redaction.countsByName(), ...(notSearched ? { notSearched } : {}) };
}

/** The whole of a finished run's returns: its files, its data folder's measure and its streams, all redacted. */
export function walkRun(orders: WalkOrders): WalkResult {
  const { dir, dev, ino, uid, inputs, budgetBytes, maxEntries, redact, data, streams } = orders;
  const redaction = new RunRedaction(redact);
  const collected = collectOutputs(
    { dir, dev, ino, uid, inputs: new Map(inputs.map((i) => [i.path, { size: i.size, sha256: i.sha256 }])) },
    budgetBytes,
    maxEntries,
    redaction.reported ? redaction : undefined,
  );
  const measured = data !== undefined ? measureDataOrSay(data.dir, data.maxEntries) : undefined;
  // The names a script left in its data folder are searched for its values like every name it returns.
  if (measured !== undefined) measured.odd = measured.odd.map((name) => redaction.text(name));
  const returned = streams !== undefined && redaction.reported ? redactStreams(redaction, streams) : undefined;
  const { notSearched } = redaction.summary();
  return {
    files: collected.files,
    ...(collected.note !== undefined ? { note: collected.note } : {}),
    bytes: collected.bytes,
    redacted: redaction.countsByName(),
    ...(notSearched ? { notSearched } : {}),
    ...(measured !== undefined ? { data: measured } : {}),
    ...(returned !== undefined ? { streams: returned } : {}),
  };
}
