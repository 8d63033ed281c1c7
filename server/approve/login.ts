/**
 * @module The approval page signs people in at the front's own OAuth issuer: authorization code
 * with PKCE (S256), the front as an OAuth client (`SKILL_MCP_APPROVAL_CLIENT_ID`, confidential with
 * a secret or public without), redirect `<origin>/approve/callback`. The access token it gets back
 * is checked by the very verifier `/mcp` uses (issuer, audience, signature, expiry): who approves
 * is proven the same way as who asks.
 */
import { createHash, randomBytes } from 'node:crypto';
import { isIPv6 } from 'node:net';
import type { OAuthTokenVerifier } from '@modelcontextprotocol/server';
import { identityOfAuth } from '../auth/resource-server.js';
import { SCOPES } from '../auth/settings.js';
import { sameSecret } from './seal.js';

export interface LoginEndpoints {
  authorizationEndpoint: string;
  tokenEndpoint: string;
}

export interface LoginOptions {
  endpoints: LoginEndpoints;
  client: { id: string; secret?: string | undefined };
  /** The page's origin: the redirect URI is `<origin>/approve/callback`. */
  origin: string;
  /** The resource (RFC 8707) the access token is asked for: the MCP audience. */
  audience: string;
  verifier: OAuthTokenVerifier;
  now?: () => number;
  fetchImpl?: typeof fetch;
}

/** One sign-in under way: what the callback needs, bound to the browser that started it. */
interface Transaction {
  verifier: string;
  approvalId: string;
  /** Whose it is for the per-address limit (loginAddressKey of the client's address). */
  addressKey: string;
  /** sha256 of the random value in the browser's login cookie. */
  binding: string;
  expiresAtMs: number;
}

export const LOGIN_COOKIE = 'skill_mcp_login';
/** A person has this long to sign in at the issuer. */
const LOGIN_MS = 600_000;
export const LOGIN_MINUTES = LOGIN_MS / 60_000;
/**
 * Security: how many sign-ins may be under way at once — for one approval link, from one client
 * address, and in all. A sign-in that would go over any of them is refused; none under way is ever
 * dropped to make room, so a flood (of one's own approval link, or from one address) cancels nobody
 * else's sign-in, and the map cannot grow without bound. A finished or expired sign-in frees its place.
 */
export const LOGIN_LIMITS = { perApproval: 16, perAddress: 64, total: 2_000 } as const;

export type LoginLimits = { perApproval: number; perAddress: number; total: number };

/** Why a sign-in was not started: which limit is full. */
export type LoginRefusal = 'approval' | 'address' | 'total';

/**
 * The key one client address is counted under: an IPv4 address as itself, an IPv6 address by its
 * /64 prefix. Security: one IPv6 host is usually handed a whole /64, so counting single addresses
 * would give it 2^64 separate allowances.
 */
export function loginAddressKey(address: string): string {
  if (!isIPv6(address)) return address;
  // A trailing dotted quad (`64:ff9b::1.2.3.4`) is the last two groups.
  const hex = address
    .toLowerCase()
    .replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (_, a, b, c, d) => [((+a << 8) | +b).toString(16), ((+c << 8) | +d).toString(16)].join(':'));
  const [head = '', tail = ''] = hex.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = hex.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

export type LoginOutcome =
  | { ok: true; approvalId: string; subject: string; scopes: string[] }
  | { ok: false; status: number; message: string };

const b64 = (bytes: Buffer): string => bytes.toString('base64url');
const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

export class OAuthLogin {
  readonly #options: LoginOptions;
  readonly #pending = new Map<string, Transaction>();
  readonly #now: () => number;
  readonly #limits: LoginLimits;
  readonly redirectUri: string;

