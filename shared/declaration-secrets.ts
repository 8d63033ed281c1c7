/**
 * @module The `secrets` key of a declaration (docs/secrets.md, "Declaring"): a credential named by
 * where it goes — `[{name, hosts, header?, format?}]`. The script gets `name` holding a placeholder;
 * the run's egress proxy puts the value into `header` (as `format`) of requests to `hosts` only.
 * Pure: shared/declaration.ts calls {@link parseSecrets} wherever the declaration was written, and
 * what it refuses costs the skill its scripts (like a malformed egress entry), never a guess.
 */
import { entryCovers, formatEgressEntry, MAX_EGRESS_ENTRIES, parseEgressEntry, parseEgressList } from './egress.js';
import { FIXED_ENV, HOST_ENV } from './env.js';
import type { JsonValue } from './frontmatter.js';

export interface DeclaredSecret {
  /** The variable the script gets (holding a placeholder, never the value). */
  name: string;
  /** Canonical egress entries (shared/egress.ts), each covered by the declaration's `egress`, sorted. */
  hosts: string[];
  /** The request header the value goes in. */
  header: string;
  /** The header's value, `{value}` standing for the secret. */
  format: string;
}

export const DEFAULT_SECRET_HEADER = 'Authorization';
export const DEFAULT_SECRET_FORMAT = 'Bearer {value}';
/** More secrets than this is not a list a person reviews. */
export const MAX_SECRETS = 16;
export const MAX_SECRET_FORMAT_CHARS = 256;

/**
 * Variables a run's own machinery sets (the sandbox, the proxy, the run CA bundle): a secret of that
 * name would hand the script a placeholder where a path or URL belongs, or shadow what the runner sets.
 */
const RESERVED = new Set<string>([
  ...FIXED_ENV,
  ...HOST_ENV,
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'REQUESTS_CA_BUNDLE',
  'CURL_CA_BUNDLE',
  'PIP_CERT',
  'NODE_EXTRA_CA_CERTS',
  'GIT_SSL_CAINFO',
]);

/** An RFC 9110 field name (a token). */
const HEADER_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;

/**
 * Header names a secret may never be put in. Security: `Host` would re-route the request past the
 * proxy's policy; the framing headers (`Content-Length`, `Transfer-Encoding`, `Expect`, `TE`,
 * `Trailer`) would let the value reshape the request; hop-by-hop ones (`Connection`, `Keep-Alive`,
 * `Upgrade`, `Proxy-*`) are meant for the proxy itself, not the API. `Cookie` and `Set-Cookie`
 * carry many values the script composes, so "the declared header, in the declared format" could
 * not be held to; an API key goes in `Authorization` or an API's own header (`X-Api-Key`).
 */
const FORBIDDEN_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'cookie',
  'set-cookie',
]);

/** Why `header` cannot carry a secret, or undefined. */
export function secretHeaderProblem(header: string): string | undefined {
  if (!HEADER_TOKEN.test(header))
    return `${JSON.stringify(header)} is not a header name (letters, digits and !#$%&'*+.^_\`|~- only, at most 64)`;
  const lower = header.toLowerCase();
  if (FORBIDDEN_HEADERS.has(lower) || lower.startsWith('proxy-'))
    return `${JSON.stringify(header)} may not carry a secret (Host, framing, hop-by-hop, Proxy-* and Cookie headers never do; use Authorization or the API's own header)`;
  return undefined;
}

/**
 * Why `format` cannot be a header value, or undefined. Security: only visible ASCII and spaces
 * inside — a CR or LF would let the declaration start a header (or a request) of its own.
 */
export function secretFormatProblem(format: string): string | undefined {
  if (format.length === 0 || format.length > MAX_SECRET_FORMAT_CHARS) return `must be 1 to ${MAX_SECRET_FORMAT_CHARS} characters`;
  if (!/^[\x20-\x7e]+$/.test(format))
    return 'may hold visible ASCII characters and spaces only (no CR, LF, tab or other control characters)';
  if (format !== format.trim()) return 'may not start or end with a space';
  if (format.split('{value}').length !== 2) return 'must hold {value} exactly once (where the secret goes)';
  return undefined;
}

