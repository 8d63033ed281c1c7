/**
 * @module `name = value` pairs in a text, in one pass: `name = value`, `name: value`,
 * `"name": "value"`, `name => value`, `name := value`. What the regular expression
 * `([A-Za-z_][A-Za-z0-9_.-]*)["']?\s*(?::|=>?|:=)\s*(["'`]?)([^\s"'`,;]+)\2?` (global) finds, without
 * its cost: run as a regex, it retries from every letter of a long run of name characters with no
 * `=` after it, and each retry rescans the rest of the run (quadratic: minutes on a 1.5 MB line).
 * Here a run is scanned once: a start inside a run ends at the same place, before the same
 * characters, so if the run's first start fails every later one does. Pure.
 */

export interface Assignment {
  name: string;
  value: string;
  /** Offset of `value` in the text. */
  start: number;
}

/** The part after the name, tried once at the end of each run of name characters. */
const TAIL = /(["']?\s*(?::|=>?|:=)\s*(["'`]?))([^\s"'`,;]+)\2?/y;

function isNameStart(code: number): boolean {
  return (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 95;
}

function isNameChar(code: number): boolean {
  return isNameStart(code) || (code >= 48 && code <= 57) || code === 46 || code === 45;
}

/** Every assignment in `text`, in order, as the global regex above would match them. */
export function assignments(text: string): Assignment[] {
  const out: Assignment[] = [];
  let at = 0;
  while (at < text.length) {
    while (at < text.length && !isNameStart(text.charCodeAt(at))) at++;
    if (at >= text.length) break;
    let end = at + 1;
    while (end < text.length && isNameChar(text.charCodeAt(end))) end++;
    TAIL.lastIndex = end;
    const tail = TAIL.exec(text);
    if (tail) {
      out.push({ name: text.slice(at, end), value: tail[3]!, start: end + tail[1]!.length });
      at = end + tail[0].length;
    } else at = end;
  }
  return out;
}
