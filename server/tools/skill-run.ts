/**
 * @module `skill_run` (docs/architecture.md §1, §7): runs a declared, granted script through the runner after a
 * person approved that exact run. Every refusal that needs no person is applied first; then the
 * client is asked (form elicitation — a 2025 `elicitation/create` or a 2026 input-required round)
 * or handed a preview and a one-time token. The front never spawns anything: the runner re-derives
 * the run, checks the token and runs it.
 */
import { inputRequired, inputResponse, TRACEPARENT_META_KEY, type CallToolResult, type ServerContext } from '@modelcontextprotocol/server';
import { SkillMcpError } from '../../shared/errors.js';
import { grantScripts, notGrantedMessage } from '../../shared/grant.js';
import { traceparentSchema, type Approval, type Minted, type Response, type RunResult, type WillRun } from '../../shared/protocol.js';
import { shortDigest } from '../../shared/content-digest.js';
import { willRunHash } from '../../shared/token.js';
import { confirmPath, PAGE_INSTRUCTIONS, tokenInstructions, tokenNeedsPage, type ClientElicitation } from '../confirm/settings.js';
import { MAX_PENDING_APPROVALS, type PendingApproval, type Requester } from '../approve/store.js';
import type { ApprovalState } from '../confirm/request-state.js';
import type { FrontContext } from '../context.js';
import { readablePrefix, readableText } from './encoding.js';
import { ok, refuse } from './result.js';
import { withProgress } from './progress.js';
import { contentMismatch, frontContent } from './content-check.js';
import { decodeInputs } from './run-inputs.js';
import type { DecodedInputs, FileInput } from './run-inputs.js';
import { outputContent } from './run-outputs.js';
import { egressLine } from './run-egress.js';
import { redactionLine } from './run-redaction.js';
import { formatRule } from '../../shared/egress-rules.js';

export interface RunInput {
  name: string;
  script: string;
  args: string[];
  confirmToken?: string | undefined;
  /** Files for the run's workspace (tools/run-inputs.ts), and its stdin. */
  files?: FileInput[] | undefined;
  stdin?: string | undefined;
}

const CONFIRM_KEY = 'confirm-run';

/** The request's W3C `traceparent` (`_meta`), when well formed: the runner writes it into the run's audit lines. */
function traceparentOf(ctx: ServerContext): string | undefined {
  const value = (ctx.mcpReq._meta as Record<string, unknown> | undefined)?.[TRACEPARENT_META_KEY];
  return typeof value === 'string' && traceparentSchema.safeParse(value).success ? value : undefined;
}

/** Refusals that need no person and no runner: the catalog already knows. */
function localRefusal(front: FrontContext, input: RunInput, ctx: ServerContext): CallToolResult | undefined {
  const record = front.requireSkill(input.name);
  const declared = record.declaration?.run ?? [];
  const script = declared.find((s) => s.script === input.script);
  if (!script) {
    const list =
      declared.length > 0
        ? `It declares: ${declared.map((s) => s.script).join(', ')}.`
        : 'It declares no runnable scripts (a run list in its mcp-host.yaml, or an operator declaration, would; skill_list shows problems).';
    return refuse('NOT_DECLARED', `skill "${record.name}" does not declare "${input.script}" as a script, so it cannot run. ${list}`);
  }
  const identity = front.identityOf(ctx);
  const grant = grantScripts(record.name, record.declaration, front.catalog.grant, identity).find(
    (g) => g.declared.script === input.script,
  );
  if (!grant?.granted) return refuse('NOT_GRANTED', notGrantedMessage(front.catalog.grant, record.name, input.script, identity));
  return undefined;
}

function formatBytes(bytes: number): string {
  return bytes % 1024 ** 3 === 0 ? `${bytes / 1024 ** 3} GiB` : `${Math.round(bytes / 1024 ** 2)} MiB`;
}

