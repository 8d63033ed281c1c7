/**
 * @module The pending approvals of this front (docs/hosting.md, "The approval page"): one record per
 * preview a person is asked to approve in a browser — the runner's preview and the one-time token
 * it minted for it, who asked, and what the person decided. Kept in this process's memory only: a
 * restart forgets every pending approval (the tokens then run nothing; the model asks again).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Minted } from '../../shared/protocol.js';
import { willRunHash } from '../../shared/token.js';

/** Who asked for the run: the OAuth `sub`, or none for the static token (its one holder). */
export interface Requester {
  subject?: string | undefined;
}

export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'used';

export interface PendingApproval {
  /** Security: 256 random bits (base64url), the page's address: unguessable, never logged (see {@link logId}). */
  readonly id: string;
  readonly minted: Minted;
  /** `willRunHash` of the preview shown: the approve form must carry it back. */
  readonly hash: string;
  readonly requester: Requester;
  /** The token's own expiry: the link lives exactly as long as what it approves. */
  readonly expiresAtMs: number;
  status: ApprovalStatus;
  /** Who decided (the approver's `sub`, or `static-token`). */
  approver?: string;
}

/** Security: ≥128 bits as the brief for capability URLs asks; 256 costs nothing more. */
const ID_BYTES = 32;
export const APPROVAL_ID = /^[A-Za-z0-9_-]{43}$/;
/** Security: a client that previews in a loop cannot grow this process without bound. */
export const MAX_PENDING_APPROVALS = 10_000;
/** How long an expired record is kept so its link says "expired" rather than "unknown". */
const KEEP_EXPIRED_MS = 600_000;

function tokenKey(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** How an approval is named in logs: a short hash, never the id (the id opens the page). */
export function logId(id: string): string {
  return createHash('sha256').update(id, 'utf8').digest('hex').slice(0, 12);
}

export class ApprovalStore {
  readonly #byId = new Map<string, PendingApproval>();
  readonly #byToken = new Map<string, string>();
  readonly #waiters = new Map<string, Set<() => void>>();
  readonly #now: () => number;
  readonly #max: number;

  constructor(options: { now?: () => number; max?: number } = {}) {
    this.#now = options.now ?? Date.now;
    this.#max = options.max ?? MAX_PENDING_APPROVALS;
  }

  /** A record for a fresh preview; undefined when the store is full of live ones. */
  open(minted: Minted, requester: Requester): PendingApproval | undefined {
    this.#sweep();
    if (this.#byId.size >= this.#max) return undefined;
    const id = randomBytes(ID_BYTES).toString('base64url');
    const record: PendingApproval = {
      id,
      minted,
      hash: willRunHash(minted.willRun),
      requester,
      expiresAtMs: Date.parse(minted.expiresAt),
      status: 'pending',
    };
    this.#byId.set(id, record);
    this.#byToken.set(tokenKey(minted.confirmToken), id);
    return record;
  }

  /** The record, expired ones included until they are swept (so the page can say "expired", not "unknown"). */
  get(id: string): PendingApproval | undefined {
    return APPROVAL_ID.test(id) ? this.#byId.get(id) : undefined;
  }

  forToken(token: string): PendingApproval | undefined {
    const id = this.#byToken.get(tokenKey(token));
    return id === undefined ? undefined : this.#byId.get(id);
  }

  expired(record: PendingApproval): boolean {
    return this.#now() >= record.expiresAtMs;
  }

  /**
   * Records the person's decision. Security: once only — a second approve (a replayed form, a
   * second tab) finds the record decided and changes nothing; an expired link decides nothing.
   */
  decide(record: PendingApproval, decision: 'approved' | 'denied', approver: string): 'ok' | 'decided' | 'expired' {
    if (record.status !== 'pending') return 'decided';
    if (this.expired(record)) return 'expired';
    record.status = decision;
    record.approver = approver;
    this.#wake(record.id);
    return 'ok';
  }

  /**
   * After its run: the record says so (the page, a second call). The single use itself is the
   * runner's spent-token ledger's — a refused run (BUSY, ledger down) keeps its approval there, so
   * it is marked only once a run came back.
   */
  markUsed(record: PendingApproval): void {
    if (record.status === 'approved') record.status = 'used';
  }

  /** Resolves once the record is decided, `waitMs` has passed, or `signal` aborts (whichever first). */
  async waitForDecision(record: PendingApproval, waitMs: number, signal?: AbortSignal): Promise<void> {
    if (record.status !== 'pending' || signal?.aborted) return;
    await new Promise<void>((resolve) => {
      const waiters = this.#waiters.get(record.id) ?? new Set();
      this.#waiters.set(record.id, waiters);
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        waiters.delete(done);
        if (waiters.size === 0) this.#waiters.delete(record.id);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, Math.min(waitMs, record.expiresAtMs - this.#now())));
      signal?.addEventListener('abort', done, { once: true });
      waiters.add(done);
    });
  }

  size(): number {
    return this.#byId.size;
  }

  #wake(id: string): void {
    for (const wake of [...(this.#waiters.get(id) ?? [])]) wake();
  }

  /** Drops records KEEP_EXPIRED_MS past their expiry (until then the page says "expired"). */
  #sweep(): void {
    const now = this.#now();
    for (const [id, record] of this.#byId) {
      if (now < record.expiresAtMs + KEEP_EXPIRED_MS) continue;
      this.#byId.delete(id);
      this.#byToken.delete(tokenKey(record.minted.confirmToken));
    }
  }
}
