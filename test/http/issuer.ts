/**
 * @module A local OAuth authorization server for the HTTP suites, made in the test: signing keys
 * from `jose` (generateKeyPair), RFC 8414 metadata, a JWKS that can be rotated, and a token
 * endpoint for the `client_credentials` grant (client_secret_basic, RFC 8707 `resource` → `aud`)
 * so the SDK client's own OAuth support can be driven end to end, and the `authorization_code` grant
 * with PKCE (S256) behind a one-field login form at `/authorize` (the person types a user name; no
 * password — it is a test), for the approval page's sign-in. It listens on 127.0.0.1 only.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

export interface SigningKey {
  kid: string;
  alg: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

export interface TestClient {
  secret: string;
  /** The scopes this client may be given; a request for more gets only these. */
  scopes: string[];
  /** Claims added to every token issued to it (sub defaults to the client id). */
  claims?: Record<string, unknown>;
  /** For the authorization code grant: the redirect URIs registered for it (exact match). */
  redirectUris?: string[];
  /** A public client (no secret at the token endpoint; PKCE only). */
  public?: boolean;
}

/** A person who can sign in at `/authorize` (authorization code grant): the scopes they may be given. */
export interface TestUser {
  scopes: string[];
  claims?: Record<string, unknown>;
}

export interface TestIssuer {
  issuer: string;
  /** Signs `payload` with the issuer's current key (or `key`), defaults: iss, iat, exp in 5 min. */
  mint(payload: JWTPayload, options?: { key?: SigningKey; header?: Record<string, unknown>; omitDefaults?: boolean }): Promise<string>;
  /** Replaces the published keys with a fresh one, which signs from now on. */
  rotate(): Promise<SigningKey>;
  current(): SigningKey;
  /** How many times the JWKS was fetched. */
  jwksFetches(): number;
  /** Tokens the token endpoint issued. */
  issued(): string[];
  /** Sign-ins completed at /authorize, by user name. */
  logins(): string[];
  close(): Promise<void>;
}

