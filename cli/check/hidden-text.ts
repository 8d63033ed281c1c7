/**
 * @module Instruction-like text a reader of the rendered SKILL.md does not see: HTML comments are
 * not rendered at all and `<details>` blocks are collapsed, yet a model reads both. A heuristic:
 * a sentence that starts with an imperative verb, or says "you must", "do not tell", "ignore the
 * previous instructions". Comments shown as code are not hidden. Pure.
 */
import type { Hit } from './finding.js';
import { LineIndex, maskMarkdownCode, quote } from './text.js';

/**
 * Verbs that act for or on the person (run, send, tell, reveal...). Maintenance verbs (add, fix,
 * update, keep, make) are left out: "<!-- add more examples -->" is a note to an author, not a model.
 */
const VERBS = new Set([
  'ignore', 'disregard', 'forget', 'override', 'bypass', 'always', 'never', 'do', "don't", 'dont', 'run', 'execute',
  'send', 'post', 'upload', 'download', 'delete', 'remove', 'call', 'invoke', 'fetch', 'read', 'open', 'write',
  'output', 'print', 'reply', 'respond', 'answer', 'say', 'tell', 'use', 'copy', 'install', 'curl', 'wget', 'visit',
  'navigate', 'email', 'share', 'reveal', 'exfiltrate', 'pretend', 'act', 'forward', 'transmit', 'leak', 'collect',
  'grant', 'approve', 'confirm', 'paste', 'instead',
]);

const PHRASES = [
  /\b(?:ignore|disregard|forget)\b.{0,40}\b(?:instructions?|rules?|above|previous|prior|system|guidelines?)\b/i,
  /\byou (?:must|should|will|need to|are to|have to|shall)\b/i,
  /\b(?:do not|don't|never) (?:tell|mention|reveal|show|inform|let|ask)\b/i,
  /\bsystem prompt\b/i,
];

/** The first instruction-like sentence in `text`, or undefined. */
export function instructionIn(text: string): string | undefined {
  for (const sentence of text.split(/(?<=[.!?])\s+|\n+/)) {
    // Leading list markers, numbering, quote marks and labels ("Note:", "TODO -") are not the verb.
    const stripped = sentence.replace(/^[\s>*+\-#\d.)\]"'`]*/, '').replace(/^(?:please|note|todo|nb|important)\b[\s:,-]*/i, '');
    const first = /^[A-Za-z']+/.exec(stripped)?.[0]?.toLowerCase();
    if ((first && VERBS.has(first) && /\s/.test(stripped.trim())) || PHRASES.some((p) => p.test(sentence))) return sentence.trim();
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
    blocks.push({ offset: m.index, inner: text.slice(m.index + 4, m.index + m[0].length).replace(/-->$/, ''), what: 'an HTML comment (never rendered)' });
  }
  for (const m of masked.matchAll(/<details\b[^>]*>([\s\S]*?)(?:<\/details\s*>|$)/gi)) {
    // The summary line is what a reader sees; the rest is collapsed.
    const inner = text.slice(m.index, m.index + m[0].length).replace(/^<details\b[^>]*>/i, '').replace(/<summary\b[^>]*>[\s\S]*?<\/summary\s*>/i, '');
    blocks.push({ offset: m.index, inner, what: 'a collapsed <details> block' });
  }
  for (const block of blocks) {
    if (block.offset < bodyOffset) continue;
    const found = instructionIn(block.inner.replace(/<[^>]+>/g, ' '));
    if (found) hits.push({ ruleId: 'hidden/instructions', message: `${block.what} holds instruction-like text a reader does not see: ${quote(found)}`, ...lines.at(block.offset) });
  }
  return hits;
}
