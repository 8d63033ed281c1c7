/**
 * @module Sealed values of the approval page: the approver's session cookie and the CSRF token of
 * its forms, both HMAC-SHA256 under a key this process makes at start (the pending approvals are
 * this process's too, so nothing sealed needs to outlive it). Signed, not encrypted: a session
 * holds only who signed in and until when.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export interface Session {
  /** Random per sign-in: the CSRF tokens are bound to it. */
  sid: string;
  /** The approver's OAuth `sub`; absent for the static token's holder. */
  sub?: string | undefined;
  scopes: string[];
  /** Expiry, ms since the epoch. */
  exp: number;
}

/** Security: a stolen cookie is worth little: it opens the page for ten minutes at most. */
export const SESSION_MS = 600_000;

const SESSION_LABEL = 'skill-mcp approval session v1\0';
const CSRF_LABEL = 'skill-mcp approval csrf v1\0';

function mac(key: Buffer, label: string, value: string): Buffer {
  return createHmac('sha256', key).update(label).update(value, 'utf8').digest();
}

/** Security: both sides hashed first, so the comparison is constant-time and leaks no length. */
export function sameSecret(presented: string, expected: string): boolean {
  const a = createHash('sha256').update(presented, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}

export class Sealer {
  readonly #key: Buffer;
  readonly #now: () => number;

  constructor(key: Buffer = randomBytes(32), now: () => number = Date.now) {
    this.#key = key;
    this.#now = now;
  }

  newSession(sub: string | undefined, scopes: string[]): Session {
    return { sid: randomBytes(16).toString('base64url'), ...(sub !== undefined ? { sub } : {}), scopes, exp: this.#now() + SESSION_MS };
  }

  seal(session: Session): string {
    const body = Buffer.from(JSON.stringify(session), 'utf8').toString('base64url');
    return `${body}.${mac(this.#key, SESSION_LABEL, body).toString('base64url')}`;
  }

  /** The session a cookie value holds. Security: the MAC is checked first, in constant time, then the expiry. */
  open(value: string | undefined): Session | undefined {
    if (value === undefined || value.length > 4096) return undefined;
    const [body, tag, extra] = value.split('.');
    if (body === undefined || tag === undefined || extra !== undefined) return undefined;
    const expected = mac(this.#key, SESSION_LABEL, body);
    const presented = Buffer.from(tag, 'base64url');
    if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) return undefined;
    let session: unknown;
    try {
      session = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch {
      return undefined;
    }
    const s = session as Partial<Session>;
    if (
      typeof s.sid !== 'string' ||
      typeof s.exp !== 'number' ||
      !Array.isArray(s.scopes) ||
      (s.sub !== undefined && typeof s.sub !== 'string')
    )
      return undefined;
    if (this.#now() >= s.exp) return undefined;
    return s as Session;
  }

  /** Security: a form token bound to this sign-in and this approval — a page for one run cannot approve another. */
  csrf(session: Session, approvalId: string): string {
    return mac(this.#key, CSRF_LABEL, `${session.sid}\0${approvalId}`).toString('base64url');
  }

  csrfValid(session: Session, approvalId: string, presented: string | null): boolean {
    return presented !== null && presented !== '' && sameSecret(presented, this.csrf(session, approvalId));
  }
}
