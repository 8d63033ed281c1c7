/**
 * @module `skill_data_clear` (docs/isolation.md, "Data folders"): a person empties their own data
 * folder of a skill from the MCP client. Confirmed as a run is (server/confirm/settings.ts): a
 * client that shows a form is asked there (the person's decline removes nothing); otherwise the
 * two-call token path — a preview and a token bound to that folder, then the clear with it. The
 * approval page approves runs only, so a client that could only be sent there is refused and told
 * what works instead. The runner re-derives the folder from the skill and the caller (it is never
 * named by the request), checks the token, takes the folder's turn (BUSY while a run holds it) and
 * empties it without following a link.
 */
import { inputRequired, inputResponse, TRACEPARENT_META_KEY, type CallToolResult, type ServerContext } from '@modelcontextprotocol/server';
import { SkillMcpError } from '../../shared/errors.js';
import { grantScripts, notGrantedMessage } from '../../shared/grant.js';
import { traceparentSchema, type Approval, type DataClearResult } from '../../shared/protocol.js';
import { clearHash } from '../../shared/token.js';
import { confirmPath, tokenNeedsPage, type ClientElicitation } from '../confirm/settings.js';
import type { ApprovalState } from '../confirm/request-state.js';
import type { FrontContext } from '../context.js';
import { ok, refuse } from './result.js';

const CONFIRM_KEY = 'confirm-data-clear';

export interface ClearInput {
  name: string;
  confirmToken?: string | undefined;
}

const NO_PAGE =
  "this server approves runs on its approval page, which does not approve clearing a data folder; nothing was removed. Use a client that can show a confirmation prompt (form elicitation), or ask the server's operator (skill-mcp data rm).";

function traceparentOf(ctx: ServerContext): string | undefined {
  const value = (ctx.mcpReq._meta as Record<string, unknown> | undefined)?.[TRACEPARENT_META_KEY];
  return typeof value === 'string' && traceparentSchema.safeParse(value).success ? value : undefined;
}

/** What the person is asked: the folder by name and what it holds, never a host path. */
function describeClear(preview: DataClearResult): string {
  const holds = preview.used
    ? `It holds ${preview.used.bytes} bytes in ${preview.used.entries} entries (as its last run left it).`
    : 'No run has recorded what it holds yet.';
  return `Empty the data folder ${preview.folder} of skill ${preview.skill}? Everything its scripts kept there between runs is removed for good; its next run starts from nothing. ${holds}`;
}

async function ask(
  front: FrontContext,
  input: ClearInput,
  ctx: ServerContext,
  confirmToken?: string,
  approval?: Approval,
): Promise<{ ok: true; result: DataClearResult } | { ok: false; answer: CallToolResult }> {
  const answer = await front.runner.send(
    (client) =>
      client.dataClear({
        skill: input.name,
        confirmToken,
        approval,
        identity: front.identityOf(ctx),
        traceparent: traceparentOf(ctx),
      }),
    // A clear changes the folder: never sent twice (and the cached describe is dropped after it).
    { idempotent: confirmToken === undefined },
  );
  if (!answer.ok) return { ok: false, answer: refuse(answer.error.code, answer.error.message) };
  return { ok: true, result: answer.result };
}

function cleared(result: DataClearResult): CallToolResult {
  return ok({
    status: 'cleared',
    skill: result.skill,
    folder: result.folder,
    removed: result.removed,
    left: result.left,
    ...(result.note !== undefined ? { note: result.note } : {}),
  });
}

async function clearWith(
  front: FrontContext,
  input: ClearInput,
  ctx: ServerContext,
  token: string,
  approval: Approval,
): Promise<CallToolResult> {
  const done = await ask(front, input, ctx, token, approval);
  return done.ok ? cleared(done.result) : done.answer;
}

