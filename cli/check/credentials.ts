/**
 * @module Credentials shipped inside a skill: every served file goes to every client that reads the
 * skill, so a key in it is published. Known shapes (private key blocks, cloud key ids, service
 * tokens) are matched exactly; other secrets only by a heuristic — a high-entropy value assigned
 * to a secret-like name. Findings never repeat the secret: they show a redacted prefix and the
 * length. Pure.
 */
import type { Hit } from './finding.js';
import { assignments } from './assignments.js';
import { LineIndex } from './text.js';

/** Shannon entropy (bits per character) at or above which an assigned value looks random. */
export const ENTROPY_THRESHOLD_BITS = 3.5;
/** Shorter values are not judged: too few characters for entropy to mean anything. */
export const ENTROPY_MIN_LENGTH = 16;

interface Pattern {
  ruleId: 'credential/private-key' | 'credential/cloud-key' | 'credential/service-token';
  what: string;
  /** Global, and bounded: an open-ended run (`{20,}`) is matched to its minimum here, then `tail` extends it. */
  regex: RegExp;
  /**
   * Sticky `[class]*` continuing the match to the end of its run, where the pattern would say
   * `{n,}`: V8 keeps a backtracking entry per character of an open-ended run and overflows its
   * stack on a run of millions, and a regex cannot stop there without backtracking.
   */
  tail?: RegExp;
  /** After the run: no word character (the pattern's trailing `\b`). */
  wordEnd?: boolean;
  /** Characters of the match that are safe to show (a fixed prefix, never secret material). */
  shown: (match: string) => number;
  /** A further test of the whole match, where a regex would have to backtrack to express it. */
  accept?: (match: string) => boolean;
  /** A further test of what follows the match in the text (from `end`). */
  acceptAfter?: (text: string, end: number) => boolean;
}

/** How far past a private key block's header its key material is looked for. */
const KEY_BLOCK_LOOK = 8192;
/** A run of base64 at least this long is key material; a placeholder (`\n...\n`, `<your key>`, `MIIE...`) has none. */
const KEY_MATERIAL_RUN = 32;

/**
 * Whether the text after a private key block's header holds key material: up to the next `-----`
 * (its `-----END` line, or another header) or {@link KEY_BLOCK_LOOK} characters, a run of
 * {@link KEY_MATERIAL_RUN} base64 characters, line breaks and their `\n` / `\r` escapes (a key in a
 * JSON or .env string) not breaking it. A documented placeholder — `"-----BEGIN PRIVATE
 * KEY-----\n...\n-----END PRIVATE KEY-----"` — has none, and is not a key. Each header looks only
 * as far as the next one, so the whole text is read a bounded number of times (linear).
 */
