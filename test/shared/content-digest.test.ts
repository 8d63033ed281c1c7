/**
 * The content digest both processes compute (shared/content-digest.ts, shared/skill-content.ts) is
 * the documented one: what coreutils prints for `sha256sum <files sorted bytewise> | sha256sum`
 * in the skill folder, over exactly the files the front serves — so a person can recompute what a
 * preview shows, and the front and the runner cannot disagree by construction.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { combineFileDigests, shortDigest } from '../../shared/content-digest.js';
import { readSkillContent } from '../../shared/skill-content.js';
import { walkSkill } from '../../shared/skill-walk.js';

const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-digest-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const FILES: Record<string, string> = {
  'SKILL.md': '---\nname: x\ndescription: y\n---\nbody\n',
  'scripts/run.js': 'console.log(1)\n',
  'Zeta.txt': 'capital letters sort first bytewise\n',
  'a b/with space.txt': 'spaces are fine\n',
  'é/accent.txt': 'two-byte UTF-8 sorts after ASCII\n',
  '😀.txt': 'four bytes in UTF-8, a surrogate pair in UTF-16\n',
  'ｚ.txt': 'U+FF5A: above the surrogates in UTF-16, below the emoji in UTF-8\n',
};
for (const [path, body] of Object.entries(FILES)) {
  mkdirSync(dirname(join(dir, path)), { recursive: true });
  writeFileSync(join(dir, path), body);
}
writeFileSync(join(dir, '.env'), 'hidden: never served, never bound\n');
symlinkSync('scripts/run.js', join(dir, 'alias.js'));

/** The documented recipe, run by coreutils (bytewise order: LC_ALL=C). */
function coreutilsDigest(paths: string[]): string {
  const sorted = execFileSync('sort', { input: `${paths.join('\n')}\n`, env: { LC_ALL: 'C', PATH: process.env['PATH'] } })
    .toString('utf8')
    .split('\n')
    .filter(Boolean);
  const lines = execFileSync('sha256sum', ['--', ...sorted], { cwd: dir, env: { LC_ALL: 'C', PATH: process.env['PATH'] } });
  return execFileSync('sha256sum', { input: lines }).toString().split(' ')[0]!;
}

describe('the content digest of a skill', () => {
  it('is sha256sum | sha256sum over the served files sorted bytewise (astral and full-width names included)', async () => {
    const read = await readSkillContent('x', dir, { maxFiles: 100, maxDirs: 100, maxBytes: 1 << 20 });
    if (!read.ok) throw new Error(read.why);
    const paths = read.content.files.map((f) => f.path);
    // The served set: the link inside the skill is a file of its own, the hidden file is not there.
    expect(new Set(paths)).toEqual(new Set([...Object.keys(FILES), 'alias.js']));
    expect(read.content.digest).toBe(coreutilsDigest(paths));
    expect(shortDigest(read.content.digest)).toBe(`sha256:${read.content.digest.slice(0, 12)}`);
  });

  it('covers exactly the files of the manifest the front serves (the same walk)', async () => {
    const walk = await walkSkill('x', dir, 'x', { maxFiles: 100, maxDirs: 100 });
    const read = await readSkillContent('x', dir, { maxFiles: 100, maxDirs: 100, maxBytes: 1 << 20 });
    expect(read.ok && read.content.files.map((f) => [f.path, f.size])).toEqual(walk.files.map((f) => [f.path, f.size]));
  });

  it('does not depend on the order files are given in, and changes with any path or digest', () => {
    const files = [
      { path: 'b', sha256: '1'.repeat(64) },
      { path: 'a', sha256: '2'.repeat(64) },
    ];
    const digest = combineFileDigests(files);
    expect(combineFileDigests([...files].reverse())).toBe(digest);
    expect(combineFileDigests([files[0]!, { path: 'a2', sha256: '2'.repeat(64) }])).not.toBe(digest);
    expect(combineFileDigests([files[0]!, { path: 'a', sha256: '3'.repeat(64) }])).not.toBe(digest);
    // A file moved to another path with the same bytes is another skill.
    expect(
      combineFileDigests([
        { path: 'b', sha256: '2'.repeat(64) },
        { path: 'a', sha256: '1'.repeat(64) },
      ]),
    ).not.toBe(digest);
  });

  it('refuses a walk that stopped at its limit (an approval of part of a skill)', async () => {
    const read = await readSkillContent('x', dir, { maxFiles: 2, maxDirs: 100, maxBytes: 1 << 20 });
    expect(read).toMatchObject({ ok: false, code: 'TOO_LARGE', why: expect.stringMatching(/more than 2 files/) });
  });
});
