/**
 * @module The intercepting half of a run's proxy (docs/secrets-proxy.md): for a CONNECT whose
 * destination is a bound host of one of the run's secrets, and only once policy allowed it, the
 * proxy ends the script's TLS itself with the run CA's leaf for that host, reads its HTTP/1.1
 * requests, puts the secret's value into the declared header where the script put the
 * placeholder, and sends each request on over its own verified TLS connection to the address
 * policy decided. Destinations with no binding never come here: they stay blind tunnels.
 *
 * Security, in the order a request meets it:
 * - the value goes only into the binding's declared header, and only when the script put that
 *   binding's placeholder there; the header becomes the declared format (the script does not
 *   choose how the value is written). A placeholder anywhere else (another header, the URL, the
 *   body, a binding of another host) is forwarded as it is and counted for the audit line;
 * - Host is rewritten to the CONNECT destination: the value never rides to another virtual host
 *   behind the same address (domain fronting);
 * - upstream, the certificate is checked against the host name (SNI set) with the system CAs or
 *   `SKILL_MCP_EGRESS_CA_FILE`; a refused certificate gets the script a 502 saying why and the
 *   request is never sent; the address is the one policy decided — never re-resolved;
 * - responses are asked for uncompressed (`Accept-Encoding: identity`), and an echo of the value
 *   in their headers and bodies is swapped back to the placeholder; a body compressed anyway is
 *   passed on unscanned and counted (the limit, docs/secrets-proxy.md).
 */
import { createServer } from 'node:http';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import type { RequestOptions } from 'node:https';
import { isIP } from 'node:net';
import type { Socket } from 'node:net';
import { Transform } from 'node:stream';
import type { Duplex } from 'node:stream';
import { checkServerIdentity, TLSSocket } from 'node:tls';
import type { PeerCertificate, SecureContext } from 'node:tls';
import type { RunCa } from './ca.js';
import type { SecretBinding } from '../secrets/binding.js';
import { makeReplacer, makeScanner } from './find.js';
import { upstreamContext as localUpstreamContext } from './trust.js';
import type { Needle } from './find.js';
import { forwardable } from './headers.js';
import type { EgressRuleSet } from '../../shared/egress-rules.js';
import type { RequestRecord } from '../egress/helper-protocol.js';
import { checkRequest, refusalMessage, refusalResponse, rulesCovering } from './rules.js';
import type { Verdict } from './rules.js';

/** Keep-alive connections the proxy holds open to one bound host for one run. */
const MAX_UPSTREAM_SOCKETS = 8;

/** What one intercepted connection did, for its audit line (names and counts only: never a value or placeholder). */
export interface InterceptStats {
  requests: number;
  /** Injections made, per secret name. */
  injected: Record<string, number>;
  /** Placeholders seen anywhere else (other headers, URL, body) and forwarded as they were, per secret name. */
  elsewhere: Record<string, number>;
  /** Echoes of a value in a response, swapped back to the placeholder, per secret name. */
  echoed: Record<string, number>;
  /** Responses whose compressed body was passed on unscanned for echoes. */
  unscanned: number;
  /** Why the last request could not be sent (a refused certificate, an unreachable host), if one could not. */
  upstreamError?: string;
}

/** Where an allowed CONNECT goes, as policy decided it. */
export interface InterceptTarget {
  /** The host as the request named it (bare name or address, no brackets). */
  host: string;
  port: number;
  /** The canonical egress entry that allowed it. */
  entry: string;
  address: string;
  family: 4 | 6;
}

export interface Interceptor {
  /** Whether connections allowed by this canonical entry are intercepted (some binding names it). */
  binds(entry: string): boolean;
  /**
   * Takes over a CONNECT's client socket once the proxy has answered 200. `done` is called once,
   * when the connection closes; the stats returned grow as its requests pass (read them at report time).
   */
  take(client: Socket, head: Buffer, target: InterceptTarget, done: (stats: InterceptStats) => void): InterceptStats;
  /** Cuts every upstream connection. */
  close(): void;
}