export function hasKeyMaterial(text: string, end: number): boolean {
  const next = text.indexOf('-----', end);
  const limit = Math.min(next < 0 ? text.length : next, end + KEY_BLOCK_LOOK);
  let run = 0;
  for (let i = end; i < limit; i++) {
    const c = text.charCodeAt(i);
    // Line breaks and their escapes do not end a run: a key's lines are one run of base64.
    if (c === 10 || c === 13 || c === 32 || c === 9) continue;
    if (c === 92 && (text[i + 1] === 'n' || text[i + 1] === 'r')) {
      i++;
      continue;
    }
    run = (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 43 || c === 47 || c === 61 ? run + 1 : 0;
    if (run >= KEY_MATERIAL_RUN) return true;
  }
  return false;
}

const PATTERNS: Pattern[] = [
  // The header names the key type and holds no key material: it is shown whole. `[A-Z0-9 ]` never
  // holds "-", so two headers' runs never overlap (linear).
  {
    ruleId: 'credential/private-key',
    what: 'a private key block',
    regex: /-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----/g,
    shown: (m) => m.length,
    acceptAfter: hasKeyMaterial,
  },
  { ruleId: 'credential/cloud-key', what: 'an AWS access key id', regex: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, shown: () => 4 },
  {
    ruleId: 'credential/service-token',
    what: 'a GitHub token',
    regex: /\bgh[pousr]_[A-Za-z0-9]{36}/g,
    tail: /[A-Za-z0-9]*/y,
    wordEnd: true,
    shown: () => 4,
  },
  {
    ruleId: 'credential/service-token',
    what: 'a GitHub fine-grained token',
    regex: /\bgithub_pat_[A-Za-z0-9_]{22}/g,
    tail: /[A-Za-z0-9_]*/y,
    shown: () => 11,
  },
  {
    ruleId: 'credential/service-token',
    what: 'a Slack token',
    regex: /\bxox[baprs]-[A-Za-z0-9-]{10}/g,
    tail: /[A-Za-z0-9-]*/y,
    shown: () => 5,
  },
  {
    ruleId: 'credential/service-token',
    what: 'an Anthropic API key',
    regex: /\bsk-ant-[A-Za-z0-9_-]{20}/g,
    tail: /[A-Za-z0-9_-]*/y,
    shown: () => 7,
  },
  // OpenAI-style `sk-` keys; the tail must mix letters and digits, so `sk-learn-...` prose is not one
  // (checked on the match by `accept`: lookaheads here would rescan the rest of a run from every `sk-`).
  {
    ruleId: 'credential/service-token',
    what: 'an OpenAI-style API key',
    regex: /\bsk-(?!ant-)[A-Za-z0-9_-]{20}/g,
    tail: /[A-Za-z0-9_-]*/y,
    shown: () => 3,
    accept: (m) => /\d/.test(m.slice(3)) && /[A-Za-z]/.test(m.slice(3)),
  },
  {
    ruleId: 'credential/service-token',
    what: 'a Stripe live key',
    regex: /\b[sr]k_live_[A-Za-z0-9]{20}/g,
    tail: /[A-Za-z0-9]*/y,
    shown: () => 8,
  },
  { ruleId: 'credential/service-token', what: 'a Google API key', regex: /\bAIza[0-9A-Za-z_-]{35}\b/g, shown: () => 4 },
];

/** Each match of `pattern` in `text`: its offset and text, as the open-ended regex would match it. */
function* matches(text: string, pattern: Pattern): Generator<{ start: number; value: string }> {
  const regex = new RegExp(pattern.regex.source, pattern.regex.flags);
  const tail = pattern.tail ? new RegExp(pattern.tail.source, 'y') : undefined;
  for (let m = regex.exec(text); m !== null; m = regex.exec(text)) {
    let end = m.index + m[0].length;
    if (tail) {
      tail.lastIndex = end;
      end += tail.exec(text)![0].length;
    }
    // A word character after the run (only "_" can be: the run took the rest) fails `\b`, at every
    // shorter length too; the regex goes on from the next character.
    if (pattern.wordEnd && end < text.length && /\w/.test(text[end]!)) {
      regex.lastIndex = m.index + 1;
      continue;
    }
    regex.lastIndex = end;
    yield { start: m.index, value: text.slice(m.index, end) };
  }
}

/** Which characters are already part of a finding (a known shape wins over the heuristic), one flag per code unit. */
class Taken {
  readonly #marks: Uint8Array;
  constructor(length: number) {
    this.#marks = new Uint8Array(length);
  }

  /** Marks [start, end) unless a character of it is taken; false when one was. */
  claim(start: number, end: number): boolean {
    for (let i = start; i < end; i++) if (this.#marks[i] === 1) return false;
    this.#marks.fill(1, start, end);
    return true;
  }
}

const SECRET_NAME = /secret|token|passw(?:or)?d|pwd|api[_-]?key|access[_-]?key|auth[_-]?key|private[_-]?key|credential/i;
/**
 * Values that name a secret rather than hold one: a variable, an environment lookup, a documented
 * placeholder (`your-api-key`, `sk-or-v1-project1-key`, `token-goes-here`, `dummy`, `xxxxxx`).
 */
const REFERENCE =
  /^[$<{%]|process\.env|os\.environ|getenv|ENV\[|secrets\.|example|placeholder|changeme|x{6}|\byour[-_]|[-_]here\b|dummy|fake|sample|[-_](?:key|token|secret|password)$/i;
/**
 * Characters a value can hold and still be a token (base64, hex, URL-safe, JWT dots, a password's
 * punctuation). A value with `\`, brackets or parentheses is code or markup — `\rule{6cm}{0.5pt}`,
 * `tokenizer.convert_ids_to_tokens(100)` — not a secret.
 */
const NOT_A_TOKEN = /[\\(){}[\]<>]/;
const URL_LIKE = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/**
 * What of an assigned value is judged: the value; for a URL, only the password it carries (a URL
 * is an address, not a secret: `token_endpoint = "https://…/oauth/token"`), or nothing.
 */
function judged(value: string): string | undefined {
  if (!URL_LIKE.test(value)) return NOT_A_TOKEN.test(value) ? undefined : value;
  try {
    const password = new URL(value).password;
    return password === '' ? undefined : decodeURIComponent(password);
  } catch {
    return undefined;
  }
}

/** Shannon entropy of `value` in bits per character. */
export function shannonEntropy(value: string): number {
  const counts = new Map<string, number>();
  let length = 0;
  for (const c of value) {
    counts.set(c, (counts.get(c) ?? 0) + 1);
    length++;
  }
  let bits = 0;
  for (const n of counts.values()) {
    const p = n / length;
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
  const taken = new Taken(text.length);
  for (const pattern of PATTERNS) {
    for (const { start, value } of matches(text, pattern)) {
      // Documentation keys (AWS's AKIAIOSFODNN7EXAMPLE) are not secrets.
      if (/EXAMPLE/i.test(value) || (pattern.accept && !pattern.accept(value))) continue;
      if (pattern.acceptAfter && !pattern.acceptAfter(text, start + value.length)) continue;
      if (!taken.claim(start, start + value.length)) continue;
      const shown = pattern.shown(value);
      const message =
        shown >= value.length
          ? `${pattern.what} (${value}) is shipped with the skill`
          : `${pattern.what} ${redact(value, shown)} is shipped with the skill`;
      hits.push({ ruleId: pattern.ruleId, message, ...lines.at(start) });
    }
  }
  for (const { name, value: written, start } of assignments(text)) {
    if (!SECRET_NAME.test(name)) continue;
    const value = judged(written);
    if (value === undefined || value.length < ENTROPY_MIN_LENGTH) continue;
    if (REFERENCE.test(value) || !/\d/.test(value) || !/[A-Za-z]/.test(value)) continue;
    const bits = shannonEntropy(value);
    if (bits < ENTROPY_THRESHOLD_BITS) continue;
    if (!taken.claim(start, start + written.length)) continue;
    const what = value === written ? `a random-looking value ${redact(value, 3)}` : `a URL whose password looks random ${redact(value, 0)}`;
    hits.push({
      ruleId: 'credential/high-entropy',
      message: `"${name}" is assigned ${what}: ${bits.toFixed(2)} bits per character, at or over the ${ENTROPY_THRESHOLD_BITS} threshold`,
      ...lines.at(start),
    });
  }
  return hits;
}
