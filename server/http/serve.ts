/**
 * @module The front over Streamable HTTP at `/mcp`: both protocol eras from one endpoint via the
 * SDK's `createMcpHandler` (2026-07-28 per-request, 2025-era stateless fallback). Stateless: a
 * fresh `McpServer` per request from the same factory as stdio, so any replica answers any
 * request and every tool the factory registers is served here too.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createMcpHandler, type McpHttpHandler } from '@modelcontextprotocol/server';
import { createServerFactory, skillReadsFor } from '../front.js';
import type { RunnerLinkOptions } from '../runner-link.js';
import { servingLine, startFront } from '../start.js';
import { bearerTokenCheck, oauthBearer, staticBearer, type Authenticate } from './auth.js';
import { APPROVAL_BODY_BYTES, ApprovalDesk } from '../approve/desk.js';
import { OAuthLogin } from '../approve/login.js';
import { createJwtVerifier } from '../auth/jwt-verifier.js';
import { discoverIssuer } from '../auth/discovery.js';
import { createResourceServer, type ResourceServer } from '../auth/resource-server.js';
import { describeListenError } from './listen-error.js';
import { healthRoutes } from './health.js';
import { lineWriter, type LineWriter } from '../../shared/log-line.js';
import { identityOfAuth } from '../auth/resource-server.js';
import { guardRequest, jsonRpcError, type GuardOptions } from './guard.js';
import { readMcpBody, requestPath, sendWebResponse, toMcpRequest, toWebRequest, webHeaders } from './node-adapter.js';
import { answerFast, fastRequest } from './fast-path.js';
import { bindsLoopbackOnly, HTTP_USAGE, MCP_PATH, readHttpOptions, type HttpOptions } from './options.js';
import { createInFlight, shutdownGracefully, type InFlight } from './shutdown.js';
import { HttpMetrics, methodOfRequest } from './metrics.js';
import { serveMetrics, type MetricsEndpoint } from './metrics-endpoint.js';
import { AddressCounts, clientAddress, normaliseAddress, overCapMessage } from './address-cap.js';

type Warn = (message: string) => void;

const AUTH_REQUIRED_MESSAGE =
  'skill_run over HTTP needs an authenticated client, and this server has no bearer token or OAuth issuer configured: whoever reaches its port could ask for a run and approve it too. ' +
  'The owner must set SKILL_MCP_HTTP_TOKEN_FILE (or SKILL_MCP_HTTP_TOKEN), or SKILL_MCP_OAUTH_ISSUER and SKILL_MCP_OAUTH_AUDIENCE, and restart (docs/http.md). Reading skills still works.';

/** Answers for the paths besides /mcp (OAuth metadata, health), or undefined for /mcp itself. */
export type OtherRoutes = { has(pathname: string): boolean; answer(pathname: string, method: string): Promise<Response> | Response };

/** What a request reads the skills through, for its auth (front.ts): shared by the SDK's factory and the fast path. */
type ReadsFor = ReturnType<typeof skillReadsFor>;

/**
 * The request listener: guards on the headers, the auth gate, the capped body, then the fast path
 * (undefined `readsFor`: off) or the SDK handler, a streamed response.
 */
