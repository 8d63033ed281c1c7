/**
 * @module A run's own egress proxy (docs/isolation.md, "Egress"): an HTTP proxy on a unix socket
 * that only this run's sandbox can reach (bubblewrap binds it in; a bridge inside listens on the
 * sandbox's loopback). It speaks `CONNECT host:port` (HTTPS and any other TCP protocol, tunnelled)
 * and plain-HTTP forwarding (`GET http://host/...`), lets through only what policy.ts allows, and
 * refuses the rest with a 403 whose body names the missing entry. Every connection — allowed or
 * refused — is reported once, with the bytes sent each way, for the audit log.
 */
import { createServer, request as httpRequest } from 'node:http';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { connect, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { parseDestination, parseRequestHost } from './destination.js';
import type { EgressEntry } from '../../shared/egress.js';
import type { EgressRecord } from '../egress/helper-protocol.js';
import { makeScanner } from './find.js';
import type { Needle } from './find.js';
import { forwardable } from './headers.js';
import { countPlaceholders } from './intercept.js';
import type { InterceptStats, Interceptor } from './intercept.js';
import { decide, systemLookup } from './policy.js';
import type { EgressRuleSet } from '../../shared/egress-rules.js';
import type { RequestRecord } from '../egress/helper-protocol.js';
import { checkRequest, refusalMessage, rulesCovering } from './rules.js';
import type { Verdict } from './rules.js';
import type { Decision, Lookup } from './policy.js';

/** One line of the audit log per proxied connection (a plain-HTTP request is one connection upstream): its schema is the runner's. */
export type { EgressRecord };

export interface EgressProxyOptions {
  socketPath: string;
  entries: readonly EgressEntry[];
  onRecord(record: EgressRecord): void;
  lookup?: Lookup;
  connectTimeoutMs?: number;
  /** Connections open at once from the run; more are refused (the runner's own descriptors are finite). */
  maxOpen?: number;
  /** Issue 30: terminates TLS for the bound hosts of the run's secrets (intercept.ts); absent: every CONNECT is a blind tunnel. */
  interceptor?: Interceptor;
  /** The run's placeholders, counted where they pass in plain-HTTP requests (never injected there). */
  placeholders?: readonly Needle[];
  /** Request rules by entry (docs/egress-rules.md): a plain-HTTP request to such a host is checked here (HTTPS: intercept.ts). */
  rules?: readonly EgressRuleSet[];
  onRequest?: (record: RequestRecord) => void;
}

export interface EgressProxy {
  /** Stops listening, cuts every connection and reports each one still open. */
  close(): Promise<void>;
}

const CONNECT_TIMEOUT_MS = 10_000;
const MAX_OPEN = 64;

type Fields = Pick<
  EgressRecord,
  | 'decision'
  | 'entry'
  | 'address'
  | 'reason'
  | 'intercepted'
  | 'requests'
  | 'injected'
  | 'placeholder_elsewhere'
  | 'value_echoed'
  | 'responses_unscanned'
  | 'upstream_error'
>;

/** What a record's byte counts are read from: the upstream socket, or for an intercepted connection the script's side. */
interface Counted {
  readonly bytesWritten: number;
  readonly bytesRead: number;
}

/** The audit fields of an intercepted connection (empty counts left out). */
function interceptFields(stats: InterceptStats): Fields {
  const some = (counts: Record<string, number>): Record<string, number> | undefined =>
    Object.keys(counts).length > 0 ? counts : undefined;
  const injected = some(stats.injected);
  const elsewhere = some(stats.elsewhere);
  const echoed = some(stats.echoed);
  return {
    decision: 'allowed',
    intercepted: true,
    requests: stats.requests,
    ...(injected ? { injected } : {}),
    ...(elsewhere ? { placeholder_elsewhere: elsewhere } : {}),
    ...(echoed ? { value_echoed: echoed } : {}),
    ...(stats.unscanned > 0 ? { responses_unscanned: stats.unscanned } : {}),
    ...(stats.upstreamError !== undefined ? { upstream_error: stats.upstreamError } : {}),
  };
}

interface Flow {
  sockets: Duplex[];
  /** What the record will say (replaced as the connection progresses), and the upstream socket whose bytes it counts. */
  set(fields: Fields, upstream?: Counted): void;
  /**
   * Fields read when the connection is reported instead (an intercepted connection's counts grow
   * as its requests pass): whichever way it ends — its own close or the proxy's — it reports them.
   */
  live(fields: () => Fields): void;
  /** Reports the connection, once. */
  finish(): void;
}

function refusalText(status: number, message: string): string {
  const body = `${message}\n`;
  const title = status === 403 ? 'Forbidden' : status === 400 ? 'Bad Request' : status === 504 ? 'Gateway Timeout' : 'Bad Gateway';
  const kind = status < 500 ? 'refused' : 'upstream-failed';
  return `HTTP/1.1 ${status} ${title}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Skill-Mcp-Egress: ${kind}\r\nConnection: close\r\n\r\n${body}`;
}

/** Starts a run's proxy on `socketPath`; resolves once it listens. */
export async function startEgressProxy(opts: EgressProxyOptions): Promise<EgressProxy> {
  const lookup = opts.lookup ?? systemLookup;
  const connectTimeoutMs = opts.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
  const maxOpen = opts.maxOpen ?? MAX_OPEN;

  /** Every connection not yet reported: its sockets (cut at close) and how to report it. */
  const flows = new Set<Flow>();
  /** Client connections a request was refused on: no later request of theirs reaches a host with rules (pipelining across a refusal). */
  const refusedOn = new WeakSet<object>();
  const decided = new WeakMap<object, Promise<void>>();

  function track(destination: string, method: string): Flow {
    const started = performance.now();
    let fields: Fields = { decision: 'refused', reason: 'run-ended' };
    let upstream: Counted | undefined;
    let current: (() => Fields) | undefined;
    let done = false;
    const flow: Flow = {
      sockets: [],
      set(next, socket) {
        fields = next;
        if (socket) upstream = socket;
      },
      live(read) {
        current = read;
      },
      finish() {
        if (done) return;
        done = true;
        flows.delete(flow);
        opts.onRecord({
          destination,
          method,
          ...(current ? current() : fields),
          bytes_up: upstream?.bytesWritten ?? 0,
          bytes_down: upstream?.bytesRead ?? 0,
          duration_ms: Math.round(performance.now() - started),
        });
      },
    };
    flows.add(flow);
    return flow;
  }

  const server = createServer();
  // Security: a run cannot make the runner hold more than maxOpen sockets from it at once (more are closed at accept).
  server.maxConnections = maxOpen;
  // Nothing silent: a connection closed at accept is refused like any other (its request is never read, so no destination).
  server.on('drop', () =>
    opts.onRecord({
      destination: '',
      method: '',
      decision: 'refused',
      reason: 'too-many-open',
      bytes_up: 0,
      bytes_down: 0,
      duration_ms: 0,
    }),
  );

  server.on('connect', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    const target = req.url ?? '';
    const flow = track(target, 'CONNECT');
    flow.sockets.push(client);
    client.on('error', () => client.destroy());
    const refuse = (status: number, reason: EgressRecord['reason'], message: string): void => {
      client.end(refusalText(status, message));
      flow.set({ decision: 'refused', reason });
      flow.finish();
    };
    const parsed = parseDestination(target);
    if (!parsed.ok) return refuse(400, 'bad-destination', `skill-mcp egress proxy: CONNECT needs host:port (${parsed.why})`);
    void decide(opts.entries, target.slice(0, target.lastIndexOf(':')), parsed.value.port, lookup).then((decision: Decision) => {
      if (client.destroyed) return flow.finish();
      if (!decision.allowed) return refuse(decision.status, decision.reason, decision.message);
      const allowed = { decision: 'allowed' as const, entry: decision.entry, address: decision.address };
      // Issue 30: a bound host's connection is ended here and its requests read (intercept.ts); every other stays a blind tunnel.
      if (opts.interceptor?.binds(decision.entry) && client instanceof Socket) {
        const side: Counted = {
          get bytesWritten() {
            return client.bytesRead;
          },
          get bytesRead() {
            return client.bytesWritten;
          },
        };
        flow.set({ ...allowed, intercepted: true, requests: 0 }, side);
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        const host = parseRequestHost(target.slice(0, target.lastIndexOf(':')));
        const stats = opts.interceptor.take(
          client,
          head,
          {
            host: host.ok ? host.value.host : decision.address,
            port: parsed.value.port,
            entry: decision.entry,
            address: decision.address,
            family: decision.family,
          },
          () => flow.finish(),
        );
        // Read at report time: a run that ends while the connection is still open (the proxy closes
        // before the script's socket close reaches it) still reports the requests it carried.
        flow.live(() => ({ ...allowed, ...interceptFields(stats) }));
        return;
      }
      // noDelay: a tunnel forwards small TLS records as they come; Nagle would hold them for the peer's delayed ACK.
      const upstream = connect({
        host: decision.address,
        port: parsed.value.port,
        family: decision.family,
        timeout: connectTimeoutMs,
        noDelay: true,
      });
      flow.sockets.push(upstream);
      flow.set({ ...allowed, reason: 'connect-failed' }, upstream);
      let tunnelled = false;
      upstream.once('connect', () => {
        tunnelled = true;
        flow.set(allowed);
        upstream.setTimeout(0);
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length > 0) upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      const fail = (status: number, why: string): void => {
        if (!tunnelled) client.end(refusalText(status, `skill-mcp egress proxy: ${target} (${decision.address}) ${why}`));
        else client.destroy();
        upstream.destroy();
      };
      upstream.once('timeout', () => fail(504, 'did not answer in time'));
      upstream.once('error', (error: NodeJS.ErrnoException) => fail(502, `cannot be reached (${error.code ?? error.message})`));
      // A clean end reaches the other side through pipe, after what is buffered; an error cuts it
      // (fail() above for the destination's side).
      upstream.once('close', () => flow.finish());
      client.once('close', (failed: boolean) => (failed ? upstream.destroy() : upstream.end()));
    });
  });

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    let url: URL | undefined;
    try {
      url = new URL(req.url ?? '');
    } catch {
      url = undefined;
    }
    const method = req.method ?? 'GET';
    const flow = track(url && url.protocol === 'http:' ? `${url.hostname}:${url.port || 80}` : (req.url ?? '').slice(0, 200), method);
    flow.sockets.push(req.socket);
    const refuse = (status: number, reason: EgressRecord['reason'], message: string): void => {
      refusedOn.add(req.socket);
      res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Skill-Mcp-Egress': 'refused', Connection: 'close' });
      res.end(`${message}\n`);
      flow.set({ decision: 'refused', reason });
      flow.finish();
    };
    if (url?.protocol !== 'http:') {
      return refuse(
        400,
        'bad-destination',
        url?.protocol === 'https:'
          ? 'skill-mcp egress proxy: https:// URLs go through a CONNECT tunnel (HTTPS_PROXY), not as a plain request'
          : 'skill-mcp egress proxy: this is a proxy; send an absolute http:// URL or CONNECT host:port',
      );
    }
    const target = url;
    const port = target.port === '' ? 80 : Number(target.port);
    // Decided in the order the connection sent them, so a refusal is known before the request after it is judged.
    const before = decided.get(req.socket) ?? Promise.resolve();
    const decision = before.then(() => decide(opts.entries, target.hostname, port, lookup));
    decided.set(
      req.socket,
      decision.then(() => undefined),
    );
    void decision.then((decision) => {
      if (res.destroyed) return flow.finish();
      if (!decision.allowed) return refuse(decision.status, decision.reason, decision.message);
      const allowed = { decision: 'allowed' as const, entry: decision.entry, address: decision.address };
      // A host with rules: the request as written is judged (rules.ts) and, if allowed, sent with exactly that path.
      const rules = rulesCovering(opts.rules ?? [], decision.entry);
      const rawPath = (req.url ?? '').replace(/^http:\/\/[^/?#]*/i, '');
      const path = rules ? (rawPath.startsWith('/') ? rawPath : `/${rawPath}`) : `${target.pathname}${target.search}`;
      let verdict: Verdict | undefined;
      let up = 0;
      let down = 0;
      const report = (status: number | undefined): void => {
        if (!verdict || !opts.onRequest) return;
        const query = path.indexOf('?');
        opts.onRequest({
          destination: `${target.hostname}:${port}`,
          method,
          path: (query === -1 ? path : path.slice(0, query)).slice(0, 1024),
          decision: verdict.allowed ? 'allowed' : 'refused',
          ...(verdict.allowed ? { rule: verdict.rule } : { reason: verdict.reason }),
          ...(status !== undefined ? { status } : {}),
          bytes_up: up,
          bytes_down: down,
        });
      };
      if (rules) {
        verdict = refusedOn.has(req.socket)
          ? {
              allowed: false,
              reason: 'after-refusal',
              why: 'an earlier request on this connection was refused, so nothing after it is read',
            }
          : checkRequest(
              rules,
              { host: target.hostname.replace(/^\[|\]$/g, ''), port, defaultPort: 80 },
              { method, target: path, rawHeaders: req.rawHeaders },
            );
        if (!verdict.allowed) {
          refusedOn.add(req.socket);
          res.writeHead(403, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Skill-Mcp-Egress': 'refused', Connection: 'close' });
          res.end(`${refusalMessage(rules, verdict.why)}\n`);
          report(403);
          flow.set(allowed);
          return flow.finish();
        }
        req.on('data', (chunk: Buffer) => (up += chunk.length));
        res.once('close', () => report(res.headersSent ? res.statusCode : undefined));
      }
      flow.set({ ...allowed, reason: 'connect-failed' });
      const headers: OutgoingHttpHeaders = {};
      // Issue 30: a placeholder is never injected into plain HTTP; where one passes it is counted for the audit line.
      const seen: Record<string, number> = {};
      const needles = opts.placeholders ?? [];
      if (needles.length > 0) {
        countPlaceholders(req.url ?? '', needles, seen);
        for (const value of req.rawHeaders) countPlaceholders(value, needles, seen);
      }
      const bodyScan = needles.length > 0 ? makeScanner(needles) : undefined;
      const noted = (): Fields => {
        for (const [name, n] of bodyScan?.counts ?? []) seen[name] = (seen[name] ?? 0) + n;
        return Object.keys(seen).length > 0 ? { ...allowed, placeholder_elsewhere: seen } : allowed;
      };
      for (const [name, value] of forwardable(req.rawHeaders)) {
        const prev = headers[name];
        headers[name] = prev === undefined ? value : [...(Array.isArray(prev) ? prev : [String(prev)]), value];
      }
      headers['Host'] = target.host;
      const upstreamReq = httpRequest({
        host: decision.address,
        family: decision.family,
        port,
        method,
        path,
        headers,
        setHost: false,
        agent: false,
        timeout: connectTimeoutMs,
      });
      upstreamReq.once('socket', (socket: Socket) => {
        flow.sockets.push(socket);
        let connected = false;
        socket.once('connect', () => {
          connected = true;
          flow.set(allowed, socket);
        });
        socket.once('close', () => {
          if (connected) flow.set(noted(), socket);
          flow.finish();
        });
        flow.set({ ...allowed, reason: 'connect-failed' }, socket);
      });
      upstreamReq.once('timeout', () => upstreamReq.destroy(Object.assign(new Error('no answer in time'), { code: 'ETIMEDOUT' })));
      upstreamReq.once('error', (error: NodeJS.ErrnoException) => {
        if (!res.headersSent) {
          res.writeHead(502, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Skill-Mcp-Egress': 'upstream-failed', Connection: 'close' });
          res.end(`skill-mcp egress proxy: ${target.host} (${decision.address}) cannot be reached (${error.code ?? error.message})\n`);
        } else res.destroy();
        flow.finish();
      });
      upstreamReq.once('response', (upstreamRes) => {
        upstreamReq.setTimeout(0);
        res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.statusMessage, forwardable(upstreamRes.rawHeaders).flat());
        upstreamRes.on('data', (chunk: Buffer) => (down += chunk.length));
        upstreamRes.pipe(res);
      });
      res.once('close', () => upstreamReq.destroy());
      if (bodyScan) req.on('data', (chunk: Buffer) => bodyScan.push(chunk));
      req.pipe(upstreamReq);
    });
  });

  // Every connection the script opened, whatever became of it: a socket the HTTP parser gave up on
  // (clientError) is no longer the server's to close, and one left half-open would hold close() — and
  // with it the run's end — until the script let go.
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  server.on('clientError', (_error, socket: Duplex) => {
    if (socket.writable) socket.end(refusalText(400, 'skill-mcp egress proxy: a malformed request'));
    else socket.destroy();
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });

  return {
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const flow of [...flows]) {
        for (const socket of flow.sockets) socket.destroy();
        flow.finish();
      }
      server.closeAllConnections();
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
