/**
 * @module The sealed state of a 2026-07-28 elicitation round (docs/architecture.md §7): what the person is being
 * asked to approve travels with the client, HMAC-sealed and expiring, so nothing is kept in the
 * front between the two rounds. It carries the request and the hash of the exact `willRun` shown,
 * never a confirm token (the codec signs but does not encrypt; a token in it would let a client
 * skip the person).
 */
import { randomBytes } from 'node:crypto';
import { createRequestStateCodec, type RequestStateCodec } from '@modelcontextprotocol/server';
import { deriveKey, readConfirmSecret } from '../../shared/keys.js';

export interface ApprovalState {
  skill: string;
  script: string;
  args: string[];
  /** `willRunHash` of the preview the person was shown. */
  h: string;
  /** A URL-mode round: the id of the pending approval the page decides (server/approve/store.ts). */
  a?: string;
}

/**
 * The front's only key: the `request-state` derivation of the owner's confirmation secret (so
 * replicas agree), or undefined — then {@link createApprovalCodec} makes a random one per process
 * (stdio: one process serves both rounds). Read by the launcher before it drops root and trims
 * its variables: the secret itself is not kept (shared/keys.ts). A secret file the front may not
 * read (0600, the runner's) is no secret for it: random key.
 */
export function frontStateKey(env: NodeJS.ProcessEnv): Buffer | undefined {
  const found = readConfirmSecret(env, true);
  return 'secret' in found ? deriveKey(found.secret, 'request-state') : undefined;
}

/** Security: the key seals requestState only; it can mint no confirm token (shared/keys.ts). */
export function createApprovalCodec(key: Buffer | undefined, ttlSeconds: number): RequestStateCodec<ApprovalState> {
  return createRequestStateCodec<ApprovalState>({ key: key ?? randomBytes(32), ttlSeconds });
}
