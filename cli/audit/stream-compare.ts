/**
 * @module `audit verify --redis URL [FILE]`: the local log (its segments in order) beside this
 * host's lines in the shared stream, a line at a time, naming the first seq where they differ —
 * a line in one and not the other, or two different lines under one seq. The stream may lag the
 * log (the mirror sends what is new when Redis answers): lines only the log has at its end are
 * reported as not yet mirrored, not as a divergence.
 */
import { lineHash } from '../../runner/audit/chain.js';
import { eachLine, openLog } from '../../runner/audit/lines.js';
import { allSegments } from '../../runner/audit/segments.js';
import type { StreamEntry } from './stream-verify.js';

export async function compareWithLocal(localLog: string, stream: StreamEntry[]): Promise<{ ok: boolean; message: string }> {
  const bySeq = new Map<number, StreamEntry>();
  for (const e of stream) if (!bySeq.has(e.seq)) bySeq.set(e.seq, e);
  const firstStream = stream[0]?.seq;
  const lastStream = stream.at(-1)?.seq ?? 0;
  let diverged: string | undefined;
  let compared = 0;
  let localOnly = 0;
  let lastLocal = 0;
  let firstLocal: number | undefined;
  for (const path of allSegments(localLog)) {
    await eachLine(openLog(path), (bytes, torn) => {
      if (diverged !== undefined || torn) return;
      const text = bytes.toString('utf8');
      const seq = Number(/^\{"seq":(\d+),/.exec(text)?.[1] ?? NaN);
      if (!Number.isSafeInteger(seq)) return;
      firstLocal ??= seq;
      lastLocal = seq;
      const there = bySeq.get(seq);
      if (there === undefined) {
        if (seq > lastStream) localOnly += 1;
        else if (firstStream === undefined || seq >= firstStream) diverged = `seq ${seq} is in the local log but not in the stream`;
        return;
      }
      compared += 1;
      if (lineHash(there.line) !== lineHash(bytes))
        diverged = `seq ${seq} differs: the stream's line (entry ${there.id}) is not the local log's line`;
    });
    if (diverged !== undefined) break;
  }
  if (diverged !== undefined) return { ok: false, message: `DIVERGED at ${diverged}` };
  if (lastStream > lastLocal)
    return {
      ok: false,
      message: `DIVERGED at seq ${lastLocal + 1}: the stream holds lines up to seq ${lastStream}, the local log ends at seq ${lastLocal} (the local log was cut or replaced)`,
    };
  if (firstLocal !== undefined && firstStream !== undefined && firstStream < firstLocal) {
    return {
      ok: true,
      message: `the same ${compared} line(s); the stream also holds seq ${firstStream}-${firstLocal - 1}, whose segments are no longer here (retention)${localOnly > 0 ? `; ${localOnly} newest line(s) not mirrored yet` : ''}`,
    };
  }
  return {
    ok: true,
    message: `the same ${compared} line(s)${localOnly > 0 ? `; ${localOnly} newest local line(s) not mirrored yet` : ''}`,
  };
}
