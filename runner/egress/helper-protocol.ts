/**
 * @module The wire between the runner and a run's helper (docs/architecture.md §8, "The run's
 * helper"): frames of shared/frame.ts on the helper's stdin (runner → helper) and stdout (helper →
 * runner). Like OpenSSH's monitor, the runner answers a closed table: each helper message is
 * validated here before anything reads it, `ready` and `closed` are accepted once and only in their
 * turn, and any other message, or one out of turn, ends the helper (helper_failed) — never the runner.
 *
 * The helper holds its run's secrets; the runner holds every run's. So the runner never takes the
 * helper's word for anything but what the helper alone can know (the connections it saw), and even
 * that is bounded here before it reaches the audit log: strings capped, counts finite, no unknown key;
 * the helper redacts each record's texts (it holds its run's values), and the runner tallies the
 * result's refusals itself (run-egress.ts).
 */
import { z } from 'zod';
import { MAX_RESPONSE_FRAME_BYTES } from '../../shared/frame.js';
import { EGRESS_REFUSAL_REASONS, egressRuleSetSchema } from '../../shared/protocol.js';
import { streamsInSchema, walkResultSchema } from '../workspace/walk-protocol.js';

/** Longest text of a record the runner writes (a destination or method is the script's own text). */
const TEXT = z.string().max(1024);
const COUNT = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const TOKEN = z.string().regex(/^[a-z-]{1,32}$/);
const BY_NAME = z.record(z.string().max(256), COUNT).refine((r) => Object.keys(r).length <= 64, 'at most 64 names');

/** One proxied connection, as the helper reports it for its `egress` audit line. */
export const egressRecordSchema = z.strictObject({
  destination: TEXT,
  method: TEXT,
  decision: z.enum(['allowed', 'refused']),
  entry: TEXT.optional(),
  address: TEXT.optional(),
  /** Why it was refused, or `connect-failed` for an allowed destination that could not be reached. */
  reason: z.enum([...EGRESS_REFUSAL_REASONS, 'connect-failed']).optional(),
  /** Bytes sent to the destination (request line, headers and body for plain HTTP; the tunnel's bytes for CONNECT). */
  bytes_up: COUNT,
  /** Bytes received from it. */
  bytes_down: COUNT,
  duration_ms: COUNT,
  /** The connection went to a bound host and was intercepted; the fields below say what it did. */
  intercepted: z.literal(true).optional(),
  /** HTTP requests read from an intercepted connection. */
  requests: COUNT.optional(),
  /** Injections of each secret (by name) into its declared header. */
  injected: BY_NAME.optional(),
  /** Placeholders seen anywhere else (another header, the URL, a body, a plain-HTTP request) and forwarded as they were, by secret name. */
  placeholder_elsewhere: BY_NAME.optional(),
  /** Echoes of a value in a bound host's responses, swapped back to the placeholder, by secret name. */
  value_echoed: BY_NAME.optional(),
  /** Responses of an intercepted connection whose compressed body was not scanned for echoes. */
  responses_unscanned: COUNT.optional(),
  /** Why a request on an intercepted connection could not be sent (e.g. `certificate: DEPTH_ZERO_SELF_SIGNED_CERT`). */
  upstream_error: TEXT.optional(),
  /** Redaction markers the helper wrote into this record's texts, by name (counted in the run's summary, not written to the line). */
  redacted: BY_NAME.optional(),
});
export type EgressRecord = z.infer<typeof egressRecordSchema>;

/**
 * One HTTP request to a host with rules, for its `egress.request` line (docs/egress-rules.md): the
 * path without its query, the rule it matched (`GET /v1/items/*`) or why it was refused (a reason
 * of runner/helper/rules.ts), the status the script got (absent: none, the connection was cut),
 * and the body bytes each way — never a query value or a body.
 */
export const requestRecordSchema = egressRecordSchema
  .pick({ destination: true, method: true, decision: true, bytes_up: true, bytes_down: true, redacted: true })
  .extend({ path: TEXT, rule: TEXT.optional(), reason: TOKEN.optional(), status: COUNT.optional() });

export type RequestRecord = z.infer<typeof requestRecordSchema>;