function describeRun(willRun: WillRun, used?: Minted['dataUsed']): string {
  const lines = [
    `Run ${willRun.skill}/${willRun.argv[0]}?`,
    `interpreter: ${willRun.interpreter}`,
    `argv: ${JSON.stringify(willRun.argv)}`,
    `cwd: ${willRun.cwd}`,
    `declared by: ${willRun.declarationFrom === 'operator' ? `the operator${willRun.declarationPinned ? ' (pinned to these files)' : ''}` : willRun.declarationFrom === 'sidecar' ? 'the skill (mcp-host.yaml)' : 'the skill (SKILL.md frontmatter)'}`,
    `timeout: ${Math.round(willRun.timeoutMs / 1000)} s`,
    `variables the script receives: ${willRun.envNames.join(', ') || '(none)'}`,
    `isolation: ${willRun.isolation} (${willRun.sandbox.join(', ') || 'none'})`,
    `memory cap: ${formatBytes(willRun.memoryBytes)}`,
    `code: script ${shortDigest(willRun.content.script)}, skill files ${shortDigest(willRun.content.files)} (${willRun.content.fileCount} files, ${willRun.content.bytes} bytes) — the run is a copy of exactly these bytes`,
  ];
  const p = willRun.provenance;
  if (p)
    lines.push(
      `pulled from: ${p.source} ${p.from}${p.state === 'as-pulled' ? `${p.commit ? ` at commit ${p.commit}` : ''}${p.digest ? ` (index digest ${shortDigest(p.digest.slice(7))})` : ''}` : ` — MODIFIED SINCE PULL: ${p.detail}`}`,
    );
  lines.push(...describeInputs(willRun));
  if (willRun.data)
    lines.push(
      `data folder: ${willRun.data.folder}, read and written by the script, kept between runs (quota ${willRun.data.bytes} bytes, ${willRun.data.files} entries${used ? `; holds ${used.bytes} bytes in ${used.entries} entries${used.full ? ', OVER ITS QUOTA: the run will be refused until space is freed' : ''}` : '; empty so far'})`,
    );
  if (willRun.isolation === 'same-uid')
    lines.push("WARNING: no sandbox here — the script runs as the server's own user, with its files and its network.");
  if (willRun.envNotSet?.length) lines.push(`granted but not set here: ${willRun.envNotSet.join(', ')}`);
  if (willRun.envWarning) lines.push(`WARNING: ${willRun.envWarning}`);
  const ownNetwork = willRun.isolation !== 'uid' && willRun.isolation !== 'same-uid';
  const egress = willRun.egress ?? [];
  const network =
    egress.length === 0
      ? ownNetwork
        ? 'none'
        : "not isolated (this machine's network)"
      : willRun.egressNote
        ? `declared ${egress.join(', ')} (see the warning below)`
        : `only ${egress.join(', ')}, through the run's own proxy`;
  lines.push(`network: ${network}`);
  // The request rules are part of what is approved: only these calls reach those hosts (docs/egress-rules.md).
  for (const set of willRun.egressRules ?? [])
    lines.push(`requests to ${set.entry}: only ${set.allow.map(formatRule).join('; ')} (anything else is refused with a 403)`);
  if (willRun.egressNote) lines.push(`WARNING: ${willRun.egressNote}`);
  lines.push(...describeSecrets(willRun));
  if (willRun.deps?.length)
    lines.push(
      `packages: ${willRun.deps.map((d) => `${d.kind} environment ${shortDigest(d.digest)} (installed by the operator, read-only, checked against its manifest)`).join(', ')}`,
    );
  if (willRun.egressWarning) lines.push(`WARNING: ${willRun.egressWarning}`);
  if (willRun.secretsWarning) lines.push(`WARNING: ${willRun.secretsWarning}`);
  return lines.join('\n');
}

/** The secret lines of a preview: each by name, hosts and header, never a value (docs/secrets.md). */
function describeSecrets(willRun: WillRun): string[] {
  const lines = (willRun.secrets ?? []).map(
    (s) =>
      `secret ${s.name}: sent only to ${s.hosts.join(', ')} as ${s.header}: ${s.format} by the run's proxy; the script holds a placeholder, never the value`,
  );
  for (const s of willRun.secretsNotBound ?? []) lines.push(`secret ${s.name}: not given to this run (${s.why})`);
  return lines;
}

/** The input lines of a preview: each file by name, size and a short digest, then stdin. */
function describeInputs(willRun: WillRun): string[] {
  const inputs = willRun.inputs;
  if (inputs === undefined) return ['input files: none (the script starts in an empty workspace)'];
  const lines = [inputs.files.length === 0 ? 'input files: none' : 'input files:'];
  for (const f of inputs.files) lines.push(`  ${f.path} (${f.size} bytes, ${shortDigest(f.sha256)})`);
  if (inputs.stdin) lines.push(`stdin: ${inputs.stdin.size} bytes, ${shortDigest(inputs.stdin.sha256)}`);
  return lines;
}

