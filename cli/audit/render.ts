/**
 * @module One audit line as `skill-mcp audit tail` prints it. Skill, script and argv values come
 * from whoever asked for the run, so nothing of them reaches the terminal raw: a value is printed
 * bare only when it is plainly a word, and otherwise quoted with every control character escaped.
 */

/**
 * Characters a terminal acts on or reorders: C0 controls, DEL, C1 controls (ESC's 8-bit twins:
 * CSI U+009B, OSC U+009D), the line and paragraph separators, and the bidi marks, embeddings,
 * overrides and isolates (U+200E-F, U+202A-E, U+2066-9, U+061C) that make text read differently
 * than it is stored.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: escaping control characters is what this is for
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

/** Values printed as they are: no spaces, quotes, backslashes or controls, so never mistaken for another field or line. */
const BARE = /^[A-Za-z0-9._:/@+-]+$/;

/** Escapes what {@link UNSAFE} matches as `\u{XXXX}`. Security: a name holding `\n`, `\r` or `ESC[2K` cannot forge or erase a line. */
export function escapeControls(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u{${c.codePointAt(0)!.toString(16).padStart(4, '0')}}`);
}

/** A field value: bare when plainly a word; otherwise JSON (quoted, C0 escaped) with the rest of the controls escaped too. */
export function renderValue(value: unknown): string {
  if (typeof value === 'string' && BARE.test(value)) return value;
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  return escapeControls(JSON.stringify(value) ?? String(value));
}

/** One decision as a readable line: time, seq, event, then the other fields (`prev` left out). */
export function renderAuditLine(line: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    parsed = undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return `(unreadable line) ${renderValue(line.slice(0, 200))}`;
  const { seq, ts, prev: _prev, event, ...rest } = parsed as Record<string, unknown>;
  const fields = Object.entries(rest).map(([k, v]) => `${renderValue(k)}=${renderValue(v)}`);
  return [renderValue(ts), `#${renderValue(seq)}`, renderValue(event), ...fields].join(' ');
}
