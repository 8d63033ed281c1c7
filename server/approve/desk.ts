/**
 * @module The approval desk (docs/hosting.md, "The approval page"): the pending approvals and the
 * `/approve/…` pages over them. `skill_run` opens a record for a preview and hands out its link; a
 * person signs in (at the OAuth issuer, or with the static token), sees exactly what would run and
 * approves or denies it; `skill_run` then runs it once, or refuses. Who may decide: the person who
 * asked (same `sub`), or someone holding `skills:approve`. Every refusal says why and is logged.
 */
import type { Minted } from '../../shared/protocol.js';
import { SCOPES, SCOPES_SUPPORTED } from '../auth/settings.js';
import { LOGIN_COOKIE, LOGIN_MINUTES, type LoginRefusal, type OAuthLogin } from './login.js';
import { approvalPage, bearerLoginPage, messagePage } from './page.js';
import { Sealer, SESSION_MS, type Session } from './seal.js';
import { ApprovalStore, logId, type PendingApproval, type Requester } from './store.js';

export const SESSION_COOKIE = 'skill_mcp_approver';
/** Security: a form post is a few hundred bytes; nothing bigger is read. */
export const APPROVAL_BODY_BYTES = 16 * 1024;
const PREFIX = '/approve/';

export interface DeskOptions {
  origin: string;
  /** With OAuth: the sign-in at the issuer. */
  login?: OAuthLogin | undefined;
  /** With the static token: checks a token typed into the page. */
  bearer?: ((token: string) => boolean) | undefined;
  warn: (message: string) => void;
  store?: ApprovalStore;
  sealer?: Sealer;
}

/** The `Cookie` header's value for `name`, if any. */
export function cookieValue(header: string | null, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return rest.join('=');
  }
  return undefined;
}

export class ApprovalDesk {
  readonly store: ApprovalStore;
  readonly #sealer: Sealer;
  readonly #options: DeskOptions;
  readonly #secure: boolean;
  /** The limits that refused a sign-in since one was last let through (so a flood is logged once). */
  readonly #refusing = new Set<LoginRefusal>();

  constructor(options: DeskOptions) {
    this.#options = options;
    this.store = options.store ?? new ApprovalStore();
    this.#sealer = options.sealer ?? new Sealer();
    this.#secure = options.origin.startsWith('https:');
  }

  /** A record for a preview, or undefined when too many are pending. */
  open(minted: Minted, requester: Requester): PendingApproval | undefined {
    return this.store.open(minted, requester);
  }

  urlFor(record: PendingApproval): string {
    return `${this.#options.origin}${PREFIX}${record.id}`;
  }

  /** Whether a path is the desk's: `/approve/callback` and `/approve/<anything>` (a bad id gets a page saying so). */
  has(pathname: string): boolean {
    return pathname.startsWith(PREFIX) && pathname.length > PREFIX.length && !pathname.slice(PREFIX.length).includes('/');
  }

