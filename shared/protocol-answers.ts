/**
 * @module The runner's answers to the front (docs/architecture.md §8), each validated by the front
 * with a strict schema on arrival (server/runner-client.ts). The runner builds them and never
 * parses one, so none of this is in the privileged runner's bundle (only its types are shared).
 * Nothing here carries a secret value, an absolute host path or token key material.
 */
import * as z from 'zod';
import { provenanceSchema } from './provenance.js';
import {
  bytes,
  declarationFromSchema,
  EGRESS_REFUSAL_REASONS,
  egressRuleSetSchema,
  MAX_EGRESS_HOST_CHARS,
  MAX_EGRESS_REFUSALS_LISTED,
  inputsSchema,
  type RequestType,
} from './protocol.js';

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);

/**
 * How strongly a run is separated from the runner, the front and other runs, strongest first
 * (docs/isolation.md): `namespace-uid` (root runner: own uid + bubblewrap namespaces),
 * `namespace` (any runner: bubblewrap namespaces), `uid-sandbox` (root runner without bubblewrap:
 * own uid + util-linux namespaces), `uid` (root, no namespaces), `same-uid` (the runner's own uid).
 */
export const isolationLevelSchema = z.enum(['namespace-uid', 'namespace', 'uid-sandbox', 'uid', 'same-uid']);
export type IsolationLevel = z.infer<typeof isolationLevelSchema>;

/**
 * A skill's installed environment (runner/deps/): which kind, its address (the sha256 over what it
 * was built from), and whether it is there and unchanged since its install.
 */
export const depsInfoSchema = z.strictObject({
  kind: z.enum(['python', 'node']),
  digest: sha256Hex,
  state: z.enum(['ready', 'missing', 'tampered']),
  /** Why it is not ready, with the command that fixes it. */
  why: z.string().optional(),
});
export type DepsInfo = z.infer<typeof depsInfoSchema>;

/**
 * A secret as a preview shows it and the approval binds it (docs/secrets.md): the name the script
 * gets (holding a placeholder), the hosts the run's proxy sends the value to, and how — never a
 * value, never a placeholder (those are made per run, after the approval).
 */
export const secretShownSchema = z.strictObject({ name: z.string(), hosts: z.array(z.string()), header: z.string(), format: z.string() });
/** A declared secret the run does not get, and why (not granted, or none of its hosts left). */
const secretNotBoundSchema = z.strictObject({ name: z.string(), why: z.string() });

/** What a person approves; the token is bound to its canonical hash. */

export const willRunSchema = z.strictObject({
  skill: z.string(),
  interpreter: z.string(),
  /** The script path as declared, then the args exactly as passed. */
  argv: z.array(z.string()),
  /** Display form of the working directory (the skill's place under its root's folder name). */
  cwd: z.string(),
  timeoutMs: z.number().int(),
  envNames: z.array(z.string()),
  envNotSet: z.array(z.string()).optional(),
  envWarning: z.string().optional(),
  isolation: isolationLevelSchema,
  /** The mechanisms behind `isolation` on this machine, in words a person can check (doctor lists them too). */
  sandbox: z.array(z.string()),
  /** The run's memory cap in bytes (the runner's cap, or lower when the declaration asks). */
  memoryBytes: z.number().int(),
  /**
   * The code approved (shared/content-digest.ts): the sha256 of the script, and the digest over
   * every served file of the skill (`files` of them, `bytes` in all) — what runs is a copy of
   * exactly those bytes (docs/architecture.md §7).
   */
  content: z.strictObject({
    script: sha256Hex,
    files: sha256Hex,
    fileCount: z.number().int().nonnegative(),
    bytes: z.number().int().nonnegative(),
  }),
  /** Where the declaration that lets this script run came from: a change of source after approval is DRAFT_CHANGED. */
  declarationFrom: declarationFromSchema,
  /** Operator declarations only: pinned to `content.files` (a pin that did not match would not have run). */
  declarationPinned: z.boolean().optional(),
  /** Destinations the run may connect to (declared ∩ granted egress entries, sorted); absent: none, no network. */
  egress: z.array(z.string()).optional(),
  /** The request rules of those with rules (docs/egress-rules.md): only these calls reach them. */
  egressRules: z.array(egressRuleSetSchema).optional(),
  /** Standalone: destinations a third-party script reaches only because its own SKILL.md asks. */
  egressWarning: z.string().optional(),
  /** When this isolation level does not enforce `egress` (or cannot reach it), in words. */
  egressNote: z.string().optional(),
  /** The run's input files and stdin (names, sizes, sha256); absent when it gets none. */
  inputs: inputsSchema.optional(),
  /** The environments the script imports from (read-only); a run's are always `ready`, verified against their manifest. */
  deps: z.array(depsInfoSchema).optional(),
  /** Where `skill-mcp pull` brought the skill from, judged on these very bytes (shared/provenance.ts). */
  provenance: provenanceSchema.optional(),
  /** The run's secrets (sorted by name): a change between prepare and run is DRAFT_CHANGED. Absent: none. */
  secrets: z.array(secretShownSchema).optional(),
  secretsNotBound: z.array(secretNotBoundSchema).optional(),
  /** Standalone: secrets the skill's own declaration sends. */
  secretsWarning: z.string().optional(),
  /**
   * The data folder the run reads and writes (docs/isolation.md, "Data folders"): which one
   * (`<skill>/<who>`) and its quota. Its contents change from run to run and are not bound. Absent: none.
   */
  data: z.strictObject({ folder: z.string(), bytes: z.number().int().positive(), files: z.number().int().positive() }).optional(),
});
export type WillRun = z.infer<typeof willRunSchema>;

