/**
 * @module Instruction-like text a reader of the rendered SKILL.md does not see: HTML comments are
 * not rendered at all and `<details>` blocks are collapsed, yet a model reads both. A heuristic:
 * a sentence that starts with an imperative verb, or says "you must", "do not tell", "ignore the
 * previous instructions". Comments shown as code are not hidden. Pure.
 */
import type { Hit } from './finding.js';
import { detailsBlocks, firstElement, withoutTags } from './html-scan.js';
import { LineIndex, maskMarkdownCode, quote } from './text.js';

/**
 * Verbs that act for or on the person (run, send, tell, reveal...). Maintenance verbs (add, fix,
 * update, keep, make) are left out: "<!-- add more examples -->" is a note to an author, not a model.
 */
const VERBS = new Set([
  'ignore',
  'disregard',
  'forget',
  'override',
  'bypass',
  'always',
  'never',
  'do',
  "don't",
  'dont',
  'run',
  'execute',
  'send',
  'post',
  'upload',
  'download',
  'delete',
  'remove',
  'call',
  'invoke',
  'fetch',
  'read',
  'open',
  'write',
  'output',
  'print',
  'reply',
  'respond',
  'answer',
  'say',
  'tell',
  'use',
  'copy',
  'install',
  'curl',
  'wget',
  'visit',
  'navigate',
  'email',
  'share',
  'reveal',
  'exfiltrate',
  'pretend',
  'act',
  'forward',
  'transmit',
  'leak',
  'collect',
  'grant',
  'approve',
  'confirm',
  'paste',
  'instead',
]);

const PHRASES = [
  /\b(?:ignore|disregard|forget)\b.{0,40}\b(?:instructions?|rules?|above|previous|prior|system|guidelines?)\b/i,
  /\byou (?:must|should|will|need to|are to|have to|shall)\b/i,
  /\b(?:do not|don't|never) (?:tell|mention|reveal|show|inform|let|ask)\b/i,
  /\bsystem prompt\b/i,
];

/**
 * The pieces `text.split(/(?<=[.!?])\s+|\n+/)` gives, holding at least one ASCII letter (no other
 * piece can start with a verb or hold a phrase), one at a time: a 10 MB line of ". . . ." is
 * not five million strings at once.
 */
function* sentences(text: string): Generator<string> {
  let start = 0;
  let letters = false;
  let i = 0;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    const prev = i > 0 ? text.charCodeAt(i - 1) : 0;
    let sep = i;
    if ((prev === 46 || prev === 33 || prev === 63) && /\s/.test(text[i]!)) while (sep < text.length && /\s/.test(text[sep]!)) sep++;
    else if (code === 10) while (text.charCodeAt(sep) === 10) sep++;
    if (sep > i) {
      if (letters) yield text.slice(start, i);
      start = sep;
      letters = false;
      i = sep;
      continue;
    }
    if ((code >= 65 && code <= 90) || (code >= 97 && code <= 122)) letters = true;
    i++;
  }
  if (letters) yield text.slice(start);
}

/** The first instruction-like sentence in `text`, or undefined. */
export function instructionIn(text: string): string | undefined {
  // Security (of the rule's cost): the phrases are tested on the whole text once; only when one
  // occurs somewhere is it looked for sentence by sentence (a sentence's match is a match of the whole).
  const phrased = PHRASES.some((p) => p.test(text));
  for (const sentence of sentences(text)) {
    // Leading list markers, numbering, quote marks and labels ("Note:", "TODO -") are not the verb.
    const stripped = sentence.replace(/^[\s>*+\-#\d.)\]"'`]*/, '').replace(/^(?:please|note|todo|nb|important)\b[\s:,-]*/i, '');
    const first = /^[A-Za-z']+/.exec(stripped)?.[0]?.toLowerCase();
    if ((first && VERBS.has(first) && /\s/.test(stripped.trim())) || (phrased && PHRASES.some((p) => p.test(sentence))))
      return sentence.trim();
  }
  return undefined;
}

/** Hidden blocks of a SKILL.md's body (from `bodyOffset`) that hold instructions. */
export function findHiddenInstructions(text: string, bodyOffset: number): Hit[] {
  const masked = maskMarkdownCode(text);
  const lines = new LineIndex(text);
  const hits: Hit[] = [];
  const blocks: { offset: number; inner: string; what: string }[] = [];
  // An unclosed comment hides everything after it.
  for (const m of masked.matchAll(/<!--([\s\S]*?)(?:-->|$)/g)) {
    blocks.push({
      offset: m.index,
      inner: text.slice(m.index + 4, m.index + m[0].length).replace(/-->$/, ''),
      what: 'an HTML comment (never rendered)',
    });
  }
  for (const block of detailsBlocks(masked)) {
    // The summary line is what a reader sees; the rest is collapsed.
    const whole = text.slice(block.start, block.end);
    const opened = whole.slice(block.innerStart - block.start);
    const summary = firstElement(opened, 'summary');
    const inner = summary ? opened.slice(0, summary.start) + opened.slice(summary.end) : opened;
    blocks.push({ offset: block.start, inner, what: 'a collapsed <details> block' });
  }
  for (const block of blocks) {
    if (block.offset < bodyOffset) continue;
    const found = instructionIn(withoutTags(block.inner));
    if (found)
      hits.push({
        ruleId: 'hidden/instructions',
        message: `${block.what} holds instruction-like text a reader does not see: ${quote(found)}`,
        ...lines.at(block.offset),
      });
  }
  return hits;
}
