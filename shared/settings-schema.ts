/**
 * @module How every setting is read (docs/architecture.md §2), by the front, the runner and the
 * tools alike: a variable is given to a zod schema, and a value the schema refuses is a
 * {@link SettingIssue} under the policy declared with the variable:
 *
 * - `stop`: the value decides who may connect, what may run or for how long, so no guess is safe.
 *   Every process that reads it refuses to start ({@link refuseToStart}) with the same message.
 * - `default`: the value only tunes (a limit, a page size). The default holds and the issue is
 *   reported (stderr at start, a `config` problem in `skill_list`).
 *
 * Unset and empty mean "not set" for every variable.
 */
import { z } from 'zod';

export type BadValuePolicy = 'stop' | 'default';

export interface SettingIssue {
  /** The variable (or flag) as the operator wrote it. */
  variable: string;
  policy: BadValuePolicy;
  /** Names the variable, its value (never a secret's), the expected form and what happens now. */
  message: string;
}

export interface VariableSpec<T> {
  name: string;
  /** Parses the raw string; refusing it is a bad value. */
  schema: z.ZodType<T, string>;
  /** The expected form, after "is not": "a positive integer", "at least 32 characters". */
  expected: string;
  fallback: T;
  policy: BadValuePolicy;
  /** Security: the value is key material; a message shows its length, never the value. */
  secret?: boolean;
  /** How the fallback reads in "using ..." when `String(fallback)` would not say it. */
  fallbackText?: string;
}

/** A whole number in decimal digits (no sign, exponent or hex), from `min` to `max`. */
export function wholeNumber(min: number, max: number = Number.MAX_SAFE_INTEGER): z.ZodType<number, string> {
  return z.string().regex(/^\d+$/).transform(Number).pipe(z.number().int().min(min).max(max));
}

function badValueMessage(spec: VariableSpec<unknown>, shownAs: string, raw: string): string {
  const value = spec.secret ? ` (a value of ${raw.length} characters)` : `=${JSON.stringify(raw)}`;
  const consequence =
    spec.policy === 'stop' ? 'skill-mcp does not start with it: fix or unset it' : `using ${spec.fallbackText ?? String(spec.fallback)}`;
  return `${shownAs}${value} is not ${spec.expected}; ${consequence}`;
}

/**
 * The value of one variable: parsed, or its fallback when unset, empty or refused (then an issue
 * is pushed). `raw` is passed in so a flag can stand in for its variable (`shownAs` names it).
 */
export function readValue<T>(raw: string | undefined, spec: VariableSpec<T>, issues: SettingIssue[], shownAs: string = spec.name): T {
  if (raw === undefined || raw === '') return spec.fallback;
  const parsed = spec.schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  issues.push({ variable: shownAs, policy: spec.policy, message: badValueMessage(spec, shownAs, raw) });
  return spec.fallback;
}

/** {@link readValue} of `env[spec.name]`. */
export function readVariable<T>(env: Readonly<Record<string, string | undefined>>, spec: VariableSpec<T>, issues: SettingIssue[]): T {
  return readValue(env[spec.name], spec, issues);
}

/** A configuration this process must not start with. The message lists every `stop` issue. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code = 'CONFIG';
  constructor(readonly issues: readonly SettingIssue[]) {
    super(issues.map((issue) => issue.message).join('\n'));
  }
}

/** Throws {@link ConfigError} when any issue has the `stop` policy; returns the others (to report). */
export function refuseToStart(issues: readonly SettingIssue[]): SettingIssue[] {
  const stop = issues.filter((issue) => issue.policy === 'stop');
  if (stop.length > 0) throw new ConfigError(stop);
  return issues.filter((issue) => issue.policy !== 'stop');
}

/** True for a host name that only reaches this machine (plain http is acceptable only there). */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * An absolute URL with no query or fragment, https — or plain http to a loopback host only.
 * Security: an issuer or audience over plain http elsewhere would let anyone on the path swap the
 * keys tokens are checked with, or read the tokens.
 */
export function secureUrl(): z.ZodType<string, string> {
  return z.string().refine((raw) => {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return false;
    }
    if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') return false;
    return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname));
  });
}