export const mintedSchema = z.strictObject({
  willRun: willRunSchema,
  confirmToken: z.string(),
  expiresAt: z.string(),
  /** What the run's data folder held after its last run (not bound: it changes); absent before a first run. */
  dataUsed: z
    .strictObject({ bytes: z.number().int().nonnegative(), entries: z.number().int().nonnegative(), full: z.boolean() })
    .optional(),
});
export type Minted = z.infer<typeof mintedSchema>;

/**
 * A proxied run's connections as its result shows them (runner/egress/refusals.ts): what was
 * refused, bounded, so the model can tell a refusal from a network failure. Only host, port and a
 * reason code: never the run's entries, addresses it resolved to, or anything of the host.
 */
export const egressSummarySchema = z.strictObject({
  /** The first distinct refused destinations, in the order they were refused, each with how often. */
  refused: z
    .array(
      z.strictObject({
        /** As the script asked for it (IPv6 in brackets; `""` when the connection was closed before its request was read). */
        host: z.string().max(MAX_EGRESS_HOST_CHARS),
        port: z.number().int().min(0).max(65535).nullable(),
        reason: z.enum(EGRESS_REFUSAL_REASONS),
        count: z.number().int().positive(),
      }),
    )
    .max(MAX_EGRESS_REFUSALS_LISTED),
  /** Every refused connection of the run, listed or not, and every request a host's egress rules refused (`request-refused`). */
  refusedCount: z.number().int().nonnegative(),
  /** Refused connections to destinations past the listed ones. */
  refusedUnlisted: z.number().int().nonnegative(),
  allowedCount: z.number().int().nonnegative(),
});
export type EgressSummary = z.infer<typeof egressSummarySchema>;

/**
 * What redaction did to a run's returns (runner/secrets/redact.ts; docs/secrets-redaction.md): how many
 * occurrences of its secret values were replaced by `[secret:NAME]` in stdout, stderr, returned files
 * and their names, and the destinations its proxy saw — by name, never a value.
 */
export const redactionSummarySchema = z.strictObject({
  count: z.number().int().nonnegative(),
  /** The names with at least one occurrence, sorted, each with its count. */
  names: z.array(z.strictObject({ name: z.string(), count: z.number().int().positive() })),
  /** Values that were not searched for: shorter than 8 bytes (guessable, and they would match ordinary text). */
  notSearched: z.array(z.string()).optional(),
  /** Bytes just before an output cap that were held back and dropped (a value could have begun there), per stream. */
  heldBack: z.strictObject({ stdout: z.number().int().nonnegative(), stderr: z.number().int().nonnegative() }).optional(),
});
export type RedactionSummaryView = z.infer<typeof redactionSummarySchema>;

