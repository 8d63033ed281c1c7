/**
 * @module A local OAuth authorization server for the HTTP suites, made in the test: signing keys
 * from `jose` (generateKeyPair), RFC 8414 metadata, a JWKS that can be rotated, and a token
 * endpoint for the `client_credentials` grant (client_secret_basic, RFC 8707 `resource` → `aud`)
 * so the SDK client's own OAuth support can be driven end to end. It listens on 127.0.0.1 only.
 */
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

export async function startIssuer(clients: Record<string, TestClient> = {}, options: { path?: string } = {}): Promise<TestIssuer> {
  let key = await makeKey();
  let fetches = 0;
  const issued: string[] = [];
  let issuer = '';
  const mint = async (payload: JWTPayload, opts: { key?: SigningKey; header?: Record<string, unknown>; omitDefaults?: boolean } = {}): Promise<string> => {
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
        grant_types_supported: ['client_credentials'],
        token_endpoint_auth_methods_supported: ['client_secret_basic'],
        scopes_supported: ['skills:read', 'skills:run', 'skills:approve'],
      });
    }
    if (req.method === 'GET' && url.pathname === `${path}/jwks`) {
      fetches++;
      return json(res, 200, { keys: [key.publicJwk] });
    }
    if (req.method === 'POST' && url.pathname === `${path}/token`) {
      const form = new URLSearchParams(await body(req));
      const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
      const [id, secret] = basic ? Buffer.from(basic[1]!, 'base64').toString('utf8').split(':').map(decodeURIComponent) : [];
      const client = id !== undefined ? clients[id] : undefined;
      if (!client || client.secret !== secret) return json(res, 401, { error: 'invalid_client' });
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
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
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
