/**
 * @module The closed request/response table between the front and the runner (docs/architecture.md §8): the
 * requests here, the answers in protocol-answers.ts. Every
 * message is validated with a strict schema on arrival: unknown request types and unknown keys are
 * refused, never ignored. Nothing here carries a secret value, an absolute host path or token key
 * material; `willRun` is exactly what a person approves and what a token is bound to (docs/architecture.md §7).
 */
import * as z from 'zod';
import { MAX_PATH_CHARS } from './limits.js';
import { MAX_INPUT_FILES, MAX_RUN_INPUT_BYTES } from './run-io.js';

export const PROTOCOL_VERSION = 1;
/** Bounds on what a run request may carry (the runner refuses more before touching the disk). */
export const MAX_ARGS = 256;
export const MAX_ARG_CHARS = 4096;
export const MAX_ARGS_TOTAL_CHARS = 64 * 1024;
export const MAX_TOKEN_CHARS = 1024;
/** Names one describe may ask about (a skill_list page holds at most 100). */
export const MAX_DESCRIBE_SKILLS = 200;

// Security: NUL cannot be passed in argv and would be truncated by the kernel; refuse, never strip.
const arg = z
  .string()
  .max(MAX_ARG_CHARS)
  .refine((s) => !s.includes('\0'), 'an argument holds a NUL byte');
const args = z
  .array(arg)
  .max(MAX_ARGS)
  .refine(
    (a) => a.reduce((n, s) => n + s.length, 0) <= MAX_ARGS_TOTAL_CHARS,
    `the arguments are longer than ${MAX_ARGS_TOTAL_CHARS} characters in total`,
  );
const skill = z.string().min(1).max(255);
const script = z.string().min(1).max(MAX_PATH_CHARS);
const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);
/** Raw bytes (msgpack bin): input files here, stdout, stderr and output files in the answers. */
export const bytes = z.custom<Uint8Array>((value) => value instanceof Uint8Array, 'expected bytes');
/** Input paths are checked in full by shared/run-io.ts (path rules, collisions); here only bounded. */
const inputPath = z.string().min(1).max(MAX_PATH_CHARS);
/** What the preview shows of the run's inputs and the token binds: names, sizes, digests — never bytes. */
export const inputsSchema = z.strictObject({
  files: z
    .array(z.strictObject({ path: inputPath, size: z.number().int().nonnegative().max(MAX_RUN_INPUT_BYTES), sha256: sha256Hex }))
    .max(MAX_INPUT_FILES),
  stdin: z.strictObject({ size: z.number().int().nonnegative().max(MAX_RUN_INPUT_BYTES), sha256: sha256Hex }).optional(),
});
export type Inputs = z.infer<typeof inputsSchema>;
/** The bytes themselves, carried by `run` only (checked against what was approved). */
const inputFiles = z.array(z.strictObject({ path: inputPath, bytes })).max(MAX_INPUT_FILES);
/** A front secret (standalone: 64 hex digits; an operator's file: 32 to 1024 visible characters). */
export const MAX_FRONT_SECRET_CHARS = 1024;
/**
 * Chosen by the front for each run (128 random bits): the one name a cancel may use. Security: a
 * capability — another front on the same runner cannot cancel a run whose id it never saw.
 */
export const cancelIdSchema = z.string().regex(/^[0-9a-f]{32}$/, 'a cancel id is 32 hex digits');
/**
 * Who asked for a run, as the front names them (128 bits: a hash of the HTTP bearer token, or a
 * stdio session's random id). The runner's per-client share of the run slots counts by it; it is
 * a label, not a credential — a front is trusted to name its clients honestly.
 */
export const clientIdSchema = z.string().regex(/^[0-9a-f]{32}$/, 'a client id is 32 hex digits');
/** A W3C Trace Context `traceparent` (version 00) from the MCP request's `_meta`, passed through to the audit. */
export const traceparentSchema = z.string().regex(/^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/);
/** The front's configuration, as digests (shared/config-view.ts). */
export const configViewSchema = z.strictObject({
  roots: sha256Hex,
  mode: z.enum(['hosted', 'standalone']),
  grant: sha256Hex,
  declarations: sha256Hex,
});
/** Where the declaration that applies came from (shared/declaration-source.ts). */
export const declarationFromSchema = z.enum(['frontmatter', 'sidecar', 'operator']);

/** How the person's yes reached the front (see {@link Approval}). */
const approvalSchema = z.strictObject({
  channel: z.enum(['elicitation-form', 'elicitation-url', 'token', 'auto']),
  approver: z.string().max(256).optional(),
});