export interface InterceptOptions {
  bindings: readonly SecretBinding[];
  /** Request rules by entry (docs/egress-rules.md): those hosts are intercepted too, and each request checked. */
  rules?: readonly EgressRuleSet[];
  /** Each request to a host with rules, once it is decided and done. */
  onRequest?: (record: RequestRecord) => void;
  ca: RunCa;
  /** PEM the upstream certificates are verified against (the operator's `SKILL_MCP_EGRESS_CA_FILE`; absent: the system CAs). */
  upstreamCa?: string;
  /** The same, already parsed (./trust.ts upstreamContext); wins over `upstreamCa`. */
  upstreamContext?: SecureContext;
  connectTimeoutMs: number;
}

/** The placeholders of every binding of the run, as needles for the scanners. */
export function placeholderNeedles(bindings: readonly SecretBinding[]): Needle[] {
  return bindings.map((b) => ({ name: b.name, bytes: Buffer.from(b.placeholder) }));
}

/** Counts placeholders in a string (a header value, a URL) into `into`. */
export function countPlaceholders(text: string, needles: readonly Needle[], into: Record<string, number>): void {
  const scanner = makeScanner(needles);
  scanner.push(Buffer.from(text));
  for (const [name, n] of scanner.counts) into[name] = (into[name] ?? 0) + n;
}

function add(into: Record<string, number>, counts: Map<string, number>): void {
  for (const [name, n] of counts) into[name] = (into[name] ?? 0) + n;
}

/** The text of a 502/504 the script gets instead of an answer. */
function failure(res: ServerResponse, status: 502 | 504, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Skill-Mcp-Egress': 'upstream-failed', Connection: 'close' });
  res.end(`skill-mcp egress proxy: ${message}\n`);
}

/** Error codes Node gives a certificate the check refused (as opposed to a network failure). */
function isCertificateError(error: NodeJS.ErrnoException): boolean {
  const code = error.code ?? '';
  return /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|ALTNAME|HOSTNAME|SIGNATURE|ISSUER|CHAIN|PERMITTED|EXCLUDED|PURPOSE/.test(code);
}

interface Conn {
  target: InterceptTarget;
  /** `host` or `host:port` (port when not 443): the Host header every request is sent with. */
  authority: string;
  /** Bindings whose hosts include this destination. */
  bindings: SecretBinding[];
  stats: InterceptStats;
  /** The rules of this host, if it has any. */
  rules?: EgressRuleSet;
  /** A request on this connection was refused: no later one is forwarded (pipelining across a refusal). */
  refused?: boolean;
}