function createListener(
  handler: McpHttpHandler,
  readsFor: ReadsFor | undefined,
  options: HttpOptions,
  inFlight: InFlight,
  state: { stopping: boolean },
  warn: Warn,
  cap: AddressCap | undefined,
  authenticate: Authenticate | undefined,
  routes: OtherRoutes,
  log: LineWriter,
  metrics?: HttpMetrics,
  desk?: ApprovalDesk,
) {
  const guard: GuardOptions = {
    allowedHosts: options.allowedHosts,
    allowedOrigins: options.allowedOrigins,
    otherPaths: (pathname) => routes.has(pathname) || desk?.has(pathname) === true,
  };
  const trusted: ReadonlySet<string> = cap?.trusted ?? new Set(options.trustedProxies);
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // An open subscriptions/listen stream lasts as long as the client wants: not a request to wait for at shutdown.
    if (req.headers['mcp-method'] !== 'subscriptions/listen') inFlight.track(res);
    const startedMs = performance.now();
    // Refused on its headers: counted without a method, since its body is never read.
    let method = 'unread';
    let who: string | undefined;
    if (metrics) res.once('close', () => metrics.request(method, res.statusCode, (performance.now() - startedMs) / 1000));
    if (log.format === 'json')
      res.once('close', () => log.event('access', accessFields(req, routes, res.statusCode, startedMs, who, desk)));
    if (state.stopping) res.setHeader('connection', 'close');
    const aborter = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) aborter.abort();
    });
    try {
      // Through a trusted proxy the connection is the proxy's: the cap counts the client's requests.
      if (cap?.trusted.has(normaliseAddress(req.socket.remoteAddress ?? ''))) {
        const client = clientAddress(req.socket.remoteAddress ?? '', req.headers['x-forwarded-for'], cap.trusted);
        if (!cap.counts.tryAdd(client)) {
          res.setHeader('connection', 'close');
          return await sendWebResponse(res, jsonRpcError(429, -32000, overCapMessage(cap.counts.max), { 'retry-after': '1' }));
        }
        res.once('close', () => cap.counts.remove(client));
      }
      const headers = webHeaders(req);
      const path = requestPath(req);
      const { pathname } = path;
      const refused = guardRequest(pathname, headers, guard);
      // Refused on its headers: the body is never buffered (Node discards it after the answer, under
      // the request deadline, so the client still reads the refusal instead of a broken pipe).
      if (refused) return await sendWebResponse(res, refused);
      // The approval page: a browser's, signed in by the page itself (never by the /mcp bearer gate); its small body is read under its own cap.
      if (desk?.has(pathname)) {
        const request = await toWebRequest(req, headers, APPROVAL_BODY_BYTES, aborter.signal);
        // Its sign-ins are limited per client: the address the cap would count (a configured proxy's X-Forwarded-For believed, nobody else's).
        const client = clientAddress(req.socket.remoteAddress ?? '', req.headers['x-forwarded-for'], trusted);
        return await sendWebResponse(res, request instanceof Response ? request : await desk.handle(request, client));
      }
      if (pathname !== MCP_PATH) return await sendWebResponse(res, await routes.answer(pathname, req.method ?? 'GET'));
      // Security: with a token or an issuer configured, nothing below this line runs for an
      // unauthenticated request (and its body is never read).
      const authInfo = authenticate ? await authenticate(headers) : undefined;
      if (authInfo instanceof Response) return await sendWebResponse(res, authInfo);
      who = identityOfAuth(authInfo)?.subject ?? (authInfo ? 'static-token' : undefined);
      const read = await readMcpBody(req, options.maxBodyBytes);
      if (read instanceof Response) return await sendWebResponse(res, read);
      if (metrics) method = methodOfRequest(headers, read.parsedBody);
      // Past the gate and the cap: a plain read or list is answered here, anything else by the SDK.
      const fast = readsFor && req.method === 'POST' ? fastRequest(headers, read.parsedBody) : undefined;
      if (fast && readsFor) {
        const answer = await answerFast(readsFor, authInfo, fast);
        if (answer) {
          metrics?.fastPath(fast.method);
          // As the SDK path: a client gone before its answer is ready is sent nothing.
          if (aborter.signal.aborted) return;
          res.writeHead(200, {
            'content-type': 'application/json',
            'content-length': String(answer.reduce((total, piece) => total + piece.length, 0)),
          });
          // Headers and every piece in one writev: corked until the end.
          res.cork();
          for (const piece of answer) res.write(piece);
          res.end();
          return;
        }
      }
      const mcp = toMcpRequest(req, headers, read, aborter.signal, path);
      // Past the gate: the verified caller (its identity, or the static token's hash) reaches the tools.
      await sendWebResponse(
        res,
        await handler.fetch(mcp.request, {
          ...(authInfo ? { authInfo } : {}),
          ...(mcp.parsedBody !== undefined ? { parsedBody: mcp.parsedBody } : {}),
        }),
      );
    } catch (error) {
      // A client that went away mid-request is normal; anything else is ours and logged without detail leaking out.
      if (!aborter.signal.aborted) warn(`http: ${error instanceof Error ? error.message : String(error)}`);
      if (!res.headersSent) await sendWebResponse(res, jsonRpcError(500, -32603, 'Internal error'));
      else res.destroy();
    }
  };
}

