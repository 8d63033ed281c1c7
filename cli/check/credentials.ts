/**
 * @module Credentials shipped inside a skill: every served file goes to every client that reads the
 * skill, so a key in it is published. Known shapes (private key blocks, cloud key ids, service
 * tokens) are matched exactly; other secrets only by a heuristic — a high-entropy value assigned
 * to a secret-like name. Findings never repeat the secret: they show a redacted prefix and the
 * length. Pure.
 */
import type { Hit } from './finding.js';
import { LineIndex } from './text.js';

/** Shannon entropy (bits per character) at or above which an assigned value looks random. */
export const ENTROPY_THRESHOLD_BITS = 3.5;
/** Shorter values are not judged: too few characters for entropy to mean anything. */
export const ENTROPY_MIN_LENGTH = 16;

interface Pattern {
  ruleId: 'credential/private-key' | 'credential/cloud-key' | 'credential/service-token';
  what: string;
  regex: RegExp;
  /** Characters of the match that are safe to show (a fixed prefix, never secret material). */
  shown: (match: string) => number;
}

const PATTERNS: Pattern[] = [
  // The header names the key type and holds no key material: it is shown whole.
  { ruleId: 'credential/private-key', what: 'a private key block', regex: /-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----/g, shown: (m) => m.length },
  { ruleId: 'credential/cloud-key', what: 'an AWS access key id', regex: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, shown: () => 4 },
  { ruleId: 'credential/service-token', what: 'a GitHub token', regex: /\bgh[pousr]_[A-Za-z0-9]{36,}\b/g, shown: () => 4 },
  { ruleId: 'credential/service-token', what: 'a GitHub fine-grained token', regex: /\bgithub_pat_[A-Za-z0-9_]{22,}/g, shown: () => 11 },
  { ruleId: 'credential/service-token', what: 'a Slack token', regex: /\bxox[baprs]-[A-Za-z0-9-]{10,}/g, shown: () => 5 },
  { ruleId: 'credential/service-token', what: 'an Anthropic API key', regex: /\bsk-ant-[A-Za-z0-9_-]{20,}/g, shown: () => 7 },
  // OpenAI-style `sk-` keys; the tail must mix letters and digits, so `sk-learn-...` prose is not one.
  { ruleId: 'credential/service-token', what: 'an OpenAI-style API key', regex: /\bsk-(?!ant-)(?:proj-|svcacct-)?(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{20,}/g, shown: () => 3 },
  { ruleId: 'credential/service-token', what: 'a Stripe live key', regex: /\b[sr]k_live_[A-Za-z0-9]{20,}/g, shown: () => 8 },
  { ruleId: 'credential/service-token', what: 'a Google API key', regex: /\bAIza[0-9A-Za-z_-]{35}\b/g, shown: () => 4 },
];

const SECRET_NAME = /secret|token|passw(?:or)?d|pwd|api[_-]?key|access[_-]?key|auth[_-]?key|private[_-]?key|credential/i;
/** `name = value`, `name: value`, `"name": "value"`, `name => value`. */
const ASSIGNMENT = /([A-Za-z_][A-Za-z0-9_.-]*)["']?\s*(?::|=>?|:=)\s*(["'`]?)([^\s"'`,;]+)\2?/g;
/** Values that name a secret rather than hold one. */
const REFERENCE = /^[$<{%]|process\.env|os\.environ|getenv|ENV\[|secrets\.|example|placeholder|changeme|x{6,}/i;

/** Shannon entropy of `value` in bits per character. */
export function shannonEntropy(value: string): number {
  const counts = new Map<string, number>();
  const chars = [...value];
  for (const c of chars) counts.set(c, (counts.get(c) ?? 0) + 1);
  let bits = 0;
  for (const n of counts.values()) {
    const p = n / chars.length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

/** `prefix…` and the length: enough to find the value, never enough to use it. */
export function redact(value: string, shown: number): string {
  return `"${value.slice(0, shown)}…" (${value.length} characters)`;
}

/** Every credential in `text`, each once (a known shape wins over the entropy heuristic). */
export function findCredentials(text: string): Hit[] {
  const lines = new LineIndex(text);
  const hits: Hit[] = [];
  const taken: [number, number][] = [];
  for (const pattern of PATTERNS) {
    for (const match of text.matchAll(pattern.regex)) {
      const value = match[0];
      // Documentation keys (AWS's AKIAIOSFODNN7EXAMPLE) are not secrets.
      if (/EXAMPLE/i.test(value)) continue;
      const start = match.index;
      if (taken.some(([s, e]) => start < e && start + value.length > s)) continue;
      taken.push([start, start + value.length]);
      const shown = pattern.shown(value);
      const message = shown >= value.length ? `${pattern.what} (${value}) is shipped with the skill` : `${pattern.what} ${redact(value, shown)} is shipped with the skill`;
      hits.push({ ruleId: pattern.ruleId, message, ...lines.at(start) });
    }
  }
  for (const match of text.matchAll(ASSIGNMENT)) {
    const [, name, , value] = match as unknown as [string, string, string, string];
    if (!SECRET_NAME.test(name) || value.length < ENTROPY_MIN_LENGTH) continue;
    if (REFERENCE.test(value) || !/\d/.test(value) || !/[A-Za-z]/.test(value)) continue;
    const start = match.index + match[0].lastIndexOf(value);
    if (taken.some(([s, e]) => start < e && start + value.length > s)) continue;
    const bits = shannonEntropy(value);
    if (bits < ENTROPY_THRESHOLD_BITS) continue;
    taken.push([start, start + value.length]);
    hits.push({
      ruleId: 'credential/high-entropy',
      message: `"${name}" is assigned a random-looking value ${redact(value, 3)}: ${bits.toFixed(2)} bits per character, at or over the ${ENTROPY_THRESHOLD_BITS} threshold`,
      ...lines.at(start),
    });
  }
  return hits;
}
