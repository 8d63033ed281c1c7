/**
 * @module A run's secrets as re-derivation works them out (runner/requests/derive.ts), at every
 * prepare and every run: the granted bindings (shared/grant.ts) — shown to the person and bound by
 * the approval — are refused at a level whose egress does not go through the run's own proxy, then
 * each gets its value for this caller (source.ts; SECRET_MISSING otherwise) and a fresh placeholder
 * (placeholder.ts). Nothing here runs before those checks pass, and nothing leaves but names and hosts.
 */
import type { DeclaredSecret } from '../../shared/declaration-secrets.js';
import { ANY_CALLER, type Caller } from '../../shared/grant.js';
import type { IsolationLevel, WillRun } from '../../shared/protocol.js';
import type { EgressPlan } from '../egress/plan.js';
import type { RedactionValue, SecretBinding } from './binding.js';
import { makePlaceholder } from './placeholder.js';
import { readSecretValue } from './source.js';

export type SecretsPlan =
  | { ok: true; bindings: SecretBinding[]; redact: RedactionValue[] }
  | { ok: false; code: 'SANDBOX_UNAVAILABLE' | 'SECRET_MISSING'; reason: 'secrets-unavailable' | 'secret-missing'; message: string };

/** What the preview shows and the approval binds of each secret: never a value or a placeholder. */
export function shownSecrets(granted: readonly DeclaredSecret[]): NonNullable<WillRun['secrets']> {
  return granted.map(({ name, hosts, header, format }) => ({ name, hosts: [...hosts], header, format }));
}

/** The standalone self-grant warning for secrets (like the egress one), or undefined. */
export function secretsSelfGrantWarning(granted: readonly DeclaredSecret[]): string | undefined {
  if (granted.length === 0) return undefined;
  const what = granted.map((s) => `${s.name} to ${s.hosts.join(', ')}`).join('; ');
  return `No owner grant (standalone): the run's proxy sends your secret values (${what}) because the skill's own declaration asks; the script holds placeholders only, but its requests to those hosts act with your credentials.`;
}

/**
 * The bindings of a run, or why it cannot have them. `caller` ANY_CALLER (describe, "for someone")
 * reads no value: only the level is checked. Security: never a fallback that hands the value to the
 * script — at a level without the run's own proxy a script declaring secrets does not run at all.
 */
export function planSecrets(input: {
  env: Readonly<Record<string, string | undefined>>;
  caller: Caller;
  granted: readonly DeclaredSecret[];
  egress: EgressPlan;
  isolation: IsolationLevel;
  what: string;
}): SecretsPlan {
  const { granted, egress } = input;
  if (granted.length === 0) return { ok: true, bindings: [], redact: [] };
  const names = granted.map((s) => s.name).join(', ');
  if (egress.mode !== 'proxy') {
    const why = egress.note ?? `its egress is ${egress.mode}`;
    return {
      ok: false,
      code: 'SANDBOX_UNAVAILABLE',
      reason: 'secrets-unavailable',
      message: `${input.what} uses secrets (${names}), which only a run whose every connection goes through its own egress proxy may use (isolation namespace or namespace-uid, with bubblewrap); at this isolation level (${input.isolation}) that is not so (${why}). The value is never handed to the script instead, so it does not run here; skill-mcp doctor says what the machine lacks.`,
    };
  }
  if (input.caller === ANY_CALLER) return { ok: true, bindings: [], redact: [] };
  const subject = input.caller?.subject;
  const bindings: SecretBinding[] = [];
  for (const secret of granted) {
    const value = readSecretValue(input.env, secret.name, subject);
    if (!value.ok) {
      return {
        ok: false,
        code: 'SECRET_MISSING',
        reason: 'secret-missing',
        message: `${input.what} needs the secret ${secret.name}, which has no usable value: ${value.why}. Nothing ran.`,
      };
    }
    bindings.push({
      name: secret.name,
      hosts: [...secret.hosts],
      header: secret.header,
      format: secret.format,
      placeholder: makePlaceholder(),
      value: value.value,
    });
  }
  return { ok: true, bindings, redact: bindings.map((b) => ({ name: b.name, value: b.value })) };
}
