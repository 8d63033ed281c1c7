/**
 * @module Request rules of an egress entry (docs/egress-rules.md): `{host, allow: [{method, path}]}`
 * lets a run's scripts make only the listed HTTP calls to that host. Parsed strictly here, by the
 * declaration parser wherever it was written; matched by the run's helper (runner/helper/rules.ts).
 * A path pattern is in normal form (`/` first, no empty, `.` or `..` segment, no `%2e`, `%2f`,
 * `%5c` or `%25`); `*` stands for one segment and `**` for any number, each a whole segment.
 */
import { entryCovers, parseEgressEntry } from './egress.js';
import type { JsonValue } from './frontmatter.js';

export interface EgressRule {
  /** Upper case, sorted, without duplicates. */
  methods: string[];
  path: string;
}

/** The rules of one egress entry (its canonical text, shared/egress.ts). */
export interface EgressRuleSet {
  entry: string;
  allow: EgressRule[];
}

/** More rules than this on one host is not a list a person reviews. */
export const MAX_RULES_PER_ENTRY = 64;
const MAX_PATH_CHARS = 512;
const METHOD = /^[A-Z]{1,20}$/;
/** One literal segment: RFC 3986 pchar, percent-encoding in upper-case hex. */
const SEGMENT = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-F]{2})+$/;
/** Security: encoded dots, slashes, backslashes and percents are what a server may decode into another path. */
const ENCODED_SEPARATOR = /%(?:2[EeFf5]|5[Cc])/;

/** Why `path` is not a pattern in normal form, or undefined. */
export function pathPatternProblem(path: string): string | undefined {
  const shown = JSON.stringify(path);
  if (!path.startsWith('/') || path.length > MAX_PATH_CHARS) return `${shown} must start with "/" (at most ${MAX_PATH_CHARS} characters)`;
  if (ENCODED_SEPARATOR.test(path)) return `${shown} encodes ".", "/", "\\" or "%"; write the path as it is sent, in normal form`;
  const segments = path.slice(1).split('/');
  for (const [i, s] of segments.entries()) {
    if (s === '*' || s === '**' || (s === '' && i === segments.length - 1)) continue;
    if (s === '' || s === '.' || s === '..') return `${shown} is not in normal form (no empty, "." or ".." segment)`;
    if (s.includes('*')) return `${shown}: "*" and "**" stand for whole segments ("/v1/*/items")`;
    if (!SEGMENT.test(s)) return `${shown}: a segment holds a character a path does not (percent-encode it, upper-case hex)`;
  }
  return undefined;
}

/** Reads `allow` of an egress entry `at` (e.g. `mcp-host.egress[0].allow`); `why` says what to write instead. */
export function parseAllow(allow: JsonValue | undefined, at: string): { ok: true; rules: EgressRule[] } | { ok: false; why: string } {
  if (!Array.isArray(allow) || allow.length === 0 || allow.length > MAX_RULES_PER_ENTRY)
    return { ok: false, why: `${at} must list 1 to ${MAX_RULES_PER_ENTRY} rules ({ method: GET, path: "/v1/items/*" })` };
  const rules: EgressRule[] = [];
  for (const [i, row] of allow.entries()) {
    const here = `${at}[${i}]`;
    if (row === null || typeof row !== 'object' || Array.isArray(row) || Object.keys(row).some((k) => k !== 'method' && k !== 'path'))
      return { ok: false, why: `${here} must be a mapping of method and path only` };
    const method = row['method'];
    const methods = typeof method === 'string' ? [method] : method;
    if (!Array.isArray(methods) || methods.length === 0 || !methods.every((m): m is string => typeof m === 'string' && METHOD.test(m)))
      return { ok: false, why: `${here}.method must be a method or a list of them, exact and upper case (GET, [POST, PUT])` };
    if (methods.includes('CONNECT')) return { ok: false, why: `${here}.method: CONNECT is never a request rule` };
    const path = row['path'];
    if (typeof path !== 'string') return { ok: false, why: `${here}.path must be a string ("/v1/items/*")` };
    const problem = pathPatternProblem(path);
    if (problem !== undefined) return { ok: false, why: `${here}.path ${problem}` };
    rules.push({ methods: [...new Set(methods)].sort(), path });
  }
  return { ok: true, rules };
}

/** A rule as the preview, the audit and a refusal write it: `GET,POST /v1/items/*`. */
export function formatRule(rule: EgressRule): string {
  return `${rule.methods.join(',')} ${rule.path}`;
}

/**
 * The rules of each of a run's entries (declared ∩ granted): those of the declared entry covering it.
 * Security: a declaration never has two overlapping entries where one has rules (shared/declaration.ts),
 * so a granted entry is covered by at most one entry with rules and cannot escape them through another.
 */
export function rulesFor(entries: readonly string[], declared: readonly EgressRuleSet[]): EgressRuleSet[] {
  return entries.flatMap((entry) => {
    const run = parseEgressEntry(entry);
    const set = declared.find((s) => {
      const wide = parseEgressEntry(s.entry);
      return run.ok && wide.ok && entryCovers(wide.value, run.value);
    });
    return set ? [{ entry, allow: set.allow }] : [];
  });
}