/** A secret as its run's helper gets it: the value, its hosts, where it goes, and the placeholder the script holds. */
export const helperSecretSchema = z.strictObject({
  name: z.string(),
  hosts: z.array(z.string()),
  header: z.string(),
  format: z.string(),
  placeholder: z.string(),
  value: z.string(),
});

/** runner → helper: what its run needs; sent once. */
export const helperStartSchema = z.strictObject({
  type: z.literal('start'),
  runId: z.string(),
  /** The run's canonical egress entries. */
  entries: z.array(z.string()),
  /** This run's secrets only: the helper never learns another run's. */
  secrets: z.array(helperSecretSchema),
  /**
   * The values the run's returns are searched for (its bound secrets' and its legacy `env`
   * secrets'): the helper redacts its records' texts and its own words with them.
   */
  redact: z.array(z.strictObject({ name: z.string(), value: z.string() })),
  /** The request rules of the run's entries that have them: their hosts are intercepted and their requests checked. */
  rules: z.array(egressRuleSetSchema).optional(),
  /** `SKILL_MCP_EGRESS_CA_FILE`'s certificates, read by the runner; absent: the system CAs. */
  upstreamCa: z.string().optional(),
  /** The run's timeout: its CA is valid for it plus a margin. */
  timeoutMs: z.number().int().positive(),
  connectTimeoutMs: z.number().int().positive().optional(),
});
export type HelperStart = z.infer<typeof helperStartSchema>;

/**
 * runner → helper: the run is over; cut every connection and send `closed`. `returns`: then wait for
 * `redact` (the run has values to redact, and this helper redacts its returns) instead of exiting.
 */
export const helperCloseSchema = z.strictObject({ type: z.literal('close'), returns: z.literal(true).optional() });

/**
 * runner → helper, once, after `closed` when `close` said `returns`: the run's walk, made without a
 * value, its output budget, and its stdout and stderr as kept; answered by `returns`
 * (runner/secrets/returns.ts). The helper exits after it.
 */
export const helperRedactSchema = z.strictObject({
  type: z.literal('redact'),
  walked: walkResultSchema,
  budgetBytes: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  streams: streamsInSchema.optional(),
});
export type HelperRedact = z.infer<typeof helperRedactSchema>;

export const runnerToHelperSchema = z.discriminatedUnion('type', [helperStartSchema, helperCloseSchema, helperRedactSchema]);
export type RunnerToHelper = z.infer<typeof runnerToHelperSchema>;

/** helper → runner. */
export const helperToRunnerSchema = z.discriminatedUnion('type', [
  /** Once, after `start`: its socket listens (and the run's CA bundle is written). */
  z.strictObject({ type: z.literal('ready') }),
  /** Any number, while the run lasts: one connection ended. */
  z.strictObject({ type: z.literal('egress'), record: egressRecordSchema }),
  /** Any number, while the run lasts: one request to a host with rules was decided. */
  z.strictObject({ type: z.literal('request'), record: requestRecordSchema }),
  /** Once, after `close`: every connection was cut and reported. */
  z.strictObject({ type: z.literal('closed') }),
  /** Once, after `redact`: the run's returns redacted (checked by the runner as a walk's answer is). */
  z.strictObject({ type: z.literal('returns'), returns: walkResultSchema }),
  /** The helper cannot serve its run (said before it exits): the runner ends the run and records why. */
  z.strictObject({ type: z.literal('failed'), why: TEXT }),
]);
export type HelperToRunner = z.infer<typeof helperToRunnerSchema>;

/** Where the helper's folder appears inside its own sandbox; it listens and writes the run's bundle there. */
export const HELPER_DIR_MOUNT = '/run/helper';
/** The helper's socket and the run's CA bundle, by name in the helper's folder. */
export const HELPER_SOCKET_NAME = 'egress.sock';
export const HELPER_BUNDLE_NAME = 'ca-bundle.pem';
/**
 * Longest frame either side accepts: a start carries a run's secrets and CAs (system bundles are
 * ~200 kB); `redact` and `returns` carry the run's returns, bounded like a walk's answer.
 */
export const HELPER_MAX_FRAME_BYTES = Math.max(4 * 1024 * 1024, MAX_RESPONSE_FRAME_BYTES);