/** Why `name` cannot name a secret, or undefined (`isNeverGrantable` from shared/declaration.ts, passed in to keep the import one-way). */
export function secretNameProblem(name: string, neverGrantable: (name: string) => boolean): string | undefined {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(name)) return `${JSON.stringify(name)} is not a variable name`;
  if (neverGrantable(name)) return `${name} is a variable no script may ever be given (loader, runtime or skill-mcp's own)`;
  if (RESERVED.has(name)) return `${name} is set by the run itself (sandbox, proxy or CA bundle) and cannot be a secret`;
  return undefined;
}

function isRecord(value: unknown): value is Record<string, JsonValue> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export type SecretsParse = { ok: true; secrets: DeclaredSecret[]; unknown: string[] } | { ok: false; why: string; unknown: string[] };

const SECRET_KEYS = new Set(['name', 'hosts', 'header', 'format']);

/**
 * The `secrets` block. `egress`: the declaration's own (canonical) entries, which must cover every
 * host; `taken`: the names of its `env` proposals and every script's `env`, which a secret may not
 * share (the legacy path would hand that name's real value to the script).
 */
export function parseSecrets(
  block: JsonValue | undefined,
  at: string,
  egress: readonly string[],
  taken: ReadonlySet<string>,
  neverGrantable: (name: string) => boolean,
): SecretsParse {
  const unknown: string[] = [];
  const fail = (why: string): SecretsParse => ({ ok: false, why, unknown });
  if (block === undefined || block === null) return { ok: true, secrets: [], unknown };
  if (!Array.isArray(block)) return fail(`${at} must be a list of {name, hosts, header?, format?}`);
  if (block.length > MAX_SECRETS) return fail(`${at} lists ${block.length} secrets; at most ${MAX_SECRETS}`);
  const declared = parseEgressList(egress);
  const secrets: DeclaredSecret[] = [];
  for (const [i, row] of block.entries()) {
    const here = `${at}[${i}]`;
    if (!isRecord(row)) return fail(`${here} must be a mapping {name, hosts, header?, format?}`);
    for (const key of Object.keys(row)) if (!SECRET_KEYS.has(key)) unknown.push(`${here}.${key}`);
    const name = row['name'];
    if (typeof name !== 'string') return fail(`${here}.name must be a variable name`);
    const nameWhy = secretNameProblem(name, neverGrantable);
    if (nameWhy !== undefined) return fail(`${here}.name: ${nameWhy}`);
    if (secrets.some((s) => s.name === name)) return fail(`${here}.name ${name} is declared twice`);
    if (taken.has(name))
      return fail(
        `${here}.name ${name} is also asked for as a plain variable (env); a secret's name may not be, or its real value would reach the script`,
      );
    const hosts = row['hosts'];
    // Security: a secret with nowhere to go is refused, never read as "every host".
    if (!Array.isArray(hosts) || hosts.length === 0)
      return fail(`${here}.hosts must list the hosts ${name} is sent to (each also in egress)`);
    if (hosts.length > MAX_EGRESS_ENTRIES) return fail(`${here}.hosts lists ${hosts.length} hosts; at most ${MAX_EGRESS_ENTRIES}`);
    const canonical = new Set<string>();
    for (const [j, host] of hosts.entries()) {
      if (typeof host !== 'string') return fail(`${here}.hosts[${j}] must be a string (host, host:port or *.domain)`);
      const parsed = parseEgressEntry(host);
      if (!parsed.ok) return fail(`${here}.hosts[${j}] ${parsed.why}`);
      // Security: the value goes only where the declaration also lets the run connect.
      if (!declared.some((entry) => entryCovers(entry, parsed.value)))
        return fail(
          `${here}.hosts[${j}] ${JSON.stringify(host)} is not covered by the declaration's egress; every host a secret goes to must also be declared in egress`,
        );
      canonical.add(formatEgressEntry(parsed.value));
    }
    const header = row['header'] ?? DEFAULT_SECRET_HEADER;
    if (typeof header !== 'string') return fail(`${here}.header must be a header name`);
    const headerWhy = secretHeaderProblem(header);
    if (headerWhy !== undefined) return fail(`${here}.header ${headerWhy}`);
    const format = row['format'] ?? DEFAULT_SECRET_FORMAT;
    if (typeof format !== 'string') return fail(`${here}.format must be a string holding {value}`);
    const formatWhy = secretFormatProblem(format);
    if (formatWhy !== undefined) return fail(`${here}.format ${formatWhy}`);
    secrets.push({ name, hosts: [...canonical].sort(), header, format });
  }
  return { ok: true, secrets: secrets.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)), unknown };
}
