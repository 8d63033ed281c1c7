/**
 * @module The few HTML shapes the hidden-text rule looks for, found in one pass each:
 * `<details …>…</details>` blocks (an unclosed one runs to the end), the first
 * `<summary …>…</summary>` inside one, and tags stripped to spaces. As regular expressions
 * (`<details\b[^>]*>[\s\S]*?(?:</details\s*>|$)`, `<[^>]+>`) each retried from every `<` and rescanned
 * to the same `>` or closing tag — quadratic on `<details<details…` or `<<<<…`. Here a failed scan
 * ends the search: a later start only sees a suffix of what the earlier one did not find. Pure.
 */

export interface Span {
  start: number;
  end: number;
}

/** `<name` at `at` followed by a word boundary (case-insensitive), as `<name\b` matches. */
function opensAt(text: string, at: number, name: string): boolean {
  if (text.slice(at + 1, at + 1 + name.length).toLowerCase() !== name) return false;
  const next = text[at + 1 + name.length];
  return next === undefined || !/\w/.test(next);
}

/** The end (after `>`) of `</name\s*>` at or after `from`, and where it starts; undefined when there is none. */
function closingTag(text: string, from: number, name: string): Span | undefined {
  const pattern = new RegExp(`</${name}\\s*>`, 'gi');
  pattern.lastIndex = from;
  const m = pattern.exec(text);
  return m ? { start: m.index, end: m.index + m[0].length } : undefined;
}

/** Every `<details>` block: its span (to the closing tag or the end) and where its content starts. */
export function detailsBlocks(text: string): (Span & { innerStart: number })[] {
  const out: (Span & { innerStart: number })[] = [];
  const open = /<details\b/gi;
  let pos = 0;
  for (;;) {
    open.lastIndex = pos;
    const m = open.exec(text);
    if (!m) break;
    const gt = text.indexOf('>', m.index);
    if (gt === -1) break; // no `>` after this `<details`: none after a later one either
    const close = closingTag(text, gt + 1, 'details');
    const end = close ? close.end : text.length;
    out.push({ start: m.index, end, innerStart: gt + 1 });
    pos = end;
  }
  return out;
}

/** The first `<name …>…</name>` element in `text` (its span), as a non-global regex finds it. */
export function firstElement(text: string, name: string): Span | undefined {
  for (let at = text.indexOf('<'); at !== -1; at = text.indexOf('<', at + 1)) {
    if (!opensAt(text, at, name)) continue;
    const gt = text.indexOf('>', at);
    if (gt === -1) return undefined;
    // The closing tag search from a later start sees a suffix of this one's: none here, none there.
    const close = closingTag(text, gt + 1, name);
    return close ? { start: at, end: close.end } : undefined;
  }
  return undefined;
}

/** `text` with every `<…>` (at least one character inside) replaced by a space. */
export function withoutTags(text: string): string {
  let out = '';
  let pos = 0;
  let from = 0;
  for (;;) {
    const lt = text.indexOf('<', from);
    if (lt === -1) break;
    const gt = text.indexOf('>', lt + 1);
    if (gt === -1) break; // no `>` after this `<`: no tag from here on
    if (gt === lt + 1) {
      from = lt + 1; // `<>` is not a tag; the `>` starts nothing
      continue;
    }
    out += `${text.slice(pos, lt)} `;
    pos = gt + 1;
    from = gt + 1;
  }
  return out + text.slice(pos);
}
