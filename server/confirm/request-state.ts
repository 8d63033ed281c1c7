/**
 * @module The sealed state of a 2026-07-28 elicitation round (docs/architecture.md §7): what the person is being
 * asked to approve travels with the client, HMAC-sealed and expiring, so nothing is kept in the
 * front between the two rounds. It carries the request and the hash of the exact `willRun` shown,
 * never a confirm token (the codec signs but does not encrypt; a token in it would let a client
 * skip the person).
 */
import { createHmac, randomBytes } from 'node:crypto';
import { createRequestStateCodec, type RequestStateCodec } from '@modelcontextprotocol/server';

export interface ApprovalState {
  skill: string;
  script: string;
  args: string[];
  /** `willRunHash` of the preview the person was shown. */
  h: string;
}

/**
 * The codec key: derived from MCP_CONFIRM_SECRET when set (so replicas agree), else random per
 * process (stdio: one process serves both rounds).
 */
export function createApprovalCodec(secret: string | undefined, ttlSeconds: number): RequestStateCodec<ApprovalState> {
  const key = secret ? createHmac('sha256', secret).update('skill-mcp requestState v1').digest() : randomBytes(32);
  return createRequestStateCodec<ApprovalState>({ key, ttlSeconds });
}