/**
 * One output stream as the answer carries it: `stdout` text when readable, else `stdoutBase64`
 * (binary output, or text whose escaping would blow up the message), so a hostile script cannot
 * make the answer too large for the client to read.
 */
function stream(name: 'stdout' | 'stderr', bytes: Uint8Array, cut: boolean): Record<string, string> {
  const text = cut ? readablePrefix(bytes) : readableText(bytes);
  return text !== undefined ? { [name]: text } : { [`${name}Base64`]: Buffer.from(bytes).toString('base64') };
}

function runResult(result: RunResult): CallToolResult {
  const { runId, exitCode, signal, truncated, timedOut, cancelled, durationMs, stdoutBytes, stderrBytes, memoryLimited } = result;
  const { files, resources } = outputContent(result);
  const answer = ok({
    status: cancelled ? 'cancelled' : 'completed',
    exitCode,
    signal,
    // Redaction changes a stream's length, so the runner says which one was cut (older runners: by the counts).
    ...stream('stdout', result.stdout, result.stdoutTruncated ?? stdoutBytes > result.stdout.length),
    ...stream('stderr', result.stderr, result.stderrTruncated ?? stderrBytes > result.stderr.length),
    truncated,
    timedOut,
    durationMs,
    stdoutBytes,
    stderrBytes,
    runId,
    ...(memoryLimited
      ? {
          memoryLimited,
          note: 'the script ran out of memory under its cap (willRun.memoryBytes); it may declare a lower need or the owner may raise SKILL_MCP_RUN_MEMORY_BYTES',
        }
      : {}),
    // Listed, never their bytes: those travel once, as the resource items after this text.
    files,
    ...(result.filesNote !== undefined ? { filesNote: result.filesNote } : {}),
    // A proxied run only: what its egress proxy refused (bounded by the runner) and how much it allowed.
    ...(result.egress ? { egress: result.egress } : {}),
    // Never silent: a run stopped because its network helper failed says so.
    ...(result.egressNote !== undefined ? { egressNote: result.egressNote } : {}),
    // Never silent: a workspace that filled (ENOSPC inside, or the run stopped) is said in the answer.
    ...(result.workspaceFull === true
      ? { workspaceFull: true, workspaceNote: result.workspaceNote ?? "the run's workspace filled up" }
      : {}),
    // The skill's data folder after the run; never silent when it went over its quota (docs/isolation.md, "Data folders").
    ...(result.data ? { data: result.data } : {}),
    ...(result.dataFull === true ? { dataFull: true } : {}),
    ...(result.dataNote !== undefined ? { dataNote: result.dataNote } : {}),
    // Issue 30: what redaction replaced, by name (never a value).
    ...(result.redaction ? { redaction: result.redaction } : {}),
  });
  // Lines in words after the JSON: a refusal is not mistaken for a failing network, a marker for the script's own text.
  const lines = [
    result.egress ? egressLine(result.egress) : undefined,
    result.redaction ? redactionLine(result.redaction) : undefined,
  ].filter((l) => l !== undefined);
  return { ...answer, content: [...answer.content, ...lines.map((text) => ({ type: 'text' as const, text })), ...resources] };
}

function preview(minted: Minted, extra: Record<string, unknown>): CallToolResult {
  return ok({
    ...extra,
    preview: { willRun: minted.willRun, ...(minted.dataUsed ? { dataUsed: minted.dataUsed } : {}) },
    confirmToken: minted.confirmToken,
    expiresAt: minted.expiresAt,
  });
}

/** Who asks, as a pending approval records it: the OAuth `sub` (none for the static token's one holder). */
function requesterOf(front: FrontContext, ctx: ServerContext): Requester {
  return { subject: front.identityOf(ctx)?.subject };
}

function sameRequester(record: PendingApproval, front: FrontContext, ctx: ServerContext): boolean {
  return record.requester.subject === requesterOf(front, ctx).subject;
}

const APPROVALS_FULL = `${MAX_PENDING_APPROVALS} approvals are already pending on this server, so no new one is opened; nothing ran. Try again once some are decided or expired.`;

/**
 * A preview handed to the model. With the approval page, its token is unlocked only by a person
 * on the page: the answer carries the page's link (approvalUrl) next to the token.
 */
