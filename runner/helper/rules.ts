/**
 * @module The request policy of a host with rules (docs/egress-rules.md): may this one HTTP request,
 * as the script wrote it, go on? Pure, so every ambiguity is tested by name
 * (test/runner/egress-rules-match.test.ts). The proxy (intercept.ts for HTTPS, proxy.ts for plain
 * HTTP) asks it for every request on such a host and forwards exactly the bytes it judged: nothing
 * is rewritten into a form the rules did not see.
 */
import { entryCovers, parseEgressList } from '../../shared/egress.js';
import { formatRule } from '../../shared/egress-rules.js';
import type { EgressRuleSet } from '../../shared/egress-rules.js';

/** Why a request was refused (its audit line's `reason`). */
export const REQUEST_REFUSALS = [
  'no-rule',
  'path-not-normal',
  'not-origin-form',
  'host-mismatch',
  'framing',
  'upgrade',
  'after-refusal',
  'malformed',
] as const;
export type RequestRefusal = (typeof REQUEST_REFUSALS)[number];

/** One request as the parser read it. */
export interface RequestFacts {
  method: string;
  /** The request-target as sent (not decoded, not normalised). */
  target: string;
  /** Node's `rawHeaders`: every header, duplicates kept. */
  rawHeaders: readonly string[];
}

/** Where the connection goes: `host` bare (an IPv6 address without brackets), its port and the scheme's default port. */
export interface Authority {
  host: string;
  port: number;
  defaultPort: number;
}

export type Verdict = { allowed: true; rule: string } | { allowed: false; reason: RequestRefusal; why: string };

/** A path character: RFC 3986 pchar, or "/" between segments. */
const PATH_CHARS = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*$/;

/**
 * Why `path` (no query) is not in normal form, or undefined.
 * Security: what the rules match must be what the host reads. A server that resolves dot segments,
 * decodes `%2e`/`%2f`/`%5c` (or a double-encoded `%25…`) into separators, folds duplicate slashes or
 * reads `\` as `/` would route `/v1/items/../admin` to `/v1/admin`; such a path is refused, never
 * rewritten (a rewrite is a second parser the host does not share).
 */
export function pathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return 'the path does not start with "/"';
  if (!PATH_CHARS.test(path)) return 'the path holds a character outside a path or a malformed percent-encoding';
  if (/%(?:2[EeFf5]|5[Cc])/.test(path)) return 'the path percent-encodes ".", "/", "\\" or "%"';
  if (path.includes('//')) return 'the path has duplicate slashes';
  if (/\/\.\.?(?:\/|$)/.test(path)) return 'the path has a "." or ".." segment';
  return undefined;
}

/**
 * Whether a path in normal form matches a pattern: segments compared exactly (case and
 * percent-encoding as written); `*` is one non-empty segment, `**` zero or more of any.
 * Security: a table over (pattern segment, path segment), linear in each, so no pattern of `**`s
 * can make a long path cost the helper exponential time.
 */
export function pathMatches(pattern: string, path: string): boolean {
  const want = pattern.slice(1).split('/');
  const have = path.slice(1).split('/');
  let reach = Array.from({ length: have.length + 1 }, (_, j) => j === 0);
  for (const seg of want) {
    const next = new Array<boolean>(have.length + 1).fill(false);
    let any = false;
    for (let j = 0; j <= have.length; j += 1) {
      if (seg === '**') {
        any ||= reach[j]!;
        next[j] = any;
      } else if (j > 0 && reach[j - 1]) next[j] = seg === '*' ? have[j - 1] !== '' : seg === have[j - 1];
    }
    reach = next;
  }
  return reach[have.length]!;
}

/** The values of header `name` (lower case) in `raw`. */
function values(raw: readonly string[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === name) out.push(raw[i + 1]!);
  return out;
}

/** `host` or `host:port` as a Host header writes it. */
function hostForms(to: Authority): string[] {
  const host = to.host.includes(':') ? `[${to.host}]` : to.host;
  return to.port === to.defaultPort ? [host, `${host}:${to.port}`] : [`${host}:${to.port}`];
}

/** Judges one request on a host with rules; the first reason found wins. */
export function checkRequest(set: EgressRuleSet, to: Authority, req: RequestFacts): Verdict {
  const refuse = (reason: RequestRefusal, why: string): Verdict => ({ allowed: false, reason, why });
  // Security: only origin-form ("/path"): an absolute-form URL names a host the rules were not asked about,
  // `*` (OPTIONS, the HTTP/2 preface's PRI) and authority-form name none.
  if (!req.target.startsWith('/')) return refuse('not-origin-form', 'the request target is not a path ("/…")');
  // Security: exactly one Host, naming this connection's host: a virtual host behind the same address is another API.
  const hosts = values(req.rawHeaders, 'host');
  if (hosts.length !== 1 || !hostForms(to).includes(hosts[0]!.trim().toLowerCase()))
    return refuse('host-mismatch', `the Host header is not ${hostForms(to)[0]}`);
  // Security: a body framed two ways is read one way here and maybe the other way upstream (request smuggling).
  const lengths = values(req.rawHeaders, 'content-length');
  const codings = values(req.rawHeaders, 'transfer-encoding');
  if (lengths.length > 1 || (codings.length > 0 && (lengths.length > 0 || codings.join(',').trim().toLowerCase() !== 'chunked')))
    return refuse('framing', 'the body is framed ambiguously (Content-Length with Transfer-Encoding, or either twice)');
  // Security: after an upgrade the connection carries a protocol the rules cannot read.
  if (values(req.rawHeaders, 'upgrade').length > 0 || values(req.rawHeaders, 'http2-settings').length > 0)
    return refuse('upgrade', 'the request asks for a protocol upgrade');
  const query = req.target.indexOf('?');
  const path = query === -1 ? req.target : req.target.slice(0, query);
  const problem = pathProblem(path);
  if (problem !== undefined) return refuse('path-not-normal', `${problem}; send the path in normal form`);
  const rule = set.allow.find((r) => r.methods.includes(req.method) && pathMatches(r.path, path));
  return rule ? { allowed: true, rule: formatRule(rule) } : refuse('no-rule', `no rule allows ${req.method} ${path.slice(0, 200)}`);
}

/**
 * The rules for a connection allowed by `entry` (a run entry: declared ∩ granted): those of the
 * declared entry covering it. Security: a declaration never has two overlapping entries where one
 * has rules (shared/declaration.ts), so at most one set covers a run entry and none can be escaped
 * through another entry.
 */
export function rulesCovering(sets: readonly EgressRuleSet[], entry: string): EgressRuleSet | undefined {
  const [run] = parseEgressList([entry]);
  return sets.find((s) => run !== undefined && parseEgressList([s.entry]).some((wide) => entryCovers(wide, run)));
}

/** The 403's body: what was refused and the rule set it was judged by, so a script and its user see why. */
export function refusalMessage(set: EgressRuleSet, why: string): string {
  return `skill-mcp egress proxy: refused by the request rules of ${set.entry}: ${why}. They allow: ${set.allow.map(formatRule).join('; ')}. A request the skill needs must be in its mcp-host.egress rules for ${set.entry}; then the person approves the run again.`;
}

/** The whole 403 as raw bytes, for a connection the HTTP server could not parse a request of. */
export function refusalResponse(message: string): string {
  const body = `${message}\n`;
  return `HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Skill-Mcp-Egress: refused\r\nConnection: close\r\n\r\n${body}`;
}
