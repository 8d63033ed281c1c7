/**
 * The checks `skill-mcp pull` puts on what a server names (cli/pull/checks.ts): a pure module,
 * tested by the attack each rule stops. End-to-end refusals from a hostile server are in
 * test/e2e/pull-hostile.test.ts.
 */
import { describe, expect, test } from 'vitest';
import {
  PULL_MAX_FILES,
  PULL_MAX_SKILL_BYTES,
  checkFileList,
  checkFilePath,
  checkSkillName,
  pathUnderBase,
  type PlannedFile,
} from '../../cli/pull/checks.js';

const DIGEST = `sha256:${'a'.repeat(64)}`;
const file = (path: string, size = 1, digest = DIGEST): PlannedFile => ({ path, uri: `skill://s/${path}`, size, digest });

describe('skill names become one folder under the target', () => {
  test.each([
    '..',
    '.',
    '../x',
    'a/b',
    '/etc',
    '',
    'x\0y',
    'a\\b',
    '%2e%2e',
    '.hidden',
    '.skill-mcp-lock.json',
    'x'.repeat(256),
    'tab\tname',
  ])('refuses %j', (name) => {
    expect(checkSkillName(name).ok).toBe(false);
  });
  test('refuses a name that is not a string', () => {
    expect(checkSkillName(undefined)).toEqual({ ok: false, why: 'the skill name is not a string' });
  });
  test.each(['pdf', 'my-skill', 'Caps_And_Underscores', 'café'])('accepts %j (FastMCP names need not be SEP-2640 names)', (name) => {
    expect(checkSkillName(name)).toEqual({ ok: true, value: name });
  });
});

describe('file paths stay inside the skill', () => {
  test.each([
    ['../escape', /"\." or "\.\." segments/],
    ['a/../../escape', /"\." or "\.\." segments/],
    ['/etc/passwd', /relative to the skill/],
    ['a\\..\\b', /backslash/],
    ['%2e%2e/x', /"%" escapes/],
    ['a//b', /empty segment/],
    ['a/', /empty segment/],
    ['nul\0byte', /control character/],
    ['.env', /hidden/],
    ['.git/hooks/post-checkout', /hidden/],
    ['refs/.hidden/x.md', /hidden/],
  ])('attack: %j is refused', (path, why) => {
    const check = checkFilePath(path);
    expect(check.ok).toBe(false);
    expect(!check.ok && check.why).toMatch(why);
  });
  test.each(['SKILL.md', 'references/a b.md', 'data/emoji 🎉.txt', 'a/b/c/d/e/f.md', "quote's & (x).txt"])('accepts %j', (path) => {
    expect(checkFilePath(path)).toEqual({ ok: true, value: path });
  });
});

describe('URIs under a skill base', () => {
  const base = 'skill://s/';
  test('decodes each segment once: spaces and unicode', () => {
    expect(pathUnderBase('skill://s/refs/a%20b%C3%A9.md', base)).toEqual({ ok: true, value: 'refs/a bé.md' });
  });
  test('attack: %2e%2e segments decode to ".." and are refused', () => {
    expect(pathUnderBase('skill://s/%2e%2e/%2e%2e/x', base).ok).toBe(false);
  });
  test('attack: an encoded "/" inside a segment is refused (two spellings of one file, or a hidden traversal)', () => {
    expect(pathUnderBase('skill://s/a%2F..%2Fx', base)).toMatchObject({ ok: false, why: expect.stringMatching(/encoded "\/"/) });
  });
  test('attack: a URI outside the skill (a neighbour, another scheme) is refused', () => {
    expect(pathUnderBase('skill://other/x.md', base).ok).toBe(false);
    expect(pathUnderBase('file:///etc/passwd', base).ok).toBe(false);
    expect(pathUnderBase('skill://s-evil/x.md', base).ok).toBe(false);
  });
  test('a malformed escape is refused, not thrown', () => {
    expect(pathUnderBase('skill://s/%E0%A4%A', base)).toMatchObject({ ok: false, why: expect.stringMatching(/malformed %-escape/) });
  });
});

describe('the whole file list, before any byte is read', () => {
  test('a good list passes', () => {
    expect(checkFileList([file('SKILL.md'), file('refs/a.md')])).toBeUndefined();
  });
  test('no SKILL.md: refused', () => {
    expect(checkFileList([file('README.md')])).toMatch(/no SKILL.md/);
  });
  test.each(['', 'sha256:abc', `sha1:${'a'.repeat(40)}`, `sha256:${'A'.repeat(64)}`, `md5:${'a'.repeat(32)}`])(
    'a digest of %j: nothing to check against, refused',
    (digest) => {
      expect(checkFileList([file('SKILL.md', 1, digest)])).toMatch(/no sha256 digest/);
    },
  );
  test.each([-1, 1.5, Number.NaN])('a size of %j is refused', (size) => {
    expect(checkFileList([file('SKILL.md', size)])).toMatch(/no valid size/);
  });
  test(`attack: more than ${PULL_MAX_FILES} files`, () => {
    expect(checkFileList([file('SKILL.md'), ...Array.from({ length: PULL_MAX_FILES }, (_, i) => file(`f${i}`))])).toMatch(/over the 512/);
  });
  test('attack: declared sizes over 16 MiB in all, from one file or many', () => {
    expect(checkFileList([file('SKILL.md'), file('huge.bin', PULL_MAX_SKILL_BYTES)])).toMatch(/more than 16777216 bytes \("huge.bin"/);
    expect(checkFileList([file('SKILL.md'), ...Array.from({ length: 5 }, (_, i) => file(`part${i}`, 4 * 1024 * 1024))])).toMatch(
      /more than 16777216 bytes/,
    );
  });
  test('attack: two paths one case-insensitive disk would merge (A.md and a.md)', () => {
    expect(checkFileList([file('SKILL.md'), file('A.md'), file('a.md')])).toMatch(/"A.md" and "a.md" would be one file/);
  });
  test('attack: NFC and NFD spellings of one name', () => {
    expect(checkFileList([file('SKILL.md'), file('caf\u00e9.md'), file('cafe\u0301.md')])).toMatch(/would be one file/);
  });
  test('attack: a name listed as a file and as a folder', () => {
    expect(checkFileList([file('SKILL.md'), file('refs'), file('refs/a.md')])).toMatch(
      /"refs" is listed as a file and as the folder of "refs\/a.md"/,
    );
  });
});
