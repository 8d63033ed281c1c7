/**
 * @module The runner's Redis settings (`SKILL_MCP_REDIS_*`, docs/hosting.md), also used by
 * `skill-mcp audit --redis URL`. Only `redis://` and `rediss://` URLs, parsed here into explicit
 * connection options: a malformed value stops the runner with a message naming the variable, and
 * the URL (which may hold a password) is only ever shown redacted.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { SkillMcpError } from '../../shared/errors.js';

export interface RedisTarget {
  host: string;
  port: number;
  username?: string;
  password?: string;
  db: number;
  tls: boolean;
  /** For logs and messages: `rediss://host:port/db`, never the credentials. */
  display: string;
}

export interface RedisSettings {
  target: RedisTarget;
  /** Every command's deadline; past it the outcome counts as unknown (LEDGER_UNAVAILABLE). */
  timeoutMs: number;
  /** Key prefix, so deployments may share one Redis: `<prefix>spent:<jti>`, `<prefix>audit`. */
  prefix: string;
  /** PEM of the CA that signed a `rediss://` server's certificate (default: the system's CAs). */
  ca?: string;
  /** This runner's audit log's name in the shared stream. */
  hostId: string;
}

export const DEFAULT_TIMEOUT_MS = 2000;
const PREFIX = /^[A-Za-z0-9:_.-]{1,64}$/;
const HOST_ID = /^[A-Za-z0-9._:@/-]{1,128}$/;

function bad(message: string): never {
  throw new SkillMcpError('BAD_REQUEST', message);
}

/**
 * Parses a `redis://[user[:password]@]host[:port][/db]` or `rediss://...` URL. Security: a query
 * string is refused rather than handed to the client library, which would read it as options
 * (turning TLS checks off, for one).
 */
export function parseRedisUrl(raw: string, name = 'SKILL_MCP_REDIS_URL'): RedisTarget {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return bad(`${name} is not a URL; use redis://[user:password@]host[:port][/db] or rediss://... for TLS`);
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') bad(`${name} must start with redis:// or rediss:// (not ${url.protocol}//)`);
  if (url.search !== '' || url.hash !== '') bad(`${name} may not carry ?options or #fragments; use the SKILL_MCP_REDIS_* variables`);
  if (url.hostname === '') bad(`${name} names no host`);
  const port = url.port === '' ? 6379 : Number(url.port);
  const dbText = url.pathname.replace(/^\//, '');
  const db = dbText === '' ? 0 : Number(dbText);
  if (!Number.isSafeInteger(db) || db < 0 || db > 65535 || !/^\d*$/.test(dbText))
    bad(`${name}: the path must be a database number (/0, /1, ...)`);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const tls = url.protocol === 'rediss:';
  return {
    host,
    port,
    db,
    tls,
    ...(url.username !== '' ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password !== '' ? { password: decodeURIComponent(url.password) } : {}),
    display: `${url.protocol}//${url.host}/${db}`,
  };
}

function int(env: Readonly<Record<string, string | undefined>>, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min || value > max)
    bad(`${name}=${JSON.stringify(raw)} must be an integer from ${min} to ${max}`);
  return value;
}

/** The default host id: this machine's name and a short hash of the log's path (two logs on one host differ). */
export function defaultHostId(auditPath: string): string {
  const name =
    hostname()
      .replace(/[^A-Za-z0-9._-]/g, '_')
      .slice(0, 100) || 'host';
  return `${name}:${createHash('sha256').update(auditPath).digest('hex').slice(0, 8)}`;
}

/** The runner's Redis settings, or undefined when `SKILL_MCP_REDIS_URL` is unset (the file ledger). */
export function readRedisSettings(env: Readonly<Record<string, string | undefined>>, auditPath: string): RedisSettings | undefined {
  const raw = env['SKILL_MCP_REDIS_URL'];
  if (raw === undefined || raw === '') return undefined;
  const target = parseRedisUrl(raw);
  const prefix = env['SKILL_MCP_REDIS_PREFIX'] || 'skill-mcp:';
  if (!PREFIX.test(prefix)) bad('SKILL_MCP_REDIS_PREFIX may hold 1 to 64 of A-Z a-z 0-9 : _ . -');
  const hostId = env['SKILL_MCP_AUDIT_HOST_ID'] || defaultHostId(auditPath);
  if (!HOST_ID.test(hostId)) bad('SKILL_MCP_AUDIT_HOST_ID may hold 1 to 128 of A-Z a-z 0-9 . _ : @ / -');
  const caFile = env['SKILL_MCP_REDIS_CA_FILE'];
  let ca: string | undefined;
  if (caFile) {
    if (!target.tls) bad('SKILL_MCP_REDIS_CA_FILE is set but SKILL_MCP_REDIS_URL is not rediss://');
    try {
      ca = readFileSync(caFile, 'utf8');
    } catch (error) {
      bad(`SKILL_MCP_REDIS_CA_FILE cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  return {
    target,
    timeoutMs: int(env, 'SKILL_MCP_REDIS_TIMEOUT_MS', DEFAULT_TIMEOUT_MS, 50, 60_000),
    prefix,
    hostId,
    ...(ca !== undefined ? { ca } : {}),
  };
}