function showPreview(front: FrontContext, minted: Minted, ctx: ServerContext, extra: Record<string, unknown>): CallToolResult {
  const desk = front.approvals;
  if (desk === undefined || !tokenNeedsPage(front.confirm, true)) return preview(minted, extra);
  const record = desk.open(minted, requesterOf(front, ctx));
  if (record === undefined) return refuse('BUSY', APPROVALS_FULL);
  return preview(minted, { ...extra, approvalUrl: desk.urlFor(record), instructions: PAGE_INSTRUCTIONS });
}

/**
 * A token on a front with the approval page (and a mode that asks someone). Security: the token
 * alone runs nothing — the model holds it, and the model is not the person; it runs only once a
 * person approved its preview on the page, and then as that person's approval in the audit.
 */
async function runPageApproved(
  front: FrontContext,
  input: RunInput,
  decoded: DecodedInputs,
  token: string,
  ctx: ServerContext,
): Promise<CallToolResult> {
  const desk = front.approvals!;
  const record = desk.store.forToken(token);
  if (record === undefined || !sameRequester(record, front, ctx)) {
    return refuse(
      'APPROVAL_REQUIRED',
      'this token was not handed out with an approval link by this server to this caller (or the server restarted since): here a person approves each run on the approval page. Call skill_run without confirmToken for a new preview and its approvalUrl.',
    );
  }
  return afterDecision(front, input, decoded, record, ctx, () =>
    refuse(
      'APPROVAL_PENDING',
      `nobody has approved this run yet, so nothing ran. Ask the person to open ${desk.urlFor(record)} and approve it, then call skill_run again with the same arguments and token.`,
      { approvalUrl: desk.urlFor(record) },
    ),
  );
}

/** What a decided (or expired) record means for the run; `pending` says what to answer while nobody decided. */
async function afterDecision(
  front: FrontContext,
  input: RunInput,
  decoded: DecodedInputs,
  record: PendingApproval,
  ctx: ServerContext,
  pending: () => CallToolResult | Promise<CallToolResult>,
): Promise<CallToolResult> {
  const desk = front.approvals!;
  if (record.status === 'denied')
    return refuse(
      'APPROVAL_DENIED',
      `${record.approver ?? 'the person'} denied this run on the approval page; nothing ran. Do not ask again unless the person says so.`,
    );
  if (record.status === 'used')
    return refuse(
      'TOKEN_REUSED',
      'this approval was used already: it runs once. Call skill_run without confirmToken for a new preview if the person wants another run.',
    );
  if (desk.store.expired(record))
    return refuse(
      'TOKEN_EXPIRED',
      'the approval expired before the run was sent; nothing ran. Call skill_run without confirmToken for a new preview and link.',
    );
  if (record.status === 'pending') return pending();
  const result = await execute(front, input, decoded, record.minted.confirmToken, ctx, {
    channel: 'elicitation-url',
    ...(record.approver !== undefined ? { approver: record.approver } : {}),
  });
  if (result.isError !== true) desk.store.markUsed(record);
  return result;
}

/** How long one retried URL round waits for the person's decision before asking again (the client's request timeout is 60 s). */
const APPROVAL_WAIT_MS = 30_000;

function askAtPage(front: FrontContext, input: RunInput, record: PendingApproval): Promise<CallToolResult> {
  const willRun = record.minted.willRun;
  return front.approvalCodec.mint({ skill: input.name, script: input.script, args: input.args, h: record.hash, a: record.id }).then(
    (requestState) =>
      inputRequired({
        inputRequests: {
          [CONFIRM_KEY]: inputRequired.elicitUrl({
            message: `Approve the run of ${willRun.skill}/${willRun.argv[0] ?? ''} in your browser: the page shows exactly what would run (arguments, files, digests, network, isolation) and asks you to sign in, then Approve or Deny. It runs once, only if you approve.`,
            url: front.approvals!.urlFor(record),
          }),
        },
        requestState,
      }) as unknown as CallToolResult,
  );
}

/**
 * URL-mode elicitation (a client declaring `elicitation.url`): the first round opens a pending
 * approval and sends its link; the retried round (the person agreed to open it) waits for the
 * decision on the page — an event, with a bound — and runs, refuses, or asks again.
 */
