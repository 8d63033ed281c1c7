/**
 * @module The wire between the runner and a run's outputs walk (docs/architecture.md §8, "What runs
 * privileged"): one frame of orders on the walker's stdin, one frame of what it found on its stdout
 * (shared/frame.ts). The walker runs as the run's own uid once nothing of the run is left, so a root
 * runner never opens a path the script chose; what it sends back is checked here before anything
 * reads it — its shape, its sizes and its bounds — and its digests are taken again by the runner.
 */
import { z } from 'zod';
import { MAX_RESPONSE_FRAME_BYTES } from '../../shared/frame.js';

const COUNT = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const BYTES = z.custom<Uint8Array>((v) => v instanceof Uint8Array);

/**
 * The run's stdout and stderr as the runner kept them — at most `cap` bytes each, `…Cut` when the
 * script wrote more — sent only when the run has values to redact: they come back redacted.
 */
export const streamsInSchema = z.strictObject({ cap: COUNT, stdout: BYTES, stderr: BYTES, stdoutCut: z.boolean(), stderrCut: z.boolean() });
export type StreamsIn = z.infer<typeof streamsInSchema>;

/**
 * The streams redacted: at most `cap` bytes each (`…Over`: the markers made it longer than that, and
 * it was cut there), and the bytes each redactor held back and dropped at a cut (runner/secrets/redact.ts).
 */
export const streamsOutSchema = z.strictObject({
  stdout: BYTES,
  stderr: BYTES,
  stdoutOver: z.boolean(),
  stderrOver: z.boolean(),
  stdoutHeldBack: COUNT,
  stderrHeldBack: COUNT,
});
export type StreamsOut = z.infer<typeof streamsOutSchema>;

/** runner → walker. */
export const walkOrdersSchema = z.strictObject({
  /** The workspace folder on the host, and its identity as the runner made it. */
  dir: z.string().startsWith('/'),
  dev: COUNT,
  ino: COUNT,
  /** The run's uid: the only owner whose files are read. */
  uid: COUNT,
  /** The inputs as written: one returned unchanged is not returned. */
  inputs: z.array(z.strictObject({ path: z.string(), size: COUNT, sha256: z.string().regex(/^[0-9a-f]{64}$/) })),
  budgetBytes: COUNT,
  maxEntries: COUNT,
  /**
   * The values redaction searches for, redacted from every file, name and stream: a run's legacy
   * `env` secrets' when it has no helper; none when it has one (its helper redacts what the walk
   * found: runner/secrets/returns.ts).
   */
  redact: z.array(z.strictObject({ name: z.string(), value: z.string() })),
  streams: streamsInSchema.optional(),
  /** The run's data folder, measured too (runner/data/usage.ts): at most `maxEntries` entries counted. */
  /** `gid`: the folder's group, which the walker joins (its only supplementary group) to read it. */
  data: z.strictObject({ dir: z.string().startsWith('/'), maxEntries: COUNT, gid: COUNT.optional() }).optional(),
});
export type WalkOrders = z.infer<typeof walkOrdersSchema>;

/** walker → runner: every entry found, the bytes carried, and the redaction markers written by name. */
export const walkResultSchema = z.strictObject({
  files: z
    .array(
      z.strictObject({
        path: z.string().max(8192),
        size: COUNT,
        sha256: z
          .string()
          .regex(/^[0-9a-f]{64}$/)
          .optional(),
        bytes: z.custom<Uint8Array>((v) => v instanceof Uint8Array).optional(),
        omitted: z.string().max(2048).optional(),
      }),
    )
    .max(100_000),
  note: z.string().max(2048).optional(),
  bytes: COUNT,
  /** Markers written, by name: in files, names and streams. */
  redacted: z.record(z.string().max(256), COUNT),
  /** Names whose values are too short to search for (runner/secrets/forms.ts). */
  notSearched: z.array(z.string().max(256)).max(256).optional(),
  streams: streamsOutSchema.optional(),
  data: z
    .strictObject({ bytes: COUNT, entries: COUNT, odd: z.array(z.string().max(8192)).max(20), unmeasured: z.string().max(256).optional() })
    .optional(),
});
export type WalkResult = z.infer<typeof walkResultSchema>;

/** The orders are small; the result carries up to the output budget's bytes. */
export const WALK_MAX_FRAME_BYTES = MAX_RESPONSE_FRAME_BYTES;
