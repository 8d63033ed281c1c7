/**
 * @module The HTTP front's settings: `--host`/`--port` flags, then `SKILL_MCP_HTTP_*` variables,
 * then defaults. Read once at start; a bad value stops the server with a message naming the
 * setting (a security setting is never silently replaced by a default).
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { localhostAllowedHostnames, localhostAllowedOrigins } from '@modelcontextprotocol/server';
import { DEFAULT_RUN_INPUT_BYTES, messageCapFor, RUN_INPUT_BYTES } from '../../shared/run-io.js';
import { readVariable } from '../../shared/settings-schema.js';
import { parseFlags, stringFlag, type FlagSpec } from '../../shared/cli-args.js';
import { readValue, wholeNumber, type SettingIssue } from '../../shared/settings-schema.js';
import { normaliseAddress } from './address-cap.js';
import { LOG_FORMAT, type LogFormat } from '../../shared/log-line.js';
import { OAUTH_VARIABLES, readOAuthSettings, type OAuthSettings } from '../auth/settings.js';
import { APPROVAL_VARIABLES, readApprovalSettings, type ApprovalSettings } from '../approve/settings.js';

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 3000;
export const MCP_PATH = '/mcp';
/** Security: a client that stalls its headers holds a connection at most this long (slowloris). */
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

export interface HttpOptions {
  host: string;
  /** 0 picks a free port; the real one is printed on stderr. */
  port: number;
  /** Host header values accepted (hostnames, port-agnostic), or undefined to accept any. */
  allowedHosts: string[] | undefined;
  /** Origin hostnames accepted from browsers; a request without Origin always passes. */
  allowedOrigins: string[];
  /** The bearer token clients must send, or undefined when authentication is off. */
  token: string | undefined;
  /** Lines on stderr: text, or JSON with one access-log line per request. */
  logFormat: LogFormat;
  /** OAuth access tokens from this issuer instead of one shared token (server/auth/). */
  oauth: OAuthSettings | undefined;
  /** The approval page (server/approve/), or undefined when SKILL_MCP_APPROVAL_URL is unset. */
  approval: ApprovalSettings | undefined;
  maxBodyBytes: number;
  maxConnections: number;
  /** Connections one client address may hold at once (through a trusted proxy: requests in flight); 0 = no cap. */
  maxConnectionsPerAddress: number;
  /** Peer addresses whose `X-Forwarded-For` names the client (normalised IP literals). */
  trustedProxies: string[];
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  /** After SIGTERM, how long in-flight requests may take before their connections are cut. */
  shutdownGraceMs: number;
  /** Where Prometheus metrics are served (`--metrics-port`); undefined: not at all (the default). */
  metrics: { host: string; port: number } | undefined;
  /** Plain 2026-07-28 resources/read and skills/list answered without the SDK's pipeline (http/fast-path.ts); on by default. */
  fastPath: boolean;
}