export const runResultSchema = z.strictObject({
  runId: z.string(),
  exitCode: z.number().int().nullable(),
  signal: z.string().nullable(),
  /** The captured bytes as the script wrote them (up to the cap); the front decides how to show them. */
  stdout: bytes,
  stderr: bytes,
  truncated: z.boolean(),
  timedOut: z.boolean(),
  cancelled: z.boolean(),
  durationMs: z.number(),
  stdoutBytes: z.number(),
  stderrBytes: z.number(),
  /** Per stream: what is returned is not all the script wrote (cut at the cap). Absent: `stdoutBytes` > the bytes returned says it. */
  stdoutTruncated: z.boolean().optional(),
  stderrTruncated: z.boolean().optional(),
  /** The run failed to allocate memory under its cap (`memoryBytes`), as its stderr reports. */
  memoryLimited: z.boolean(),
  /** Every file the run created or changed in its workspace (runner/workspace/outputs.ts). */
  files: z
    .array(
      z.strictObject({
        path: z.string(),
        size: z.number().int().nonnegative(),
        sha256: sha256Hex.optional(),
        bytes: bytes.optional(),
        omitted: z.string().optional(),
      }),
    )
    .optional(),
  /** Why the list above is not the whole workspace (the walk stopped, or it was not read at all). */
  filesNote: z.string().optional(),
  /** Only for a run whose egress went through its own proxy (isolation levels `namespace`, `namespace-uid`). */
  egress: egressSummarySchema.optional(),
  /** Why such a run was stopped by its network: its helper (the proxy's process) failed while the script ran. */
  egressNote: z.string().optional(),
  /** The workspace reached its cap (runner/workspace/capacity.ts): a write past it failed, or the run was stopped; `workspaceNote` says which. */
  workspaceFull: z.boolean().optional(),
  workspaceNote: z.string().optional(),
  /** The run's data folder after it (bytes, entries): absent when it has none or it could not be measured. */
  data: z.strictObject({ bytes: z.number().int().nonnegative(), entries: z.number().int().nonnegative() }).optional(),
  /** The data folder is over its quota after this run (what fitted is kept); `dataNote` says what now. Also set when it could not be measured. */
  dataFull: z.boolean().optional(),
  dataNote: z.string().optional(),
  /** Only for a run with secret values (issue 30): what redaction replaced. */
  redaction: redactionSummarySchema.optional(),
});
export type RunResult = z.infer<typeof runResultSchema>;

const scriptInfo = z.strictObject({
  script: z.string(),
  interpreter: z.string(),
  granted: z.boolean(),
  runnable: z.boolean(),
  why: z.string().optional(),
  timeoutMs: z.number().int(),
  envNames: z.array(z.string()),
  envNotSet: z.array(z.string()),
  envWarning: z.string().optional(),
  /** As in `willRun`: the destinations a run may reach, and the warnings about them. */
  egress: z.array(z.string()).optional(),
  egressRules: z.array(egressRuleSetSchema).optional(),
  egressWarning: z.string().optional(),
  egressNote: z.string().optional(),
  /** As in `willRun`, or the environments' states when they keep the script from running. */
  deps: z.array(depsInfoSchema).optional(),
  /** As in `willRun`: names, hosts, header and format of the script's secrets, never a value. */
  secrets: z.array(secretShownSchema).optional(),
  secretsNotBound: z.array(secretNotBoundSchema).optional(),
  secretsWarning: z.string().optional(),
});
export type ScriptInfo = z.infer<typeof scriptInfo>;

