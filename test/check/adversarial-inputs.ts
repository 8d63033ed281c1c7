/**
 * @module Inputs built against `skill-mcp check`'s patterns: one long line of the characters each
 * one would retry on (an unclosed bracket, a run of name characters with no `=`, `sk-` over and
 * over without a digit, `<details` with no `>` …). Shared by the fuzz test (which asserts what
 * the rules find) and bench/check-linear.mjs (which times them on 10 MB).
 */

/** `unit` repeated to `size` UTF-16 code units (never splitting a surrogate pair). */
function fill(unit: string, size: number, head = '', tail = ''): string {
  const body = unit.repeat(Math.max(0, Math.ceil((size - head.length - tail.length) / unit.length)));
  let cut = Math.max(0, size - head.length - tail.length);
  if (cut > 0 && cut < body.length && /[\ud800-\udbff]/.test(body[cut - 1]!)) cut -= 1;
  return head + body.slice(0, cut) + tail;
}

/** Name → generator of a single-line text of about `size` characters. */
export const ADVERSARIAL: Record<string, (size: number) => string> = {
  letters: (n) => fill('a', n),
  'name-chars-no-operator': (n) => fill('token_a.b-', n),
  'digits-then-name': (n) => fill('9.-', n, '', 'secret'),
  'name-then-spaces': (n) => fill(' ', n, 'api_token', 'x'),
  'name-quote-spaces': (n) => fill(' ', n, 'password"', 'x'),
  operators: (n) => fill('a=', n),
  'operator-quotes': (n) => fill('a="', n),
  'sk-over-and-over': (n) => fill('sk-', n),
  'sk-proj-no-digit': (n) => fill('a', n, 'sk-proj-'),
  'sk-ant-over-and-over': (n) => fill('sk-ant-', n),
  'ghp-run-then-underscore': (n) => fill('a', n, 'ghp_', '_'),
  'ghp-over-and-over': (n) => fill('ghp_', n),
  'github-pat-over-and-over': (n) => fill('github_pat_', n),
  'xoxb-over-and-over': (n) => fill('xoxb-', n),
  'akia-over-and-over': (n) => fill('AKIA', n),
  'aiza-over-and-over': (n) => fill('AIza', n),
  'begin-key-no-end': (n) => fill('A ', n, '-----BEGIN '),
  'begin-over-and-over': (n) => fill('-----BEGIN ', n),
  // A key block's header over and over: each looks for its key material only up to the next one.
  'private-key-over-and-over': (n) => fill('-----BEGIN PRIVATE KEY-----', n),
  'private-key-then-spaces': (n) => fill(' ', n, '-----BEGIN PRIVATE KEY-----'),
  'private-key-then-escapes': (n) => fill('\\n', n, '-----BEGIN PRIVATE KEY-----'),
  'open-brackets': (n) => fill('[', n),
  'link-text-unclosed': (n) => fill('[a', n),
  'close-open': (n) => fill(']', n, '['),
  'link-target-unclosed': (n) => fill('[a](b', n),
  'link-angle-unclosed': (n) => fill('[a](<', n),
  'link-title-unclosed': (n) => fill('[a](b "', n),
  'link-paren-title-unclosed': (n) => fill('[a](b (', n),
  'link-spaces': (n) => fill(' ', n, '[a](', 'b'),
  'bang-brackets': (n) => fill('![', n),
  'definition-unclosed': (n) => fill('[', n, '   [a'),
  backticks: (n) => fill('`', n),
  'backtick-a': (n) => fill('`a', n),
  'double-backtick-a': (n) => fill('``a`', n),
  'comment-open': (n) => fill('<!--', n),
  'comment-then-text': (n) => fill('a', n, '<!-- '),
  'details-no-gt': (n) => fill('<details', n),
  'details-open': (n) => fill('<details>', n),
  'summary-unclosed': (n) => fill('<summary>', n, '<details>'),
  'less-than': (n) => fill('<', n, '<details>'),
  'less-than-a': (n) => fill('<a', n, '<!--'),
  'ignore-words': (n) => fill('ignore ', n, '<!-- '),
  'you-words': (n) => fill('you ', n, '<!-- '),
  spaces: (n) => fill(' ', n),
  sentences: (n) => fill('. ', n, '<!-- '),
  'zero-width': (n) => fill('\u200b', n),
  tags: (n) => fill('\u{e0041}', n),
  'secret-then-xs': (n) => fill('x', n, 'secret='),
  'secret-long-value': (n) => fill('a1', n, 'secret='),
  'sk-long-run': (n) => fill('b', n, 'sk-'),
  'keys-many': (n) => fill('AKIA1234567890ABCDEF ', n),
  'emoji-joiners': (n) => fill('\u{1f600}\u200d', n),
};