export async function skillDataClear(
  front: FrontContext,
  input: ClearInput,
  ctx: ServerContext,
  client: ClientElicitation,
): Promise<CallToolResult> {
  if (front.runRefusal) return refuse(front.runRefusal.code, front.runRefusal.message);
  const record = front.requireSkill(input.name);
  // Refused here first when no script of it is granted to this caller; the runner checks again.
  const identity = front.identityOf(ctx);
  const grants = grantScripts(record.name, record.declaration, front.catalog.grant, identity);
  if (!grants.some((g) => g.granted)) {
    const first = grants[0]?.declared.script ?? '';
    return refuse(
      'NOT_GRANTED',
      grants.length === 0
        ? `skill "${record.name}" declares no scripts, so it keeps no data folder; there is nothing to clear`
        : `${notGrantedMessage(front.catalog.grant, record.name, first, identity)} (no script of it is granted to you, so it keeps no data folder of yours)`,
    );
  }
  const page = front.approvals !== undefined;
  if (input.confirmToken !== undefined) {
    if (tokenNeedsPage(front.confirm, page)) return refuse('CONFIRM_REFUSED', NO_PAGE);
    return clearWith(front, input, ctx, input.confirmToken, { channel: front.confirm.mode === 'auto' ? 'auto' : 'token' });
  }
  let path = confirmPath(front.confirm, client, page);
  // The approval page decides runs only: a client that also shows forms is asked there instead.
  if (path.kind === 'elicit-url') path = client.form ? { kind: 'elicit' } : { kind: 'page' };
  if (path.kind === 'page') return refuse('CONFIRM_REFUSED', NO_PAGE);
  if (path.kind === 'refuse')
    return refuse(
      'CONFIRM_REFUSED',
      'this client cannot show a confirmation prompt and the owner set MCP_CONFIRM_MODE=refuse, so nothing is removed from it. Use a client that supports form elicitation.',
    );
  if (path.kind === 'token') {
    const preview = await ask(front, input, ctx);
    if (!preview.ok) return preview.answer;
    const { confirmToken, expiresAt, ...shown } = preview.result;
    return ok({
      status: 'confirmation-required',
      mode: path.mode,
      preview: shown,
      confirmToken,
      expiresAt,
      instructions:
        path.mode === 'ask-user'
          ? `Nothing was removed. Show the person this preview (the data folder ${shown.folder} of skill ${shown.skill} and what it holds) and ask them to confirm that everything in it is removed for good. Only after they confirm, call skill_data_clear again with the same name plus confirmToken.`
          : 'Nothing was removed. To empty the folder, call skill_data_clear again with the same name plus confirmToken.',
    });
  }
  // Form elicitation: a retried round carries the person's answer and our sealed state.
  const answer = inputResponse(ctx.mcpReq.inputResponses, CONFIRM_KEY);
  const state = ctx.mcpReq.requestState<ApprovalState>();
  const preview = await ask(front, input, ctx);
  if (!preview.ok) return preview.answer;
  const bound = clearHash(preview.result.folder);
  // `script: ''` names no script: a state sealed for a clear never passes for a run's (skill_run matches its script).
  if (answer.kind === 'elicit' && state !== undefined && typeof state === 'object' && state.skill === input.name && state.script === '') {
    if (answer.action !== 'accept')
      return ok({
        status: 'cancelled',
        detail: `the person ${answer.action === 'decline' ? 'declined' : 'dismissed'} the clear; nothing was removed`,
      });
    // The yes is bound to the folder shown; a different one now (another identity's state) is asked again.
    if (state.h === bound) return clearWith(front, input, ctx, preview.result.confirmToken!, { channel: 'elicitation-form' });
  }
  const requestState = await front.approvalCodec.mint({ skill: input.name, script: '', args: [], h: bound });
  if (preview.result.confirmToken === undefined) throw new SkillMcpError('INTERNAL', 'the runner sent no confirmation for the clear');
  return inputRequired({
    inputRequests: {
      [CONFIRM_KEY]: inputRequired.elicit({ message: describeClear(preview.result), requestedSchema: { type: 'object', properties: {} } }),
    },
    requestState,
  }) as unknown as CallToolResult;
}