  /** `client`: the client's address as the HTTP front derives it (a configured proxy's X-Forwarded-For believed, nobody else's). */
  async handle(request: Request, client: string): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === `${PREFIX}callback`) {
      if (request.method !== 'GET') return messagePage(405, 'Method not allowed', 'The sign-in callback is a GET.', { allow: 'GET' });
      return this.#callback(url.searchParams, request.headers);
    }
    // The id is base64url: anything percent-encoded is not one of ours (store.get checks the shape).
    const record = this.store.get(url.pathname.slice(PREFIX.length));
    if (record === undefined) {
      return messagePage(
        404,
        'Unknown approval link',
        'This link is not one this server issued (or the server restarted since). Nothing was approved: ask for the run again to get a new link.',
      );
    }
    if (request.method === 'GET' || request.method === 'HEAD') {
      const session = this.#sealer.open(cookieValue(request.headers.get('cookie'), SESSION_COOKIE));
      return session ? this.#show(record, session) : this.#signIn(record, client);
    }
    if (request.method === 'POST') return this.#post(record, request);
    return messagePage(405, 'Method not allowed', 'Open the link in a browser.', { allow: 'GET, POST' });
  }

  /** Security: only the person who asked, or an approver, sees the preview (its arguments may be private). */
  #mayDecide(session: Session, record: PendingApproval): boolean {
    const requester = record.requester.subject === undefined ? session.sub === undefined : session.sub === record.requester.subject;
    return requester || session.scopes.includes(SCOPES.approve);
  }

  #who(session: Session): string {
    return session.sub ?? 'static-token';
  }

  #refuse(session: Session, record: PendingApproval, what: string): Response {
    this.#options.warn(
      `approval: refused ${this.#who(session)} ${what} approval ${logId(record.id)}: not the requester and no ${SCOPES.approve}`,
    );
    return messagePage(
      403,
      'Not yours to approve',
      `You are signed in as ${this.#who(session)}. Only the person who asked for this run, or someone holding the ${SCOPES.approve} scope, may see and decide it. The attempt was logged.`,
    );
  }

  /** The state a record is in, as a page, or undefined when it is still pending and live. */
  #closed(record: PendingApproval, signedIn: boolean): Response | undefined {
    if (record.status !== 'pending') {
      // Who decided, and how, only for someone who may see the run.
      const how = !signedIn
        ? 'decided'
        : record.status === 'denied'
          ? 'denied'
          : record.status === 'used'
            ? 'approved, and the run was sent'
            : 'approved';
      return messagePage(
        409,
        'Already decided',
        `This run was already ${how}${signedIn && record.approver ? ` by ${record.approver}` : ''}. A link decides once.`,
      );
    }
    if (this.store.expired(record))
      return messagePage(
        410,
        'Link expired',
        'This approval link has expired, and with it the run it would have approved. Nothing ran: ask for the run again.',
      );
    return undefined;
  }

  #sessionCookie(session: Session): string {
    return `${SESSION_COOKIE}=${this.#sealer.seal(session)}; Path=/approve; Max-Age=${SESSION_MS / 1000}; HttpOnly; SameSite=Strict${this.#secure ? '; Secure' : ''}`;
  }

  #show(record: PendingApproval, session: Session, headers: Record<string, string> = {}): Response {
    if (!this.#mayDecide(session, record)) return this.#refuse(session, record, 'viewing');
    const closed = this.#closed(record, true);
    if (closed) return closed;
    return approvalPage(
      {
        id: record.id,
        willRun: record.minted.willRun,
        hash: record.hash,
        csrf: this.#sealer.csrf(session, record.id),
        requester: record.requester.subject ?? "the static token's holder",
        viewer: this.#who(session),
        expiresAt: record.minted.expiresAt,
      },
      headers,
    );
  }

  #signIn(record: PendingApproval, client: string): Response {
    const closed = this.#closed(record, false);
    if (closed) return closed;
    if (this.#options.login) {
      const started = this.#options.login.start(record.id, this.#secure, client);
      if ('refused' in started) return this.#tooManySignIns(record, started.refused);
      this.#refusing.clear();
      const { location, cookie } = started;
      return new Response(null, {
        status: 302,
        headers: { location, 'set-cookie': cookie, 'cache-control': 'no-store', 'referrer-policy': 'same-origin' },
      });
    }
    return bearerLoginPage(record.id);
  }

  /**
   * A sign-in refused because a limit is full (login.ts, LOGIN_LIMITS). Logged at the first refusal
   * of each limit since a sign-in was last let through, so a flood is one line, not one per request.
   */
  #tooManySignIns(record: PendingApproval, limit: LoginRefusal): Response {
    if (!this.#refusing.has(limit)) {
      this.#refusing.add(limit);
      const which =
        limit === 'approval' ? `approval ${logId(record.id)}` : limit === 'address' ? 'one client address' : 'this server in all';
      this.#options.warn(`approval: refusing new sign-ins: too many under way for ${which} (none under way was cancelled)`);
    }
    const why =
      limit === 'approval'
        ? 'Too many sign-ins were started for this approval link and not finished.'
        : limit === 'address'
          ? 'Too many sign-ins were started from your network address and not finished.'
          : 'Too many sign-ins are under way on this server.';
    return messagePage(
      429,
      'Too many sign-ins',
      `${why} Finish a sign-in you already started (in the browser you started it in), or wait up to ${LOGIN_MINUTES} minutes and open the link again. Nothing was approved.`,
      { 'retry-after': '60' },
    );
  }

  /** After the issuer: the session is made and the page shown right here (a redirect would lose the SameSite=Strict cookie). */
  async #callback(query: URLSearchParams, headers: Headers): Promise<Response> {
    const login = this.#options.login;
    if (!login) return messagePage(404, 'Not found', 'This server signs approvers in with its bearer token, not at an identity provider.');
    const outcome = await login.finish(query, cookieValue(headers.get('cookie'), LOGIN_COOKIE));
    if (!outcome.ok) {
      this.#options.warn(`approval: sign-in failed: ${outcome.message}`);
      return messagePage(outcome.status, 'Sign-in failed', outcome.message);
    }
    const record = this.store.get(outcome.approvalId);
    if (record === undefined)
      return messagePage(
        404,
        'Unknown approval link',
        'The run you signed in for is no longer pending here. Nothing was approved: ask for the run again.',
      );
    const session = this.#sealer.newSession(outcome.subject, outcome.scopes);
    const clearLogin = `${LOGIN_COOKIE}=; Path=/approve/callback; Max-Age=0; HttpOnly; SameSite=Lax${this.#secure ? '; Secure' : ''}`;
    const response = this.#show(record, session);
    response.headers.append('set-cookie', this.#sessionCookie(session));
    response.headers.append('set-cookie', clearLogin);
    return response;
  }

  async #post(record: PendingApproval, request: Request): Promise<Response> {
    // Security: a form posted from any other site is refused before it is read (the CSRF token is the second lock).
    if (request.headers.get('origin') !== this.#options.origin) {
      this.#options.warn(`approval: refused a form for approval ${logId(record.id)} posted from another origin`);
      return messagePage(403, 'Refused', 'This form was not posted from the approval page itself. Nothing was decided.');
    }
    const form = new URLSearchParams(await request.text());
    if (form.get('login') === 'bearer') return this.#bearerLogin(record, form.get('bearer') ?? '');
    const session = this.#sealer.open(cookieValue(request.headers.get('cookie'), SESSION_COOKIE));
    if (session === undefined) {
      return this.#options.login
        ? messagePage(
            401,
            'Signed out',
            'Your sign-in has expired (or cookies are blocked). Open the approval link again; nothing was decided.',
          )
        : bearerLoginPage(record.id, 'Your sign-in has expired. Sign in again; nothing was decided.');
    }
    if (!this.#sealer.csrfValid(session, record.id, form.get('csrf'))) {
      this.#options.warn(
        `approval: refused a form for approval ${logId(record.id)} from ${this.#who(session)} with a missing or wrong CSRF token`,
      );
      return messagePage(
        403,
        'Refused',
        'This form is not the one the approval page gave you (its CSRF token is missing or wrong). Nothing was decided: open the link again.',
      );
    }
    if (!this.#mayDecide(session, record)) return this.#refuse(session, record, 'deciding');
    const closed = this.#closed(record, true);
    if (closed) return closed;
    // Security: the decision names the preview it was made on; the record's preview never changes, so a mismatch is a forged form.
    if (form.get('h') !== record.hash)
      return messagePage(409, 'Refused', 'This form was made for another preview. Nothing was decided: open the link again.');
    const decision = form.get('decision');
    if (decision !== 'approve' && decision !== 'deny')
      return messagePage(400, 'Refused', 'The form says neither approve nor deny. Nothing was decided.');
    const approver = this.#who(session);
    const outcome = this.store.decide(record, decision === 'approve' ? 'approved' : 'denied', approver);
    if (outcome !== 'ok') return this.#closed(record, true) ?? messagePage(409, 'Already decided', 'This run was already decided.');
    this.#options.warn(
      `approval: ${logId(record.id)} ${decision === 'approve' ? 'approved' : 'denied'} by ${approver} (${record.minted.willRun.skill}/${record.minted.willRun.argv[0] ?? ''})`,
    );
    return decision === 'approve'
      ? messagePage(
          200,
          'Approved',
          `Approved. ${record.minted.willRun.skill}/${record.minted.willRun.argv[0] ?? ''} runs once, as shown; you can close this page.`,
        )
      : messagePage(200, 'Denied', 'Denied. Nothing runs; you can close this page.');
  }

  #bearerLogin(record: PendingApproval, token: string): Response {
    if (!this.#options.bearer)
      return messagePage(400, 'Refused', 'This server signs approvers in at its identity provider: open the link again.');
    if (!this.#options.bearer(token)) {
      this.#options.warn(`approval: a wrong bearer token was typed into the page for approval ${logId(record.id)}`);
      return bearerLoginPage(record.id, 'That is not the token this server was configured with.');
    }
    // The static token's holder is the one principal of this server: every scope, as on /mcp.
    const session = this.#sealer.newSession(undefined, [...SCOPES_SUPPORTED]);
    const response = this.#show(record, session);
    response.headers.append('set-cookie', this.#sessionCookie(session));
    return response;
  }
}
