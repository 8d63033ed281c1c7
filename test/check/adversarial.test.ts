/**
 * Attack: a skill file built to make `skill-mcp check` backtrack for minutes (finding: a 1.5 MB
 * one-line file took minutes; 20k/40k/80k/160k characters took 0.6/1.7/6.5/23.9 s). The rules'
 * scanners replace regular expressions that retried from every character; here each one is held
 * to the regex it replaces on random short texts over the characters that pattern cares about
 * (same matches, same offsets), and every rule runs on each adversarial input of 200,000
 * characters and finds exactly what is there. Time is measured in bench/check-linear.mjs, never here.
 */
import { describe, expect, it } from 'vitest';
import { assignments } from '../../cli/check/assignments.js';
import { findCredentials } from '../../cli/check/credentials.js';
import { findHiddenInstructions } from '../../cli/check/hidden-text.js';
import { detailsBlocks, firstElement, withoutTags } from '../../cli/check/html-scan.js';
import { inlineLinks } from '../../cli/check/inline-links.js';
import { findDeadLinks } from '../../cli/check/links.js';
import { findHiddenUnicode } from '../../cli/check/unicode.js';
import { ADVERSARIAL } from './adversarial-inputs.js';

/** A deterministic pseudo-random generator (xorshift32), so a failure replays. */
function random(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

function texts(alphabet: string[], count: number, maxLength: number, seed: number): string[] {
  const next = random(seed);
  return Array.from({ length: count }, () =>
    Array.from({ length: Math.floor(next() * maxLength) }, () => alphabet[Math.floor(next() * alphabet.length)]!).join(''),
  );
}

const OLD_INLINE = /!?\[[^\]\n]*\]\(\s*(<[^>\n]*>|[^\s)]+)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)/g;
const OLD_ASSIGNMENT = /([A-Za-z_][A-Za-z0-9_.-]*)["']?\s*(?::|=>?|:=)\s*(["'`]?)([^\s"'`,;]+)\2?/g;
const OLD_DETAILS = /<details\b[^>]*>([\s\S]*?)(?:<\/details\s*>|$)/gi;
const OLD_SUMMARY = /<summary\b[^>]*>[\s\S]*?<\/summary\s*>/i;

describe('each scanner finds what the regex it replaces found', () => {
  it('inline links: the same targets at the same places', () => {
    for (const text of texts(['[', ']', '(', ')', '<', '>', '"', "'", ' ', '\n', 'a', 'b', '!'], 20_000, 24, 1)) {
      const old = [...text.matchAll(OLD_INLINE)].map((m) => ({
        written: m[1]!,
        offset: m.index + m[0].length - m[0].slice(m[0].lastIndexOf(m[1]!)).length,
      }));
      const now = inlineLinks(text);
      expect(
        now.map((l) => l.written),
        JSON.stringify(text),
      ).toEqual(old.map((l) => l.written));
      // The target sits right after `](` and spaces: its offset is where the text has it.
      for (const l of now) expect(text.slice(l.offset, l.offset + l.written.length)).toBe(l.written);
    }
  });

  it('assignments: the same names and values, at the same places', () => {
    for (const text of texts(['a', 'Z', '_', '9', '.', '-', '=', '>', ':', '"', "'", '`', ' ', ',', ';', 'k'], 20_000, 24, 2)) {
      const old = [...text.matchAll(OLD_ASSIGNMENT)].map((m) => ({ name: m[1]!, value: m[3]!, start: m.index + m[0].lastIndexOf(m[3]!) }));
      expect(assignments(text), JSON.stringify(text)).toEqual(old);
    }
  });

  it('<details> blocks, the first <summary> and tag stripping', () => {
    for (const text of texts(
      ['<details', '<DETAILS ', '</details>', '</details >', '<summary>', '</summary>', '<', '>', 'a', ' ', '\n'],
      10_000,
      10,
      3,
    )) {
      expect(
        detailsBlocks(text).map((b) => [b.start, b.end]),
        JSON.stringify(text),
      ).toEqual([...text.matchAll(OLD_DETAILS)].map((m) => [m.index, m.index + m[0].length]));
      const m = OLD_SUMMARY.exec(text);
      expect(firstElement(text, 'summary'), JSON.stringify(text)).toEqual(m ? { start: m.index, end: m.index + m[0].length } : undefined);
      expect(withoutTags(text), JSON.stringify(text)).toBe(text.replace(/<[^>]+>/g, ' '));
    }
  });
});

/** What each rule must find on each input (nothing, unless listed): the inputs are noise, not secrets. */
const EXPECTED: Record<string, { credentials?: number; unicode?: string }> = {
  // 200,000 / 21 characters: 9,523 whole key ids, then a cut one.
  'keys-many': { credentials: 9523 },
  // One run of token characters after the prefix: one (long) token, as the original patterns say.
  'sk-ant-over-and-over': { credentials: 1 },
  'github-pat-over-and-over': { credentials: 1 },
  'xoxb-over-and-over': { credentials: 1 },
  'zero-width': { unicode: 'unicode/zero-width' },
  tags: { unicode: 'unicode/tag' },
};

describe('every rule on every adversarial input (200,000 characters, one line)', () => {
  const SIZE = 200_000;
  it.each(Object.keys(ADVERSARIAL))('%s', (name) => {
    const text = ADVERSARIAL[name]!(SIZE);
    expect(text.length).toBeLessThanOrEqual(SIZE);
    const expected = EXPECTED[name] ?? {};
    expect(findCredentials(text)).toHaveLength(expected.credentials ?? 0);
    expect(findDeadLinks(text, 0, [], () => false)).toEqual(
      name.startsWith('link-') || name === 'definition-unclosed' ? [] : expect.any(Array),
    );
    expect(findHiddenInstructions(text, 0).length).toBeLessThanOrEqual(3);
    const unicode = findHiddenUnicode(text);
    if (expected.unicode) expect(unicode.map((h) => h.ruleId)).toEqual([expected.unicode]);
    else expect(unicode).toEqual([]);
  });

  it('a real finding survives inside the noise: a key at the end of 200,000 characters of "sk-"', () => {
    const key = `sk-proj-${'Ab3'.repeat(10)}`;
    const hits = findCredentials(`${ADVERSARIAL['sk-over-and-over']!(SIZE)} ${key}`);
    expect(hits.map((h) => h.ruleId)).toEqual(['credential/service-token']);
    const link = findDeadLinks(`${ADVERSARIAL['link-title-unclosed']!(SIZE)}\n[ok](missing.md)`, 0, [], () => false);
    expect(link.map((h) => h.message)).toEqual(['the link to "missing.md" is dead: no such file exists in the skill']);
  });
});
