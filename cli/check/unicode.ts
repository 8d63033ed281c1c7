/**
 * @module Hidden or direction-changing Unicode in a text file: what a person sees differs from
 * what a model or an interpreter reads. Bidirectional controls reorder the display ("Trojan
 * Source"), tag characters are invisible but read as ASCII by models ("ASCII smuggling"),
 * zero-width characters split words or carry data unseen. One hit per run of adjacent characters
 * of one kind, with its line, column and code points. Pure.
 */
import type { Hit } from './finding.js';
import { LineIndex } from './text.js';

// Code point → its Unicode name (a Map: an object would turn the hex keys into decimal strings).
const NAMES = new Map<number, string>([
  [0x202a, 'LEFT-TO-RIGHT EMBEDDING'],
  [0x202b, 'RIGHT-TO-LEFT EMBEDDING'],
  [0x202c, 'POP DIRECTIONAL FORMATTING'],
  [0x202d, 'LEFT-TO-RIGHT OVERRIDE'],
  [0x202e, 'RIGHT-TO-LEFT OVERRIDE'],
  [0x2066, 'LEFT-TO-RIGHT ISOLATE'],
  [0x2067, 'RIGHT-TO-LEFT ISOLATE'],
  [0x2068, 'FIRST STRONG ISOLATE'],
  [0x2069, 'POP DIRECTIONAL ISOLATE'],
  [0x200b, 'ZERO WIDTH SPACE'],
  [0x200c, 'ZERO WIDTH NON-JOINER'],
  [0x200d, 'ZERO WIDTH JOINER'],
  [0x2060, 'WORD JOINER'],
  [0xfeff, 'ZERO WIDTH NO-BREAK SPACE'],
]);

type Kind = 'unicode/bidi' | 'unicode/tag' | 'unicode/zero-width';

function kindOf(cp: number): Kind | undefined {
  if ((cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069)) return 'unicode/bidi';
  if (cp >= 0xe0000 && cp <= 0xe007f) return 'unicode/tag';
  if ((cp >= 0x200b && cp <= 0x200d) || cp === 0x2060 || cp === 0xfeff) return 'unicode/zero-width';
  return undefined;
}

const HIDDEN = /[\u202a-\u202e\u2066-\u2069\u200b-\u200d\u2060\ufeff]|[\u{e0000}-\u{e007f}]/gu;
const PICTOGRAPHIC = /\p{Extended_Pictographic}/u;

function hex(cp: number): string {
  return `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** A zero-width joiner inside an emoji sequence (👨‍👩‍👧) is how those are written, not hiding. */
function isEmojiJoiner(text: string, offset: number): boolean {
  const after = text.codePointAt(offset + 1);
  if (after === undefined || !PICTOGRAPHIC.test(String.fromCodePoint(after))) return false;
  const before = [...text.slice(Math.max(0, offset - 4), offset)];
  // Skip a variation selector (U+FE0F) or skin-tone modifier between the emoji and the joiner.
  while (before.length > 0 && /[\ufe0f\u{1f3fb}-\u{1f3ff}]/u.test(before[before.length - 1]!)) before.pop();
  return before.length > 0 && PICTOGRAPHIC.test(before[before.length - 1]!);
}

function describeRun(kind: Kind, cps: number[]): string {
  if (kind === 'unicode/tag') {
    // Tags U+E0020-U+E007E mirror printable ASCII: say what the invisible text spells.
    const spelled = cps
      .filter((cp) => cp >= 0xe0020 && cp <= 0xe007e)
      .map((cp) => String.fromCharCode(cp - 0xe0000))
      .join('');
    const range = cps.length === 1 ? hex(cps[0]!) : `${hex(cps[0]!)}…${hex(cps[cps.length - 1]!)}`;
    const shown = spelled.length > 60 ? `${spelled.slice(0, 60)}…` : spelled;
    return `${cps.length} invisible Unicode tag character${cps.length === 1 ? '' : 's'} (${range})${spelled ? ` spelling ${JSON.stringify(shown)}` : ''}`;
  }
  const listed = cps
    .slice(0, 5)
    .map((cp) => `${hex(cp)} ${NAMES.get(cp) ?? ''}`.trim())
    .join(', ');
  const more = cps.length > 5 ? ` and ${cps.length - 5} more` : '';
  return kind === 'unicode/bidi'
    ? `bidirectional control ${listed}${more}: the text displays in another order than it is read`
    : `zero-width character ${listed}${more}: invisible to a reader`;
}

/** Every run of hidden characters in `text`. A byte-order mark at the very start is allowed. */
export function findHiddenUnicode(text: string): Hit[] {
  const lines = new LineIndex(text);
  const hits: Hit[] = [];
  let run: { kind: Kind; start: number; end: number; cps: number[] } | undefined;
  const flush = (): void => {
    if (!run) return;
    hits.push({ ruleId: run.kind, message: describeRun(run.kind, run.cps), ...lines.at(run.start) });
    run = undefined;
  };
  for (const match of text.matchAll(HIDDEN)) {
    const offset = match.index;
    const cp = match[0].codePointAt(0)!;
    if (offset === 0 && cp === 0xfeff) continue;
    if (cp === 0x200d && isEmojiJoiner(text, offset)) continue;
    const kind = kindOf(cp)!;
    if (run && run.kind === kind && run.end === offset) {
      run.cps.push(cp);
      run.end = offset + match[0].length;
      continue;
    }
    flush();
    run = { kind, start: offset, end: offset + match[0].length, cps: [cp] };
  }
  flush();
  return hits;
}