  constructor(options: LoginOptions, limits: LoginLimits = LOGIN_LIMITS) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#limits = limits;
    this.redirectUri = `${options.origin}/approve/callback`;
  }

  /** How many sign-ins are under way (unexpired, unfinished). */
  get pending(): number {
    this.#prune(this.#now());
    return this.#pending.size;
  }

  #prune(now: number): void {
    for (const [state, t] of this.#pending) if (t.expiresAtMs <= now) this.#pending.delete(state);
  }

  /** The limit a new sign-in for this approval from this address would go over, if any. */
  #full(approvalId: string, addressKey: string): LoginRefusal | undefined {
    if (this.#pending.size >= this.#limits.total) return 'total';
    let forApproval = 0;
    let fromAddress = 0;
    for (const t of this.#pending.values()) {
      if (t.approvalId === approvalId) forApproval++;
      if (t.addressKey === addressKey) fromAddress++;
    }
    if (forApproval >= this.#limits.perApproval) return 'approval';
    if (fromAddress >= this.#limits.perAddress) return 'address';
    return undefined;
  }

  /**
   * Where to send the browser, and the cookie that binds the callback to it (SameSite=Lax: it must
   * survive the issuer's redirect back); or which limit is full, when no sign-in may start now.
   * `client`: the client's address as the HTTP front derives it (a trusted proxy's X-Forwarded-For).
   */
  start(approvalId: string, secure: boolean, client: string): { location: string; cookie: string } | { refused: LoginRefusal } {
    const now = this.#now();
    this.#prune(now);
    const addressKey = loginAddressKey(client);
    // Security: refused when full, never by evicting a sign-in someone else has under way.
    const refused = this.#full(approvalId, addressKey);
    if (refused !== undefined) return { refused };
    const state = b64(randomBytes(32));
    const verifier = b64(randomBytes(32));
    const binding = b64(randomBytes(32));
    this.#pending.set(state, { verifier, approvalId, addressKey, binding: sha256(binding), expiresAtMs: now + LOGIN_MS });
    const url = new URL(this.#options.endpoints.authorizationEndpoint);
    const params = {
      response_type: 'code',
      client_id: this.#options.client.id,
      redirect_uri: this.redirectUri,
      scope: `openid ${SCOPES.approve}`,
      state,
      resource: this.#options.audience,
      code_challenge: b64(createHash('sha256').update(verifier).digest()),
      code_challenge_method: 'S256',
    };
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
    const cookie = `${LOGIN_COOKIE}=${binding}; Path=/approve/callback; Max-Age=${LOGIN_MS / 1000}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
    return { location: url.href, cookie };
  }

  /** Finishes a sign-in from the callback's query and the browser's login cookie. */
  async finish(query: URLSearchParams, binding: string | undefined): Promise<LoginOutcome> {
    const state = query.get('state') ?? '';
    const transaction = this.#pending.get(state);
    // Security: single use — a replayed callback (or a code injected into another browser's
    // sign-in, login CSRF) finds no transaction, or not this browser's binding.
    this.#pending.delete(state);
    if (transaction === undefined || transaction.expiresAtMs <= this.#now())
      return { ok: false, status: 400, message: 'This sign-in is unknown or took too long. Open the approval link again.' };
    if (binding === undefined || !sameSecret(sha256(binding), transaction.binding))
      return { ok: false, status: 400, message: 'This sign-in was started in another browser. Open the approval link again in this one.' };
    const error = query.get('error');
    if (error !== null)
      return {
        ok: false,
        status: 403,
        message: `The identity provider refused the sign-in (${error.slice(0, 100)}). Nothing was approved.`,
      };
    const code = query.get('code');
    if (code === null || code === '')
      return { ok: false, status: 400, message: 'The identity provider sent no authorization code. Open the approval link again.' };
    const token = await this.#exchange(code, transaction.verifier);
    if (typeof token !== 'string') return token;
    try {
      const authInfo = await this.#options.verifier.verifyAccessToken(token);
      const identity = identityOfAuth(authInfo);
      if (identity === undefined)
        return { ok: false, status: 403, message: 'The access token names nobody (no sub). Nothing was approved.' };
      return { ok: true, approvalId: transaction.approvalId, subject: identity.subject, scopes: authInfo.scopes };
    } catch (error) {
      return {
        ok: false,
        status: 403,
        message: `The access token from the identity provider does not verify here: ${error instanceof Error ? error.message : 'invalid token'}. Nothing was approved.`,
      };
    }
  }

  async #exchange(code: string, verifier: string): Promise<string | { ok: false; status: number; message: string }> {
    const { client, endpoints } = this.#options;
    const form = new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: this.redirectUri,
      code_verifier: verifier,
      resource: this.#options.audience,
    });
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
    // RFC 6749 §2.3.1: each part form-urlencoded before the Basic encoding.
    if (client.secret !== undefined)
      headers['authorization'] =
        `Basic ${Buffer.from(`${encodeURIComponent(client.id)}:${encodeURIComponent(client.secret)}`).toString('base64')}`;
    else form.set('client_id', client.id);
    let response: Response;
    try {
      response = await (this.#options.fetchImpl ?? fetch)(endpoints.tokenEndpoint, {
        method: 'POST',
        headers,
        body: form,
        redirect: 'error',
        signal: AbortSignal.timeout(10_000),
      });
    } catch {
      return { ok: false, status: 502, message: 'The identity provider could not be reached to finish the sign-in. Try again shortly.' };
    }
    const answer = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    if (!response.ok || typeof answer['access_token'] !== 'string') {
      const why = typeof answer['error'] === 'string' ? answer['error'].slice(0, 100) : `HTTP ${response.status}`;
      return { ok: false, status: 403, message: `The identity provider did not issue a token (${why}). Nothing was approved.` };
    }
    return answer['access_token'];
  }
}