export const describeResultSchema = z.strictObject({
  protocol: z.number().int(),
  isolation: z.strictObject({
    level: isolationLevelSchema,
    detail: z.string(),
    mechanisms: z.array(z.string()),
    memoryBytes: z.number().int(),
  }),
  interpreters: z.array(z.strictObject({ name: z.string(), available: z.boolean(), why: z.string().optional() })),
  environ: z.strictObject({ scrubbed: z.boolean(), detail: z.string().optional() }),
  /** False when this runner refuses every run (hosted and its environ could not be scrubbed). */
  runsAllowed: z.boolean(),
  runsRefusedWhy: z.string().optional(),
  grantFrom: z.string(),
  /** Set when the asking front's configuration differs from the runner's: prepare and run are refused. */
  configMismatch: z.strictObject({ differs: z.array(z.enum(['roots', 'mode', 'grant', 'declarations'])), message: z.string() }).optional(),
  /** The spent-token ledger: where tokens are spent, whether it answers now, and its errors since start. */
  ledger: z.strictObject({ kind: z.enum(['file', 'redis']), available: z.boolean(), errors: z.number().int() }).optional(),
  /** The runner's counts since it started (runner/requests/stats.ts), for the front's metrics. */
  runs: z
    .strictObject({
      ended: z.record(z.string(), z.number().int().nonnegative()),
      refused: z.record(z.string(), z.number().int().nonnegative()),
      reaps: z.number().int().nonnegative(),
      reapSeconds: z.number().nonnegative(),
      running: z.number().int().nonnegative(),
      queued: z.number().int().nonnegative(),
    })
    .optional(),
  skills: z.array(
    z.strictObject({
      name: z.string(),
      scripts: z.array(scriptInfo),
      declarationProblems: z.array(z.string()),
      /** Where the skill's declaration came from, as the runner resolved it (absent: none applies). */
      declarationFrom: declarationFromSchema.optional(),
      declarationPinned: z.boolean().optional(),
      /** For skills with declared scripts: the runner's content digest of the skill (or why it has none), so a front can tell it serves other bytes. */
      content: z
        .union([z.strictObject({ digest: sha256Hex, fileCount: z.number().int().nonnegative() }), z.strictObject({ why: z.string() })])
        .optional(),
      /** Its data folder for the asking caller (docs/isolation.md, "Data folders"): its name, quota and what its last run left. */
      data: z
        .strictObject({
          folder: z.string(),
          bytes: z.number().int().positive(),
          files: z.number().int().positive(),
          used: z
            .strictObject({ bytes: z.number().int().nonnegative(), entries: z.number().int().nonnegative(), full: z.boolean() })
            .optional(),
        })
        .optional(),
    }),
  ),
});
export type DescribeResult = z.infer<typeof describeResultSchema>;

export const busyFiguresSchema = z.strictObject({
  running: z.number().int(),
  maxRuns: z.number().int(),
  queued: z.number().int(),
  clientRunning: z.number().int(),
  clientShare: z.number().int(),
  waitedMs: z.number().int(),
  retryAfterMs: z.number().int(),
});

export const refusalSchema = z.strictObject({
  code: z.string(),
  message: z.string(),
  /** Only with DRAFT_CHANGED: the preview of what would run now, with a fresh token. */
  fresh: mintedSchema.optional(),
  /** Only with BUSY from the run slots (runner/requests/admission.ts): how full they were, and when to retry. */
  busy: busyFiguresSchema.optional(),
});
export type Refusal = z.infer<typeof refusalSchema>;

const dataFiguresSchema = z.strictObject({ bytes: z.number().int().nonnegative(), entries: z.number().int().nonnegative() });
/** A data folder's clear: the preview (`confirmToken`, `used`), or what was removed and what is left. Names only, never a host path. */
export const dataClearResultSchema = z.strictObject({
  skill: z.string(),
  folder: z.string(),
  used: dataFiguresSchema.extend({ full: z.boolean() }).optional(),
  confirmToken: z.string().optional(),
  expiresAt: z.string().optional(),
  removed: dataFiguresSchema.optional(),
  left: dataFiguresSchema.optional(),
  note: z.string().optional(),
});
export type DataClearResult = z.infer<typeof dataClearResultSchema>;

const fail = z.strictObject({ ok: z.literal(false), error: refusalSchema });
export const responseSchemas = {
  hello: z.union([z.strictObject({ ok: z.literal(true), result: z.strictObject({ protocol: z.number().int() }) }), fail]),
  describe: z.union([z.strictObject({ ok: z.literal(true), result: describeResultSchema }), fail]),
  prepare: z.union([z.strictObject({ ok: z.literal(true), result: mintedSchema }), fail]),
  run: z.union([z.strictObject({ ok: z.literal(true), result: runResultSchema }), fail]),
  'data-clear': z.union([z.strictObject({ ok: z.literal(true), result: dataClearResultSchema }), fail]),
  cancel: z.union([
    z.strictObject({ ok: z.literal(true), result: z.strictObject({ cancelled: z.boolean(), runId: z.string().optional() }) }),
    fail,
  ]),
} as const;

export type Response<T extends RequestType> = z.infer<(typeof responseSchemas)[T]>;
export type ResultOf<T extends RequestType> = Extract<Response<T>, { ok: true }>['result'];
/** Any refusal frame (also sent for requests that could not be read at all). */
export const anyFailureSchema = fail;