/** The per-address cap and the proxies whose X-Forwarded-For is believed. */
interface AddressCap {
  counts: AddressCounts;
  trusted: ReadonlySet<string>;
}

/** How long a refused or timed-out socket may take to flush its few bytes before it is destroyed anyway. */
const LINGER_MS = 1_000;

/**
 * Sends a last raw answer and closes the socket for good. Security: destroyed, not only ended — a
 * client that never closes its side (nor reads) would otherwise keep the socket half-open, and its
 * place under SKILL_MCP_HTTP_MAX_CONNECTIONS, forever: enough of them and nobody is served.
 */
function hangUp(socket: Duplex, status: string, body = ''): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const linger = setTimeout(() => socket.destroy(), LINGER_MS);
  linger.unref();
  socket.once('close', () => clearTimeout(linger));
  const type = body === '' ? '' : 'content-type: application/json\r\n';
  socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\n${type}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, () =>
    socket.destroy(),
  );
}

/** Refuses a direct client's connection over the per-address cap, before a byte of it is read. */
function capConnections(server: Server, cap: AddressCap): void {
  server.on('connection', (socket: Socket) => {
    const peer = normaliseAddress(socket.remoteAddress ?? '');
    if (cap.trusted.has(peer)) return; // counted per request, by the client it names
    if (!cap.counts.tryAdd(peer)) {
      hangUp(
        socket,
        '429 Too Many Requests',
        JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: overCapMessage(cap.counts.max) } }),
      );
      return;
    }
    socket.once('close', () => cap.counts.remove(peer));
  });
}

/**
 * One access-log record. Security: the path is logged only when it is one we serve (anything else
 * is `other`: a client could put a secret in a path), never the query string or a header value;
 * the identity is the verified `sub`, never the token. `traceparent` is passed through when well formed.
 */
function accessFields(
  req: IncomingMessage,
  routes: OtherRoutes,
  status: number,
  startedMs: number,
  who: string | undefined,
  desk?: ApprovalDesk,
): Record<string, unknown> {
  const { pathname } = requestPath(req);
  const traceparent = req.headers['traceparent'];
  return {
    method: /^[A-Z]{1,10}$/.test(req.method ?? '') ? req.method : 'other',
    // Security: an approval page's path holds its id, which opens it: logged as the route only.
    path: desk?.has(pathname)
      ? pathname === '/approve/callback'
        ? pathname
        : '/approve/:id'
      : pathname === MCP_PATH || routes.has(pathname)
        ? pathname
        : 'other',
    status,
    duration_s: Number(((performance.now() - startedMs) / 1000).toFixed(4)),
    ...(who !== undefined ? { identity: who } : {}),
    ...(typeof traceparent === 'string' && TRACEPARENT.test(traceparent) ? { traceparent } : {}),
  };
}

/** W3C Trace Context `traceparent` (version 00). */
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** Health, and the OAuth metadata paths (when OAuth is on); any other path is 404 by the guard. */
function otherRoutes(resourceServer: ResourceServer | undefined, health: ReturnType<typeof healthRoutes>): OtherRoutes {
  return {
    has: (pathname) => health.paths.has(pathname) || resourceServer?.metadata(pathname, 'HEAD') !== undefined,
    answer: (pathname, method) =>
      health.paths.has(pathname)
        ? health.answer(pathname, method)
        : (resourceServer?.metadata(pathname, method) ?? jsonRpcError(404, -32000, `Not found: the MCP endpoint is ${MCP_PATH}`)),
  };
}

function configure(server: Server, options: HttpOptions): void {
  // Security: slow clients (slowloris) cannot hold a socket forever while sending headers or body,
  // and the number of open sockets is bounded.
  server.headersTimeout = options.headersTimeoutMs;
  server.requestTimeout = options.requestTimeoutMs;
  server.keepAliveTimeout = options.keepAliveTimeoutMs;
  server.maxConnections = options.maxConnections;
  server.maxHeadersCount = 100;
}