export function makeInterceptor(opts: InterceptOptions): Interceptor {
  const entries = new Set(opts.bindings.flatMap((b) => b.hosts));
  const needles = placeholderNeedles(opts.bindings);
  // Parsed once per run, before the script starts (a list of ~140 CAs takes ~35 ms here; per TLS
  // connection it would cost that much each). A list that cannot be parsed fails the run's start.
  const upstreamContext: SecureContext = opts.upstreamContext ?? localUpstreamContext(opts.upstreamCa);
  /** One keep-alive pool per destination entry and decided address (a new address never reuses an old pool). */
  const agents = new Map<string, Agent>();
  const conns = new WeakMap<object, Conn>();
  const internal = createServer({ keepAlive: true });

  const rulesOf = (entry: string): EgressRuleSet | undefined => rulesCovering(opts.rules ?? [], entry);

  function agentFor(target: InterceptTarget): Agent {
    const key = `${target.entry} ${target.address}`;
    let agent = agents.get(key);
    if (!agent) {
      agent = new Agent({ keepAlive: true, maxSockets: MAX_UPSTREAM_SOCKETS, maxFreeSockets: MAX_UPSTREAM_SOCKETS });
      agents.set(key, agent);
    }
    return agent;
  }

  internal.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const conn = conns.get(req.socket);
    if (!conn) {
      res.destroy();
      return;
    }
    if (conn.rules && !judged(conn, req, res)) return;
    forward(conn, req, res);
  });

  const destination = (conn: Conn): string => `${conn.authority}${conn.target.port === 443 ? ':443' : ''}`;

  /** Reports one request to a host with rules. */
  function report(conn: Conn, req: IncomingMessage, verdict: Verdict, status: number | undefined, up: number, down: number): void {
    const query = (req.url ?? '').indexOf('?');
    opts.onRequest?.({
      destination: destination(conn),
      method: req.method ?? '',
      path: (query === -1 ? (req.url ?? '') : (req.url ?? '').slice(0, query)).slice(0, 1024),
      decision: verdict.allowed ? 'allowed' : 'refused',
      ...(verdict.allowed ? { rule: verdict.rule } : { reason: verdict.reason }),
      ...(status !== undefined ? { status } : {}),
      bytes_up: up,
      bytes_down: down,
    });
  }

  /**
   * Checks a request to a host with rules (rules.ts); a refusal is answered here with a 403 naming the
   * rule set and ends the connection. An allowed one is reported when its answer is done. Returns whether to forward it.
   */
  function judged(conn: Conn, req: IncomingMessage, res: ServerResponse): boolean {
    const rules = conn.rules!;
    const verdict: Verdict = conn.refused
      ? { allowed: false, reason: 'after-refusal', why: 'an earlier request on this connection was refused, so nothing after it is read' }
      : checkRequest(
          rules,
          { host: conn.target.host, port: conn.target.port, defaultPort: 443 },
          { method: req.method ?? '', target: req.url ?? '', rawHeaders: req.rawHeaders },
        );
    let up = 0;
    let down = 0;
    req.on('data', (chunk: Buffer) => (up += chunk.length));
    if (!verdict.allowed) {
      // Security: the connection ends with this answer, so bytes pipelined after the refused request are never read as a request.
      conn.refused = true;
      conn.stats.requests += 1;
      const body = `${refusalMessage(rules, verdict.why)}\n`;
      res.writeHead(403, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Skill-Mcp-Egress': 'refused', Connection: 'close' });
      res.end(body);
      report(conn, req, verdict, 403, 0, 0);
      return false;
    }
    // The body bytes the script receives (after any echo was swapped back), counted as they are written.
    const write = res.write.bind(res);
    res.write = ((chunk: Buffer | string, ...rest: never[]) => {
      down += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
      return write(chunk, ...rest);
    }) as typeof res.write;
    res.once('close', () => report(conn, req, verdict, res.headersSent ? res.statusCode : undefined, up, down));
    return true;
  }

  /** Sends one request of an intercepted connection on to its host. */
  function forward(conn: Conn, req: IncomingMessage, res: ServerResponse): void {
    const { target, stats } = conn;
    stats.requests += 1;
    const headers: OutgoingHttpHeaders = {};
    for (const [name, raw] of forwardable(req.rawHeaders)) {
      let value = raw;
      const lower = name.toLowerCase();
      // This hop answered `Expect: 100-continue` itself (Node's server does); the body follows regardless.
      if (lower === 'expect') continue;
      // Security: the value goes only where its binding says, and only in place of its placeholder.
      const binding = conn.bindings.find((b) => b.header.toLowerCase() === lower && raw.includes(b.placeholder));
      if (binding) {
        value = binding.format.split('{value}').join(binding.value);
        stats.injected[binding.name] = (stats.injected[binding.name] ?? 0) + 1;
      } else countPlaceholders(raw, needles, stats.elsewhere);
      const prev = headers[name];
      headers[name] = prev === undefined ? value : [...(Array.isArray(prev) ? prev : [String(prev)]), value];
    }
    // Security: the request goes to the host policy allowed, under that host's name only.
    headers['Host'] = conn.authority;
    // Security: bodies come back uncompressed, so an echo of the value in them can be swapped back
    // (a host that compresses anyway is passed on unscanned, and counted).
    for (const name of Object.keys(headers)) if (name.toLowerCase() === 'accept-encoding') delete headers[name];
    headers['Accept-Encoding'] = 'identity';
    const path = req.url ?? '/';
    countPlaceholders(path, needles, stats.elsewhere);
    let decoded = path;
    try {
      decoded = decodeURIComponent(path);
    } catch {
      // Not valid percent-encoding: the raw form was scanned.
    }
    if (decoded !== path) countPlaceholders(decoded, needles, stats.elsewhere);
    const bodyScan = makeScanner(needles);

    let upstreamReq: ReturnType<typeof httpsRequest>;
    try {
      upstreamReq = httpsRequest({
        agent: agentFor(target),
        host: target.address,
        family: target.family,
        port: target.port,
        method: req.method,
        path,
        headers,
        setHost: false,
        // Security: SNI and the identity check are the host's name (an address host: its address), never the address policy resolved.
        servername: isIP(target.host) !== 0 ? '' : target.host,
        checkServerIdentity: (_name: string, cert: PeerCertificate) => checkServerIdentity(target.host, cert),
        secureContext: upstreamContext,
        minVersion: 'TLSv1.2',
        ALPNProtocols: ['http/1.1'],
        timeout: opts.connectTimeoutMs,
      } as RequestOptions);
    } catch (error) {
      // A header value Node refuses to send (e.g. a value with a line break).
      stats.upstreamError = (error as NodeJS.ErrnoException).code ?? 'bad-request';
      res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Skill-Mcp-Egress': 'refused', Connection: 'close' });
      res.end('skill-mcp egress proxy: the request could not be forwarded (a header Node refuses to send)\n');
      return;
    }
    upstreamReq.once('socket', (socket: Socket) => socket.setNoDelay(true));
    upstreamReq.once('timeout', () => upstreamReq.destroy(Object.assign(new Error('no answer in time'), { code: 'ETIMEDOUT' })));
    upstreamReq.once('error', (error: NodeJS.ErrnoException) => {
      const code = error.code ?? error.message;
      stats.upstreamError = isCertificateError(error) ? `certificate: ${code}` : code;
      const shown = `${conn.authority} (${target.address})`;
      if (isCertificateError(error)) failure(res, 502, `the certificate of ${shown} was refused (${code}); nothing was sent to it`);
      else if (code === 'ETIMEDOUT') failure(res, 504, `${shown} did not answer in time`);
      else failure(res, 502, `${shown} cannot be reached (${code})`);
    });
    upstreamReq.once('response', (upstreamRes: IncomingMessage) => {
      upstreamReq.setTimeout(0);
      const swaps = conn.bindings.map((b) => ({ name: b.name, bytes: Buffer.from(b.value), to: Buffer.from(b.placeholder) }));
      const out: [string, string][] = [];
      for (const [name, raw] of forwardable(upstreamRes.rawHeaders)) {
        const swap = makeReplacer(swaps);
        const value = Buffer.concat([swap.push(Buffer.from(raw, 'latin1')), swap.end()]).toString('latin1');
        add(stats.echoed, swap.counts);
        out.push([name, value]);
      }
      const status = upstreamRes.statusCode ?? 502;
      const bodiless = req.method === 'HEAD' || status === 204 || status === 304 || (status >= 100 && status < 200);
      const encoding = (upstreamRes.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
      if (bodiless || encoding !== 'identity') {
        if (!bodiless) stats.unscanned += 1;
        res.writeHead(status, upstreamRes.statusMessage, out.flat());
        upstreamRes.pipe(res);
        return;
      }
      // The body may change length (value → placeholder): it goes out chunked, without its Content-Length.
      res.writeHead(status, upstreamRes.statusMessage, out.filter(([name]) => name.toLowerCase() !== 'content-length').flat());
      const replacer = makeReplacer(swaps);
      upstreamRes
        .pipe(
          new Transform({
            transform(chunk: Buffer, _encoding, callback) {
              callback(null, replacer.push(chunk));
            },
            flush(callback) {
              const rest = replacer.end();
              add(stats.echoed, replacer.counts);
              callback(null, rest);
            },
          }),
        )
        .pipe(res);
    });
    res.once('close', () => {
      if (!res.writableFinished) upstreamReq.destroy();
    });
    req
      .pipe(
        new Transform({
          transform(chunk: Buffer, _encoding, callback) {
            bodyScan.push(chunk);
            callback(null, chunk);
          },
          flush(callback) {
            add(stats.elsewhere, bodyScan.counts);
            callback();
          },
        }),
      )
      .pipe(upstreamReq);
  }

  // A request the parser refuses (a body framed two ways, a malformed line, the HTTP/2 preface): on a
  // host with rules the script is told why, as for any refusal; the connection ends either way.
  internal.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    const conn = conns.get(socket);
    if (conn?.rules && socket.writable) {
      const why = `the request could not be read as one unambiguous HTTP/1.1 request (${error.code ?? 'parse error'})`;
      socket.end(refusalResponse(refusalMessage(conn.rules, why)));
      opts.onRequest?.({
        destination: destination(conn),
        method: '',
        path: '',
        decision: 'refused',
        reason: 'malformed',
        status: 403,
        bytes_up: 0,
        bytes_down: 0,
      });
    } else socket.destroy();
  });
  // CONNECT inside an intercepted connection: never a tunnel out of the rules (nor out of injection).
  internal.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    const conn = conns.get(socket);
    if (conn?.rules && socket.writable) socket.end(refusalResponse(refusalMessage(conn.rules, 'CONNECT is never forwarded')));
    else socket.destroy();
  });

  return {
    binds: (entry) => entries.has(entry) || rulesOf(entry) !== undefined,
    take(client, head, target, done) {
      const stats: InterceptStats = { requests: 0, injected: {}, elsewhere: {}, echoed: {}, unscanned: 0 };
      const conn: Conn = {
        target,
        stats,
        authority:
          target.port === 443
            ? isIP(target.host) === 6
              ? `[${target.host}]`
              : target.host
            : `${isIP(target.host) === 6 ? `[${target.host}]` : target.host}:${target.port}`,
        bindings: opts.bindings.filter((b) => b.hosts.includes(target.entry)),
        ...(rulesOf(target.entry) ? { rules: rulesOf(target.entry)! } : {}),
      };
      let finished = false;
      const finish = (): void => {
        if (finished) return;
        finished = true;
        done(stats);
      };
      client.once('close', finish);
      // The script's first TLS bytes may already be here (sent with the CONNECT, or while the leaf was made).
      client.pause();
      if (head.length > 0) client.unshift(head);
      void opts.ca.contextFor(target.host).then(
        (secureContext) => {
          if (client.destroyed) return finish();
          // Security: only HTTP/1.1 is offered, so every request passes through the parser above.
          const tls = new TLSSocket(client, { isServer: true, secureContext, ALPNProtocols: ['http/1.1'] });
          tls.on('error', () => tls.destroy());
          tls.once('close', () => client.destroy());
          conns.set(tls, conn);
          internal.emit('connection', tls);
          client.resume();
        },
        (error: unknown) => {
          // Said on the connection's line: a name past the run's limit, or a name the CA may not sign.
          stats.upstreamError = error instanceof Error ? error.message : 'no certificate for this host';
          client.destroy();
          finish();
        },
      );
      return stats;
    },
    close() {
      for (const agent of agents.values()) agent.destroy();
      agents.clear();
      internal.closeAllConnections();
    },
  };
}
