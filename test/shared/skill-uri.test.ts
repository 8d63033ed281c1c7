/**
 * shared/skill-uri.ts: `uriFor` answers plain names without the URL parser. Its fast path must give
 * exactly what the parser gives — the same URI, or undefined where no exact form exists — or a file
 * would be listed under a URI a client cannot read back (or one with no exact form would be served).
 * Checked against the parser on every pairing of awkward skill names and paths.
 */
import { describe, expect, it } from 'vitest';
import { encodeSegment, uriFor } from '../../shared/skill-uri.js';

/** The definition: encode each segment, then keep the URI only if the URL parser leaves it as it is. */
function byParser(name: string, path?: string): string | undefined {
  try {
    const uri = path === undefined ? `skill://${name}` : `skill://${name}/${path.split('/').map(encodeSegment).join('/')}`;
    return new URL(uri).href === uri ? uri : undefined;
  } catch {
    return undefined;
  }
}

const NAMES = ['pdf', 'a-b', 'pdf2', 'A', 'Pdf', 'a--b', '-a', 'a-', 'a.b', 'xn--abc', '1', 'a_b', 'a b', 'é', 'a@b', 'a:1', ''];
const PATHS = [
  undefined,
  'SKILL.md',
  'a/b/c.txt',
  'scripts/fill_form.py',
  'UPPER/Case.PY',
  'a~b',
  '_x',
  '-x',
  'a/-b',
  'x.tar.gz',
  // Dot segments, which the parser rewrites, and names that only look like them.
  '.',
  '..',
  'a/..',
  'a/./b',
  '../a',
  './a',
  '..a',
  '...',
  'a/...',
  '.hidden',
  'a/.b',
  '%2e',
  '%2E%2E',
  'a/%2e%2e',
  // Empty segments and characters that need encoding or that the parser treats specially.
  '',
  'a//b',
  'x/',
  '/x',
  'a b',
  'é.md',
  'a\\b',
  'a?b',
  'a#b',
  'a%b',
  'a%20b',
  'a|b',
  'a[b]',
  "a'b",
  'a@b',
  'a:b',
  'a;b=c',
  'tab\tx',
  'nl\nx',
];

describe('uriFor: the plain-name fast path agrees with the URL parser', () => {
  it.each(NAMES)('every path of skill %j', (name) => {
    for (const path of PATHS) expect({ name, path, uri: uriFor(name, path) }).toEqual({ name, path, uri: byParser(name, path) });
  });

  it('a dot segment is never served as a plain path (it would be rewritten, a read of it could name another file)', () => {
    for (const path of ['.', '..', 'a/..', 'a/./b', '../x']) expect(uriFor('pdf', path)).toBeUndefined();
  });
});