let serial = 0;
export async function makeKey(alg = 'RS256'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const kid = `k${++serial}-${alg}`;
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

function html(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(`<!doctype html><html><head><meta charset="utf-8"><title>Test issuer</title></head><body>${body}</body></html>`);
}

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

interface Grant {
  clientId: string;
  redirectUri: string;
  challenge: string;
  resource: string;
  scope: string;
  sub: string;
  claims: Record<string, unknown>;
}

export async function startIssuer(
  clients: Record<string, TestClient> = {},
  options: { path?: string; users?: Record<string, TestUser> } = {},
): Promise<TestIssuer> {
  let key = await makeKey();
  let fetches = 0;
  const issued: string[] = [];
  const logins: string[] = [];
  const users = options.users ?? {};
  /** Sign-ins shown a form, by their transaction id; codes handed out, by code (each used once). */
  const started = new Map<string, URLSearchParams>();
  const codes = new Map<string, Grant>();
  let issuer = '';
  const mint = async (
    payload: JWTPayload,
    opts: { key?: SigningKey; header?: Record<string, unknown>; omitDefaults?: boolean } = {},
  ): Promise<string> => {
    const k = opts.key ?? key;
    const now = Math.floor(Date.now() / 1000);
    const claims = opts.omitDefaults ? payload : { iss: issuer, iat: now, exp: now + 300, ...payload };
    return new SignJWT(claims).setProtectedHeader({ alg: k.alg, kid: k.kid, typ: 'at+jwt', ...opts.header }).sign(k.privateKey);
  };
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const path = options.path ?? '';
    if (req.method === 'GET' && url.pathname === `/.well-known/oauth-authorization-server${path}`) {
      return json(res, 200, {
        issuer,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        authorization_endpoint: `${issuer}/authorize`,
        response_types_supported: ['code'],
        grant_types_supported: ['client_credentials', 'authorization_code'],
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'none'],
        code_challenge_methods_supported: ['S256'],
        scopes_supported: ['skills:read', 'skills:run', 'skills:approve'],
      });
    }
    if (req.method === 'GET' && url.pathname === `${path}/jwks`) {
      fetches++;
      return json(res, 200, { keys: [key.publicJwk] });
    }
    if (req.method === 'GET' && url.pathname === `${path}/authorize`) {
      const q = url.searchParams;
      const client = clients[q.get('client_id') ?? ''];
      if (!client?.redirectUris?.includes(q.get('redirect_uri') ?? ''))
        return html(res, 400, '<p id="error">unknown client or redirect_uri</p>');
      if (q.get('response_type') !== 'code' || q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge'))
        return html(res, 400, '<p id="error">code + S256 PKCE required</p>');
      const tx = randomBytes(16).toString('hex');
      started.set(tx, q);
      return html(
        res,
        200,
        `<form method="post" action="${path}/authorize"><input type="hidden" name="tx" value="${tx}"><label>User <input id="username" name="username"></label> <button id="login" type="submit">Sign in</button></form>`,
      );
    }
    if (req.method === 'POST' && url.pathname === `${path}/authorize`) {
      const form = new URLSearchParams(await body(req));
      const q = started.get(form.get('tx') ?? '');
      started.delete(form.get('tx') ?? '');
      const name = form.get('username') ?? '';
      const user = users[name];
      if (!q) return html(res, 400, '<p id="error">unknown sign-in</p>');
      if (!user) return html(res, 403, `<p id="error">no user ${escapeHtml(name)}</p>`);
      const asked = (q.get('scope') ?? '').split(' ').filter((s) => s !== '' && s !== 'openid');
      const code = randomBytes(16).toString('hex');
      codes.set(code, {
        clientId: q.get('client_id')!,
        redirectUri: q.get('redirect_uri')!,
        challenge: q.get('code_challenge')!,
        resource: q.get('resource') ?? '',
        // Like real providers: the scopes asked for that this person holds, plus their everyday ones.
        scope: [...new Set([...user.scopes.filter((s) => asked.includes(s) || s !== 'skills:approve')])].join(' '),
        sub: name,
        claims: user.claims ?? {},
      });
      logins.push(name);
      const back = new URL(q.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', q.get('state') ?? '');
      res.writeHead(302, { location: back.href });
      return res.end();
    }
    if (req.method === 'POST' && url.pathname === `${path}/token`) {
      const form = new URLSearchParams(await body(req));
      const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
      const [id, secret] = basic
        ? Buffer.from(basic[1]!, 'base64').toString('utf8').split(':').map(decodeURIComponent)
        : [form.get('client_id') ?? undefined];
      const client = id !== undefined ? clients[id] : undefined;
      if (!client || (client.public ? basic !== null : client.secret !== secret)) return json(res, 401, { error: 'invalid_client' });
      if (form.get('grant_type') === 'authorization_code') {
        const grant = codes.get(form.get('code') ?? '');
        codes.delete(form.get('code') ?? '');
        const challenge = createHash('sha256')
          .update(form.get('code_verifier') ?? '')
          .digest('base64url');
        if (!grant || grant.clientId !== id || grant.redirectUri !== form.get('redirect_uri') || grant.challenge !== challenge)
          return json(res, 400, { error: 'invalid_grant' });
        const token = await mint({
          sub: grant.sub,
          client_id: id,
          aud: form.get('resource') ?? grant.resource,
          scope: grant.scope,
          ...grant.claims,
        });
        issued.push(token);
        return json(res, 200, { access_token: token, token_type: 'Bearer', expires_in: 300, scope: grant.scope });
      }
      if (form.get('grant_type') !== 'client_credentials') return json(res, 400, { error: 'unsupported_grant_type' });
      const resource = form.get('resource');
      if (!resource) return json(res, 400, { error: 'invalid_target', error_description: 'resource is required' });
      const asked = (form.get('scope') ?? client.scopes.join(' ')).split(' ').filter((s) => s !== '');
      const scope = asked.filter((s) => client.scopes.includes(s)).join(' ');
      const token = await mint({ sub: id, client_id: id, aud: resource, scope, ...client.claims });
      issued.push(token);
      return json(res, 200, { access_token: token, token_type: 'Bearer', expires_in: 300, scope });
    }
    json(res, 404, { error: 'not_found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}${options.path ?? ''}`;
  return {
    issuer,
    mint,
    async rotate() {
      key = await makeKey(key.alg);
      return key;
    },
    current: () => key,
    jwksFetches: () => fetches,
    issued: () => issued,
    logins: () => logins,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // A browser's keep-alive connections would hold close() open.
        server.closeAllConnections();
      }),
  };
}

/** A free loopback port (the audience must name the port before the server starts). */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** An unsigned token (`alg: none`), as an attacker would write one. */
export function unsignedToken(payload: JWTPayload): string {
  const enc = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${enc({ alg: 'none', typ: 'JWT' })}.${enc(payload)}.`;
}