export interface RunningHttpFront {
  url: string;
  close(): Promise<void>;
}

/** True when the arguments ask for the HTTP usage. */
export function wantsHelp(args: string[]): boolean {
  return args.includes('--help') || args.includes('-h');
}

/**
 * Starts the HTTP front and resolves once it is listening; SIGTERM/SIGINT stop it gracefully.
 * `droppedToUid` is the unprivileged uid a root launcher already switched
 * to (it explains a refused low port). Rejects, with a message saying why and what to do, when the
 * port cannot be listened on.
 */
export async function serveOverHttp(options: {
  args: string[];
  bundledSkills: string;
  env: NodeJS.ProcessEnv;
  runner?: RunnerLinkOptions;
  http?: HttpOptions;
  droppedToUid?: number;
  requestStateKey?: Buffer | undefined;
}): Promise<RunningHttpFront | undefined> {
  if (wantsHelp(options.args)) {
    process.stdout.write(`${HTTP_USAGE}\n`);
    return undefined;
  }
  // Read before a root launcher drops privileges (the token file may be readable by root only).
  const http = options.http ?? readHttpOptions(options.args, options.env);
  const log = lineWriter('front', 'skill-mcp', http.logFormat);
  const warn: Warn = (message) => log.say(message);
  // The issuer's metadata is fetched before anything is served: a front that cannot check tokens refuses to start.
  let resourceServer: ResourceServer | undefined;
  let login: OAuthLogin | undefined;
  if (http.oauth) {
    const metadata = await discoverIssuer(http.oauth.issuer);
    const verifier = createJwtVerifier(http.oauth, metadata);
    resourceServer = createResourceServer(http.oauth, verifier);
    warn(`oauth: tokens from ${http.oauth.issuer} for ${http.oauth.audience} (keys: ${metadata.jwksUri})`);
    if (http.approval?.client) {
      const { authorizationEndpoint, tokenEndpoint } = metadata;
      if (authorizationEndpoint === undefined || tokenEndpoint === undefined) {
        throw new Error(
          `the approval page signs people in at ${http.oauth.issuer}, but its metadata (${metadata.foundAt}) names no usable authorization_endpoint and token_endpoint (https, or http on loopback); unset SKILL_MCP_APPROVAL_URL or fix the issuer`,
        );
      }
      login = new OAuthLogin({
        endpoints: { authorizationEndpoint, tokenEndpoint },
        client: http.approval.client,
        origin: http.approval.origin,
        audience: http.oauth.audience,
        verifier,
      });
    }
  }
  const authenticate = resourceServer ? oauthBearer(resourceServer) : http.token !== undefined ? staticBearer(http.token) : undefined;
  // The runner: the launcher's own (standalone), or the one `SKILL_MCP_RUNNER_SOCKET` names
  // (hosted, per host); without one the skills are still served and only skill_run says why.
  // Security: without a bearer token anyone who reaches the port (any local user, a page doing DNS
  // rebinding past a lax proxy) is "the client": it would both ask for a run and approve it.
  const front = await startFront(
    options.env,
    options.bundledSkills,
    options.runner,
    warn,
    authenticate === undefined ? { code: 'AUTH_REQUIRED', message: AUTH_REQUIRED_MESSAGE } : undefined,
    options.requestStateKey,
  );
  // Set before the factory is made: every per-request front (visible-catalog.ts copies it) shares the one desk.
  let desk: ApprovalDesk | undefined;
  if (http.approval) {
    const bearer = http.token !== undefined ? bearerTokenCheck(http.token) : undefined;
    desk = new ApprovalDesk({ origin: http.approval.origin, login, bearer: bearer && ((token) => bearer(`Bearer ${token}`)), warn });
    front.approvals = desk;
    warn(
      `approval page at ${http.approval.origin}/approve/<id> (${login ? `sign-in at ${http.oauth?.issuer} as client ${http.approval.client?.id}` : 'sign-in with the bearer token'})`,
    );
  }
  const metrics = http.metrics ? new HttpMetrics(front) : undefined;
  const readsFor = skillReadsFor(front, warn);
  const handler = createMcpHandler(
    createServerFactory(front, warn, undefined, metrics && ((tool, result) => metrics.toolResult(tool, result)), readsFor),
    {
      legacy: 'stateless',
      maxRequestBodySize: http.maxBodyBytes,
      onerror: (error) => warn(`http: ${error.message}`),
    },
  );
  // Catalog changes go to the open subscriptions/listen streams (2026-07-28).
  front.announcer.addSink(handler.notify);
  const inFlight = createInFlight();
  const state = { stopping: false };
  // Node checks the header/request deadlines on this interval (default 30 s); check every second.
  const cap: AddressCap | undefined =
    http.maxConnectionsPerAddress > 0
      ? { counts: new AddressCounts(http.maxConnectionsPerAddress), trusted: new Set(http.trustedProxies) }
      : undefined;
  const health = healthRoutes(front, warn);
  const routes = otherRoutes(resourceServer, health);
  const server = createServer(
    { connectionsCheckingInterval: 1_000 },
    createListener(
      handler,
      http.fastPath ? readsFor : undefined,
      http,
      inFlight,
      state,
      warn,
      cap,
      authenticate,
      routes,
      log,
      metrics,
      desk,
    ),
  );
  configure(server, http);
  if (cap) capConnections(server, cap);
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    const status =
      error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? '408 Request Timeout'
        : error.code === 'HPE_HEADER_OVERFLOW'
          ? '431 Request Header Fields Too Large'
          : '400 Bad Request';
    hangUp(socket, status);
  });
  let stopped: Promise<void> | undefined;
  let endpoint: MetricsEndpoint | undefined;
  const close = (): Promise<void> => {
    stopped ??= (async () => {
      state.stopping = true;
      front.live.close();
      await endpoint?.close();
      const { cut } = await shutdownGracefully(
        server,
        inFlight,
        http.shutdownGraceMs,
        () => handler.close(),
        (count) => warn(`stopping: ${count} request(s) in flight`),
      );
      warn(cut === 0 ? 'stopped' : `stopped; ${cut} request(s) did not finish within SKILL_MCP_HTTP_SHUTDOWN_GRACE_MS and were cut`);
    })();
    return stopped;
  };
  // Installed before the port is announced: a SIGTERM sent right after must not hit the default action.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void close().then(() => process.exit(0)));

  await new Promise<void>((resolve, reject) => {
    const refused = (error: unknown): void =>
      reject(new Error(describeListenError(error, { host: http.host, port: http.port, droppedToUid: options.droppedToUid })));
    server.once('error', refused);
    server.listen(http.port, http.host, () => {
      server.off('error', refused);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}${MCP_PATH}`;
  // Announced before `listening on`: whoever waits for that line finds the metrics URL too.
  if (metrics && http.metrics) {
    try {
      endpoint = await serveMetrics(metrics, http.metrics.host, http.metrics.port);
    } catch (error) {
      throw new Error(
        `metrics: ${describeListenError(error, { host: http.metrics.host, port: http.metrics.port, droppedToUid: options.droppedToUid })}`,
      );
    }
    warn(`metrics on ${endpoint.url}`);
    if (!bindsLoopbackOnly(http.metrics.host))
      warn(`warning: the metrics endpoint on ${http.metrics.host} needs no token: keep it on a private network`);
  }
  // Before `listening on`: whoever waits for that line (a test, an operator's eye) sees the runner's state first.
  await health.atStart();
  warn(
    `${servingLine(front, options.env, options.bundledSkills)}; listening on ${url}${resourceServer ? ' (OAuth access token required)' : http.token === undefined ? '' : ' (bearer token required)'}`,
  );
  if (authenticate === undefined && !bindsLoopbackOnly(http.host)) {
    warn(
      `warning: ${http.host} is reachable from other machines and neither SKILL_MCP_HTTP_TOKEN nor SKILL_MCP_OAUTH_ISSUER is set: anyone who can reach it can read the skills`,
    );
  }
  return { url, close };
}
