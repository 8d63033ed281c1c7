/**
 * @module What a finished run returns, searched for its values (docs/architecture.md §8, "Who walks
 * and redacts"): its stdout and stderr, and — for a run with a helper — the walk's answer, made
 * without a value. A run with a helper has its returns redacted by that helper, which holds the
 * run's values already (runner/helper/main.ts); its walker is then given none. A run without one
 * (legacy `env` secrets and no egress) has them redacted by its walk (runner/walker/walk.ts).
 * Neither is ever the privileged runner's code (.dependency-cruiser.cjs).
 */
import { sha256Hex } from '../../shared/content-digest.js';
import type { StreamsIn, StreamsOut, WalkResult } from '../workspace/walk-protocol.js';
import type { RunRedaction } from './redact.js';

/**
 * stdout and stderr through the run's redaction, as they were kept: each at most `cap` bytes of the
 * script's output, `…Cut` when it wrote more. Security: a stream cut at the cap ends its redactor as
 * cut, so the bytes it held back (they may begin a value whose rest never came) are dropped, not
 * returned; and markers longer than what they replace never make a stream longer than the cap.
 */
export function redactStreams(redaction: RunRedaction, streams: StreamsIn): StreamsOut {
  const one = (raw: Uint8Array, cut: boolean): { bytes: Uint8Array; over: boolean; heldBack: number } => {
    const redactor = redaction.stream();
    if (redactor === undefined) return { bytes: raw, over: false, heldBack: 0 };
    const out = Buffer.concat([...redactor.push(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)), ...redactor.end(cut)]);
    return { bytes: out.subarray(0, streams.cap), over: out.length > streams.cap, heldBack: redactor.heldBack };
  };
  const stdout = one(streams.stdout, streams.stdoutCut);
  const stderr = one(streams.stderr, streams.stderrCut);
  return {
    stdout: stdout.bytes,
    stderr: stderr.bytes,
    stdoutOver: stdout.over,
    stderrOver: stderr.over,
    stdoutHeldBack: stdout.heldBack,
    stderrHeldBack: stderr.heldBack,
  };
}

/**
 * A walk's answer made without a value, redacted with `redaction` (the run's values, no marker
 * counted yet): every path, reason and note, the data folder's
 * odd names, each carried file's bytes, and the streams. Security: what the walk carried may grow
 * under its markers, so the budget is held again on what is returned (a file it no longer fits is
 * listed, its bytes not carried); the digest of a file not carried is dropped (the walk took it of
 * the raw bytes: one of bytes that are only a value would let the value be guessed offline).
 */
export function redactReturns(redaction: RunRedaction, walked: WalkResult, budgetBytes: number, streams?: StreamsIn): WalkResult {
  let left = budgetBytes;
  const files = walked.files.map((f): WalkResult['files'][number] => {
    const path = redaction.text(f.path);
    const omitted = f.omitted !== undefined ? { omitted: redaction.text(f.omitted) } : {};
    if (f.bytes === undefined) return { path, size: f.size, ...omitted };
    const redactor = redaction.stream();
    const raw = Buffer.from(f.bytes.buffer, f.bytes.byteOffset, f.bytes.byteLength);
    const bytes = redactor === undefined ? raw : Buffer.concat([...redactor.push(raw), ...redactor.end()]);
    if (bytes.length > left)
      return {
        path,
        size: bytes.length,
        sha256: sha256Hex(bytes),
        omitted: `past the output budget once its secret values were redacted (${left} of ${budgetBytes} bytes were left; SKILL_MCP_RUN_OUTPUT_FILES_BYTES)`,
      };
    left -= bytes.length;
    // No digest: the runner takes a carried file's itself (walk-link.ts checkWalk).
    return { path, size: bytes.length, bytes };
  });
  const data = walked.data !== undefined ? { data: { ...walked.data, odd: walked.data.odd.map((name) => redaction.text(name)) } } : {};
  const note = walked.note !== undefined ? { note: redaction.text(walked.note) } : {};
  const returned = streams !== undefined ? { streams: redactStreams(redaction, streams) } : {};
  const { notSearched } = redaction.summary();
  return {
    files,
    ...note,
    bytes: budgetBytes - left,
    redacted: redaction.countsByName(),
    ...(notSearched ? { notSearched } : {}),
    ...data,
    ...returned,
  };
}