/** Every variable the HTTP front reads, with what it means (printed by `--http --help`, listed in docs/http.md). */
export const HTTP_VARIABLES = {
  SKILL_MCP_HTTP_HOST: `address to bind (default ${DEFAULT_HOST}; --host wins)`,
  SKILL_MCP_HTTP_PORT: `port (default ${DEFAULT_PORT}; 0 = any free port; --port wins)`,
  SKILL_MCP_HTTP_TOKEN: 'bearer token clients must send (Authorization: Bearer ...); unset = no authentication',
  SKILL_MCP_HTTP_TOKEN_FILE: 'file holding the bearer token (one line), instead of SKILL_MCP_HTTP_TOKEN',
  ...OAUTH_VARIABLES,
  ...APPROVAL_VARIABLES,
  SKILL_MCP_LOG_FORMAT: 'stderr lines as text (default) or json (one object per line, plus an access-log line per request)',
  SKILL_MCP_HTTP_ALLOWED_HOSTS:
    'comma-separated Host names accepted (default: localhost names, plus --host when it is a name or a specific address); * accepts any',
  SKILL_MCP_HTTP_ALLOWED_ORIGINS: 'comma-separated browser Origin hostnames accepted besides localhost ones',
  SKILL_MCP_HTTP_MAX_BODY_BYTES: `largest request body (default ${messageCapFor(DEFAULT_RUN_INPUT_BYTES)}, room for a skill_run with SKILL_MCP_RUN_INPUT_BYTES of input as base64; larger = 413)`,
  SKILL_MCP_HTTP_MAX_CONNECTIONS: 'open connections at most (default 512; more are refused)',
  SKILL_MCP_HTTP_MAX_CONNECTIONS_PER_ADDRESS: 'open connections one client address may hold (default 0 = no cap; more are refused 429)',
  SKILL_MCP_HTTP_TRUSTED_PROXIES:
    'comma-separated proxy addresses whose X-Forwarded-For names the client (default: none, the header is ignored)',
  SKILL_MCP_HTTP_HEADERS_TIMEOUT_MS: `time a client has to send its request headers (default ${DEFAULT_HEADERS_TIMEOUT_MS}); then 408 and the connection is closed`,
  SKILL_MCP_HTTP_REQUEST_TIMEOUT_MS: `time a client has to send its whole request (default ${DEFAULT_REQUEST_TIMEOUT_MS}); then 408 and the connection is closed`,
  SKILL_MCP_HTTP_KEEP_ALIVE_TIMEOUT_MS: 'idle keep-alive connections are closed after this (default 65000)',
  SKILL_MCP_HTTP_SHUTDOWN_GRACE_MS: 'on SIGTERM, time in-flight requests get before connections are cut (default 30000)',
  SKILL_MCP_HTTP_FAST_PATH:
    'on (default) or off: answer plain 2026-07-28 resources/read and skills/list without the SDK pipeline (same answers; off sends every request through the SDK handler)',
  SKILL_MCP_METRICS_PORT:
    'serve Prometheus metrics at http://METRICS_HOST:PORT/metrics (default: off; 0 = any free port; --metrics-port wins)',
  SKILL_MCP_METRICS_HOST: `address of the metrics endpoint (default ${DEFAULT_HOST}; --metrics-host wins); unauthenticated: keep it private`,
} as const;

export const HTTP_USAGE = `usage: skill-mcp --http [--host H] [--port P] [--metrics-port M [--metrics-host MH]]
  serves the skills over Streamable HTTP at http://H:P${MCP_PATH} (both protocol eras), and with
  --metrics-port Prometheus metrics at http://MH:M/metrics (MH default ${DEFAULT_HOST})
variables:
${Object.entries(HTTP_VARIABLES)
  .map(([name, meaning]) => `  ${name.padEnd(38)}${meaning}`)
  .join('\n')}`;

/** A setting the HTTP front cannot start with; the message names it and says what to set. */
export class HttpConfigError extends Error {
  override readonly name = 'HttpConfigError';
  readonly code = 'HTTP_CONFIG';
}

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '']);

function list(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((item) => item.trim().toLowerCase())
    .filter((item) => item !== '');
}

/** A whole-number setting through the shared schema machinery; malformed stops the HTTP front. */
function integer(name: string, raw: string | undefined, fallback: number, min: number): number {
  const issues: SettingIssue[] = [];
  const value = readValue(raw, { name, schema: wholeNumber(min), expected: `an integer >= ${min}`, fallback, policy: 'stop' }, issues);
  if (issues[0]) throw new HttpConfigError(issues[0].message);
  return value;
}

/** Host header form of a bind address: IPv6 literals are bracketed, as in `Host: [::1]:3000`. */
function hostHeaderName(host: string): string {
  return isIP(host) === 6 ? `[${host}]` : host.toLowerCase();
}