async function urlRound(front: FrontContext, input: RunInput, decoded: DecodedInputs, ctx: ServerContext): Promise<CallToolResult> {
  const desk = front.approvals!;
  const answer = inputResponse(ctx.mcpReq.inputResponses, CONFIRM_KEY);
  const state = ctx.mcpReq.requestState<ApprovalState>();
  const sameRequest =
    state !== undefined &&
    typeof state === 'object' &&
    state.skill === input.name &&
    state.script === input.script &&
    JSON.stringify(state.args) === JSON.stringify(input.args);
  const record = sameRequest && typeof state.a === 'string' ? desk.store.get(state.a) : undefined;
  if (record !== undefined && record.hash === state?.h && sameRequester(record, front, ctx) && answer.kind === 'elicit') {
    if (answer.action !== 'accept') {
      // The person would not open the page: the link decides nothing any more.
      desk.store.decide(record, 'denied', requesterOf(front, ctx).subject ?? 'static-token');
      return ok({
        status: 'cancelled',
        detail: `the person ${answer.action === 'decline' ? 'declined' : 'dismissed'} the approval page; nothing ran`,
      });
    }
    if (record.status === 'pending') await desk.store.waitForDecision(record, APPROVAL_WAIT_MS, ctx.mcpReq.signal);
    return afterDecision(front, input, decoded, record, ctx, () => askAtPage(front, input, record));
  }
  const minted = await prepare(front, input, decoded, ctx);
  const opened = desk.open(minted, requesterOf(front, ctx));
  if (opened === undefined) return refuse('BUSY', APPROVALS_FULL);
  return askAtPage(front, input, opened);
}

/**
 * Sends the run to the runner, with progress while it lasts and the client's cancel wired in.
 * `approval`: how the yes reached us, for the runner's audit line — a form elicitation, or a token
 * the client passed back (`auto` when the owner's MCP_CONFIRM_MODE=auto asked no one).
 */
async function execute(
  front: FrontContext,
  input: RunInput,
  decoded: DecodedInputs,
  token: string,
  ctx: ServerContext,
  approval: Approval,
): Promise<CallToolResult> {
  const restartsBefore = front.runner.restarts();
  let answer: Response<'run'>;
  try {
    answer = await withProgress(ctx, `${input.name}/${input.script}`, () =>
      front.runner.send(
        (client) =>
          client.run(
            {
              skill: input.name,
              script: input.script,
              args: input.args,
              confirmToken: token,
              approval,
              identity: front.identityOf(ctx),
              traceparent: traceparentOf(ctx),
              ...(decoded.files.length > 0 ? { files: decoded.files } : {}),
              ...(decoded.stdin !== undefined ? { stdin: decoded.stdin } : {}),
            },
            { signal: ctx.mcpReq.signal, client: front.clientOf(ctx) },
          ),
        { idempotent: false },
      ),
    );
  } catch (error) {
    if (error instanceof SkillMcpError && error.code === 'CANCELLED')
      return ok({ status: 'cancelled', detail: 'the client cancelled the call; the run was killed' });
    if (error instanceof SkillMcpError && error.code === 'RUNNER_UNAVAILABLE') {
      throw new SkillMcpError(
        'RUNNER_UNAVAILABLE',
        `${error.message}. ${front.runner.restarts() > restartsBefore ? 'The runner died during the run and has been restarted; the run did not finish and was not retried.' : 'The run may not have finished; it was not retried.'}`,
      );
    }
    throw error;
  }
  if (answer.ok) return runResult(answer.result);
  const { code, message, fresh, busy } = answer.error;
  if (code === 'DRAFT_CHANGED' && fresh) {
    const differs = await runnerServesOther(front, input.name, fresh);
    if (differs !== undefined) return refuse('CONTENT_MISMATCH', differs);
    return {
      ...showPreview(front, fresh, ctx, {
        status: 'draft-changed',
        error: { code, message },
        instructions:
          'The token was minted for a different run. This is the preview of what would run now, with a fresh token; it needs the same approval.',
      }),
      isError: true,
    };
  }
  // BUSY from the run slots carries the figures, so a program can wait `retryAfterMs` without parsing words.
  return refuse(code, message, busy ? { busy } : {});
}

/**
 * Security: a preview binds the runner's bytes; the person and the model know the front's. When
 * they differ (the processes see different copies of the skill), no preview is shown and nothing
 * runs under it.
 */