/** Who asked, as the front verified them (see {@link Identity}). */
const identitySchema = z.strictObject({
  subject: z.string().min(1).max(256),
  clientId: z.string().max(256).optional(),
  groups: z.array(z.string().max(256)).max(64).optional(),
});

export const requestSchema = z.discriminatedUnion('type', [
  /** The first request of every connection, and only the first: who the front is and what it serves. */
  z.strictObject({
    type: z.literal('hello'),
    frontSecret: z.string().min(1).max(MAX_FRONT_SECRET_CHARS).optional(),
    view: configViewSchema,
  }),
  // `skills`: describe only these (a skill_list page); absent: every skill the runner serves.
  // `identity`: whose data folders' usage to show (a verified caller sees its own subject's, never another's).
  z.strictObject({
    type: z.literal('describe'),
    skills: z.array(skill).max(MAX_DESCRIBE_SKILLS).optional(),
    identity: identitySchema.optional(),
  }),
  z.strictObject({
    type: z.literal('prepare'),
    skill,
    script,
    args,
    inputs: inputsSchema.optional(),
    identity: identitySchema.optional(),
    traceparent: traceparentSchema.optional(),
  }),
  z.strictObject({
    type: z.literal('run'),
    skill,
    script,
    args,
    confirmToken: z.string().min(1).max(MAX_TOKEN_CHARS),
    cancelId: cancelIdSchema,
    client: clientIdSchema.optional(),
    files: inputFiles.optional(),
    stdin: bytes.optional(),
    approval: approvalSchema,
    identity: identitySchema.optional(),
    traceparent: traceparentSchema.optional(),
  }),
  z.strictObject({ type: z.literal('cancel'), cancelId: cancelIdSchema }),
  // Empties the caller's own data folder of a skill (docs/isolation.md, "Data folders"): without a
  // token, a preview and a token bound to that folder; with one (after a person confirmed), the clear.
  z.strictObject({
    type: z.literal('data-clear'),
    skill,
    confirmToken: z.string().min(1).max(MAX_TOKEN_CHARS).optional(),
    approval: approvalSchema.optional(),
    identity: identitySchema.optional(),
    traceparent: traceparentSchema.optional(),
  }),
]);
export type RunnerRequest = z.infer<typeof requestSchema>;
export type RequestType = RunnerRequest['type'];
/**
 * How the person's yes reached the front (recorded in the audit log as `approval`): a form or URL
 * elicitation, a confirmToken passed back by the client, or `auto` (no person: the owner's
 * `MCP_SKILL_CONFIRM=auto`). The runner cannot check a channel; it records what its front says.
 */
export type Approval = Extract<RunnerRequest, { type: 'run' }>['approval'];
/**
 * Who asked, as the front verified them (an OAuth access token's `sub`, `client_id`/`azp` and
 * groups). Security: the runner believes it because only an authenticated front can talk to it
 * (SECURITY.md); it re-checks the grant's `subjects` against it.
 */
export type Identity = NonNullable<Extract<RunnerRequest, { type: 'run' }>['identity']>;

/** An egress entry's request rules (shared/egress-rules.ts). */
export const egressRuleSetSchema = z.strictObject({
  entry: z.string(),
  allow: z.array(z.strictObject({ methods: z.array(z.string()), path: z.string() })),
});
export type EgressRuleSet = z.infer<typeof egressRuleSetSchema>;

/**
 * Why a run's egress proxy refused a connection: the policy's reasons (runner/helper/policy.ts),
 * `too-many-open` (closed at accept, over the run's cap of open connections) and `run-ended`
 * (still undecided when the run ended).
 */
export const EGRESS_REFUSAL_REASONS = [
  'not-allowed',
  'special-address',
  'unresolved',
  'bad-destination',
  'too-many-open',
  'run-ended',
  'request-refused',
] as const;
export type EgressRefusalReason = (typeof EGRESS_REFUSAL_REASONS)[number];
/** Distinct refused destinations (host:port and reason) a run result lists; the rest are counted. */
export const MAX_EGRESS_REFUSALS_LISTED = 20;
/** The longest host a refusal names (a DNS name is at most 253; longer text is cut and ends in `…`). */
export const MAX_EGRESS_HOST_CHARS = 255;

// The answers' schemas live in protocol-answers.ts: the front parses them, the runner only builds
// them (so they are not in the privileged runner's bundle). Their types, for both sides:
export type {
  DataClearResult,
  DepsInfo,
  DescribeResult,
  EgressSummary,
  IsolationLevel,
  Minted,
  RedactionSummaryView,
  Refusal,
  Response,
  ResultOf,
  RunResult,
  ScriptInfo,
  WillRun,
} from './protocol-answers.js';