function readToken(env: NodeJS.ProcessEnv): string | undefined {
  const inline = env['SKILL_MCP_HTTP_TOKEN'];
  const file = env['SKILL_MCP_HTTP_TOKEN_FILE'];
  if (inline && file) throw new HttpConfigError('both SKILL_MCP_HTTP_TOKEN and SKILL_MCP_HTTP_TOKEN_FILE are set; set one');
  let token = inline || undefined;
  if (file) {
    try {
      token = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (error) {
      // Security: the error names the variable, never the file's content.
      throw new HttpConfigError(`SKILL_MCP_HTTP_TOKEN_FILE cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  if (token === undefined) return undefined;
  // Security: a short or blank token would be guessable; refuse rather than serve "protected".
  if (token.trim().length < 16 || /\s/.test(token))
    throw new HttpConfigError('the HTTP token must be at least 16 characters with no whitespace (generate one with: openssl rand -hex 32)');
  return token;
}

/** on/off; anything else stops the front rather than guess. */
function readSwitch(name: string, raw: string | undefined, fallback: boolean): boolean {
  const value = (raw ?? '').trim().toLowerCase();
  if (value === '') return fallback;
  if (value === 'on') return true;
  if (value === 'off') return false;
  throw new HttpConfigError(`${name}=${JSON.stringify(raw)}: expected on or off`);
}

/** IP literals only: a name would be resolved who knows when, and a wrong entry would trust forged headers. */
function readTrustedProxies(raw: string | undefined): string[] {
  const entries = list(raw);
  const bad = entries.find((entry) => isIP(entry) === 0);
  if (bad !== undefined)
    throw new HttpConfigError(
      `SKILL_MCP_HTTP_TRUSTED_PROXIES: ${JSON.stringify(bad)} is not an IP address; list the proxies' addresses, comma-separated (no names, no ranges)`,
    );
  return [...new Set(entries.map(normaliseAddress))];
}

const HTTP_FLAGS: Record<string, FlagSpec> = {
  host: { type: 'string' },
  port: { type: 'string' },
  'metrics-host': { type: 'string' },
  'metrics-port': { type: 'string' },
};

/** Parses `--host H --port P` and the environment. A flag it does not know is a UsageError (exit 2). */
export function readHttpOptions(args: string[], env: NodeJS.ProcessEnv): HttpOptions {
  const { values } = parseFlags(args, HTTP_FLAGS, { usage: HTTP_USAGE });
  const host = stringFlag(values, 'host') ?? (env['SKILL_MCP_HTTP_HOST'] || DEFAULT_HOST);
  const portFlag = stringFlag(values, 'port');
  const [rawPort, portName] = portFlag !== undefined ? [portFlag, '--port'] : [env['SKILL_MCP_HTTP_PORT'], 'SKILL_MCP_HTTP_PORT'];
  const metricsHost = stringFlag(values, 'metrics-host') ?? (env['SKILL_MCP_METRICS_HOST'] || DEFAULT_HOST);
  const metricsFlag = stringFlag(values, 'metrics-port');
  const [rawMetricsPort, metricsPortName] =
    metricsFlag !== undefined ? [metricsFlag, '--metrics-port'] : [env['SKILL_MCP_METRICS_PORT'], 'SKILL_MCP_METRICS_PORT'];
  const port = integer(portName, rawPort, DEFAULT_PORT, 0);
  if (port > 65535) throw new HttpConfigError(`${portName}=${port} is not a port (0-65535)`);
  let metrics: HttpOptions['metrics'];
  if (rawMetricsPort !== undefined && rawMetricsPort !== '') {
    const metricsPort = integer(metricsPortName, rawMetricsPort, 0, 0);
    if (metricsPort > 65535) throw new HttpConfigError(`${metricsPortName}=${metricsPort} is not a port (0-65535)`);
    metrics = { host: metricsHost, port: metricsPort };
  }

  // Security: DNS rebinding — a browser page on evil.example resolving to 127.0.0.1 still sends
  // `Host: evil.example`, so only names we were told about are answered.
  const rawHosts = list(env['SKILL_MCP_HTTP_ALLOWED_HOSTS']);
  let allowedHosts: string[] | undefined;
  if (rawHosts.includes('*')) allowedHosts = undefined;
  else if (rawHosts.length > 0) allowedHosts = [...new Set([...localhostAllowedHostnames(), ...rawHosts])];
  else if (WILDCARD_HOSTS.has(host)) {
    throw new HttpConfigError(
      `binding ${JSON.stringify(host)} accepts connections on every address: set SKILL_MCP_HTTP_ALLOWED_HOSTS to the names clients use (or * behind a proxy that checks Host)`,
    );
  } else allowedHosts = [...new Set([...localhostAllowedHostnames(), hostHeaderName(host)])];

  const headersTimeoutMs = integer(
    'SKILL_MCP_HTTP_HEADERS_TIMEOUT_MS',
    env['SKILL_MCP_HTTP_HEADERS_TIMEOUT_MS'],
    DEFAULT_HEADERS_TIMEOUT_MS,
    100,
  );
  const requestTimeoutMs = integer(
    'SKILL_MCP_HTTP_REQUEST_TIMEOUT_MS',
    env['SKILL_MCP_HTTP_REQUEST_TIMEOUT_MS'],
    DEFAULT_REQUEST_TIMEOUT_MS,
    100,
  );
  if (headersTimeoutMs > requestTimeoutMs)
    throw new HttpConfigError('SKILL_MCP_HTTP_HEADERS_TIMEOUT_MS must not exceed SKILL_MCP_HTTP_REQUEST_TIMEOUT_MS');

  const token = readToken(env);
  const oauthIssues: SettingIssue[] = [];
  const oauth = readOAuthSettings(env, oauthIssues);
  if (oauthIssues[0]) throw new HttpConfigError(oauthIssues.map((issue) => issue.message).join('\n'));
  // One way in at a time: with both, which one a request used would decide whose identity (and
  // grants) it gets — a shared token would stand for everyone.
  if (token !== undefined && oauth !== undefined) {
    throw new HttpConfigError(
      'both SKILL_MCP_HTTP_TOKEN(_FILE) and SKILL_MCP_OAUTH_ISSUER are set; set one: the static token for a one-person setup, OAuth for a team (docs/hosting.md)',
    );
  }
  const approvalIssues: SettingIssue[] = [];
  const approval = readApprovalSettings(env, oauth ? 'oauth' : token !== undefined ? 'token' : 'none', approvalIssues);
  if (approvalIssues[0]) throw new HttpConfigError(approvalIssues.map((issue) => issue.message).join('\n'));
  // The page's own name: browsers post its forms with that Origin and reach it under that Host.
  const approvalHost = approval ? new URL(approval.origin).hostname.toLowerCase() : undefined;
  if (allowedHosts !== undefined && approvalHost !== undefined && !allowedHosts.includes(approvalHost))
    allowedHosts = [...allowedHosts, approvalHost];

  return {
    host,
    port,
    allowedHosts,
    allowedOrigins: [
      ...new Set([
        ...localhostAllowedOrigins(),
        ...list(env['SKILL_MCP_HTTP_ALLOWED_ORIGINS']),
        ...(approvalHost !== undefined ? [approvalHost] : []),
      ]),
    ],
    token,
    oauth,
    approval,
    logFormat: (() => {
      const issues: SettingIssue[] = [];
      const format = readValue(env['SKILL_MCP_LOG_FORMAT'], LOG_FORMAT, issues);
      if (issues[0]) throw new HttpConfigError(issues[0].message);
      return format;
    })(),
    // Default: room for a skill_run carrying the whole input allowance as base64 (a bad value of it is reported at start).
    maxBodyBytes: integer(
      'SKILL_MCP_HTTP_MAX_BODY_BYTES',
      env['SKILL_MCP_HTTP_MAX_BODY_BYTES'],
      messageCapFor(readVariable(env, RUN_INPUT_BYTES, [])),
      1024,
    ),
    maxConnections: integer('SKILL_MCP_HTTP_MAX_CONNECTIONS', env['SKILL_MCP_HTTP_MAX_CONNECTIONS'], 512, 1),
    maxConnectionsPerAddress: integer(
      'SKILL_MCP_HTTP_MAX_CONNECTIONS_PER_ADDRESS',
      env['SKILL_MCP_HTTP_MAX_CONNECTIONS_PER_ADDRESS'],
      0,
      0,
    ),
    trustedProxies: readTrustedProxies(env['SKILL_MCP_HTTP_TRUSTED_PROXIES']),
    headersTimeoutMs,
    requestTimeoutMs,
    // Longer than a client keeps an idle socket (Node's fetch: the server's hint less 1 s; a load
    // balancer: 60 s): a server closing a socket just as a client that was busy for a second reuses
    // it breaks that client's request (a large POST: EPIPE). An idle socket still counts toward maxConnections.
    keepAliveTimeoutMs: integer('SKILL_MCP_HTTP_KEEP_ALIVE_TIMEOUT_MS', env['SKILL_MCP_HTTP_KEEP_ALIVE_TIMEOUT_MS'], 65_000, 100),
    shutdownGraceMs: integer('SKILL_MCP_HTTP_SHUTDOWN_GRACE_MS', env['SKILL_MCP_HTTP_SHUTDOWN_GRACE_MS'], 30_000, 0),
    metrics,
    fastPath: readSwitch('SKILL_MCP_HTTP_FAST_PATH', env['SKILL_MCP_HTTP_FAST_PATH'], true),
  };
}

/** True when the bind address is reachable only from this machine (used to warn about no token). */
export function bindsLoopbackOnly(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