async function runnerServesOther(front: FrontContext, name: string, minted: Minted): Promise<string | undefined> {
  return contentMismatch(
    name,
    await frontContent(front, front.requireSkill(name)),
    minted.willRun.content.files,
    minted.willRun.content.fileCount,
  );
}

async function prepare(front: FrontContext, input: RunInput, decoded: DecodedInputs, ctx: ServerContext): Promise<Minted> {
  // The digests only: the bytes travel once, with the run (docs/architecture.md §8, "A run's workspace").
  const answer = await front.runner.send(
    (client) =>
      client.prepare({
        skill: input.name,
        script: input.script,
        args: input.args,
        identity: front.identityOf(ctx),
        traceparent: traceparentOf(ctx),
        ...(decoded.inputs ? { inputs: decoded.inputs } : {}),
      }),
    { idempotent: true },
  );
  if (!answer.ok) throw new SkillMcpError(answer.error.code as never, answer.error.message);
  const differs = await runnerServesOther(front, input.name, answer.result);
  if (differs !== undefined) throw new SkillMcpError('CONTENT_MISMATCH', differs);
  return answer.result;
}

export async function skillRun(
  front: FrontContext,
  input: RunInput,
  ctx: ServerContext,
  client: ClientElicitation,
): Promise<CallToolResult> {
  if (front.runRefusal) return refuse(front.runRefusal.code, front.runRefusal.message);
  const local = localRefusal(front, input, ctx);
  if (local) return local;
  const decoded = decodeInputs(input.files, input.stdin, front.runInputBytes);
  const page = front.approvals !== undefined;
  if (input.confirmToken !== undefined) {
    if (tokenNeedsPage(front.confirm, page)) return runPageApproved(front, input, decoded, input.confirmToken, ctx);
    return execute(front, input, decoded, input.confirmToken, ctx, { channel: front.confirm.mode === 'auto' ? 'auto' : 'token' });
  }

  const path = confirmPath(front.confirm, client, page);
  if (path.kind === 'refuse') {
    return refuse(
      'CONFIRM_REFUSED',
      'this client cannot show a confirmation prompt and the owner set MCP_CONFIRM_MODE=refuse (or an unknown value), so no script runs from it. Use a client that supports form elicitation, or ask the owner for MCP_CONFIRM_MODE=ask-user.',
    );
  }
  if (path.kind === 'token') {
    return preview(await prepare(front, input, decoded, ctx), {
      status: 'confirmation-required',
      mode: path.mode,
      instructions: tokenInstructions(path.mode),
    });
  }
  if (path.kind === 'page')
    return showPreview(front, await prepare(front, input, decoded, ctx), ctx, { status: 'confirmation-required', mode: 'approval-page' });
  if (path.kind === 'elicit-url') return urlRound(front, input, decoded, ctx);

  // Elicitation. A retried round carries the person's answer and our sealed state.
  const answer = inputResponse(ctx.mcpReq.inputResponses, CONFIRM_KEY);
  const state = ctx.mcpReq.requestState<ApprovalState>();
  const sameRequest =
    state !== undefined &&
    typeof state === 'object' &&
    state.skill === input.name &&
    state.script === input.script &&
    JSON.stringify(state.args) === JSON.stringify(input.args);
  if (answer.kind === 'elicit' && sameRequest) {
    if (answer.action !== 'accept')
      return ok({
        status: 'cancelled',
        detail: `the person ${answer.action === 'decline' ? 'declined' : 'dismissed'} the run; nothing ran`,
      });
    const minted = await prepare(front, input, decoded, ctx);
    // The approval is bound to the exact willRun shown (inputs included); if anything changed since, ask again.
    if (willRunHash(minted.willRun) === state.h)
      return execute(front, input, decoded, minted.confirmToken, ctx, { channel: 'elicitation-form' });
  }
  const minted = await prepare(front, input, decoded, ctx);
  const requestState = await front.approvalCodec.mint({
    skill: input.name,
    script: input.script,
    args: input.args,
    h: willRunHash(minted.willRun),
  });
  return inputRequired({
    inputRequests: {
      [CONFIRM_KEY]: inputRequired.elicit({
        message: describeRun(minted.willRun, minted.dataUsed),
        requestedSchema: { type: 'object', properties: {} },
      }),
    },
    requestState,
  }) as unknown as CallToolResult;
}
