/**
 * @module Request rules of an egress entry (docs/egress-rules.md): `{host, allow: [{method, path}]}`
 * lets a run's scripts make only the listed HTTP calls to that host. Parsed strictly here, by the
 * declaration parser wherever it was written; matched by the run's helper (runner/helper/rules.ts).
 * A path pattern is in normal form (`/` first, no empty, `.` or `..` segment, no `%2e`, `%2f`,
 * `%5c` or `%25`); `*` stands for one segment and `**` for any number, each a whole segment.
 */
import { z } from 'zod';
import type { JsonValue } from './frontmatter.js';
import type { EgressRuleSet } from './protocol.js';

/** The rules of one egress entry (its canonical text, shared/egress.ts): `methods` upper case, sorted, without duplicates. */
export type { EgressRuleSet };
export type EgressRule = EgressRuleSet['allow'][number];

/** More rules than this on one host is not a list a person reviews. */
export const MAX_RULES_PER_ENTRY = 64;
/** One literal segment: RFC 3986 pchar, percent-encoding in upper-case hex. */
const SEGMENT = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-F]{2})+$/;

/** Why `path` is not a pattern in normal form, or undefined. */
export function pathPatternProblem(path: string): string | undefined {
  if (!path.startsWith('/') || path.length > 512) return 'must start with "/" (at most 512 characters)';
  // Security: encoded dots, slashes, backslashes and percents are what a server may decode into another path.
  if (/%(?:2[EeFf5]|5[Cc])/.test(path)) return 'encodes ".", "/", "\\" or "%"; write the path as it is sent, in normal form';
  const segments = path.slice(1).split('/');
  const bad = segments.find(
    (s, i) => !(s === '*' || s === '**' || (s === '' && i === segments.length - 1)) && (/^\.{0,2}$|\*/.test(s) || !SEGMENT.test(s)),
  );
  if (bad === undefined) return undefined;
  if (bad === '' || bad === '.' || bad === '..') return 'is not in normal form (no empty, "." or ".." segment)';
  if (bad.includes('*')) return 'has "*" inside a segment; "*" and "**" stand for whole segments ("/v1/*/items")';
  return 'holds a character a path does not (percent-encode it, upper-case hex)';
}

const METHOD = z
  .string()
  .regex(/^[A-Z]{1,20}$/, 'a method is exact and upper case (GET, [POST, PUT])')
  .refine((m) => m !== 'CONNECT', 'CONNECT is never a request rule');
const PATH = z.string().refine((p) => pathPatternProblem(p) === undefined, {
  error: (i) => `${JSON.stringify(i.input)} ${pathPatternProblem(String(i.input))}`,
});
const RULES = z
  .array(z.strictObject({ method: z.union([METHOD, z.array(METHOD).min(1, 'list at least one method')]), path: PATH }))
  .min(1)
  .max(MAX_RULES_PER_ENTRY);

/** Reads `allow` of an egress entry `at` (e.g. `mcp-host.egress[0].allow`); `why` says what to write instead. */
export function parseAllow(allow: JsonValue | undefined, at: string): { ok: true; rules: EgressRule[] } | { ok: false; why: string } {
  const read = RULES.safeParse(allow);
  const issue = read.error?.issues[0];
  if (issue) {
    const where = issue.path.map((k) => (typeof k === 'number' ? `[${k}]` : `.${String(k)}`)).join('');
    if (where !== '') return { ok: false, why: `${at}${where}: ${issue.message}` };
    return { ok: false, why: `${at} must list 1 to ${MAX_RULES_PER_ENTRY} rules ({ method: GET, path: "/v1/items/*" })` };
  }
  return { ok: true, rules: read.data!.map((r) => ({ methods: [...new Set([r.method].flat())].sort(), path: r.path })) };
}

/** A rule as the preview, the audit and a refusal write it: `GET,POST /v1/items/*`. */
export function formatRule(rule: EgressRule): string {
  return `${rule.methods.join(',')} ${rule.path}`;
}
