/**
 * The runner's memory of SKILL.md parses (runner/requests/skill-md-memo.ts): the same answer as a
 * fresh parse, reused only for the very same text — an edit of one byte that keeps the size is a
 * new parse — never able to carry a change from one run to the next, and bounded.
 */
import { describe, expect, it } from 'vitest';
import { parseSkillMd } from '../../shared/frontmatter.js';
import { MAX_ENTRIES, SkillMdMemo } from '../../runner/requests/skill-md-memo.js';

const MAX = 64 * 1024;
const skillMd = (script: string): string =>
  `---\nname: s\ndescription: test\nmcp-host:\n  version: 1\n  run:\n    - script: ${script}\n      interpreter: node\n---\nBody.\n`;

describe('SkillMdMemo', () => {
  it("answers what a fresh parse answers (frontmatter, and a broken mcp-host block's own error)", () => {
    const memo = new SkillMdMemo();
    const good = skillMd('a.js');
    expect(memo.parse(good, MAX)).toEqual({ frontmatter: parseSkillMd(good, MAX).frontmatter });
    const broken = '---\nname: s\ndescription: test\nmcp-host:\n  run: [\n---\nBody.\n';
    const fresh = parseSkillMd(broken, MAX);
    expect(fresh.declarationError).toBeDefined();
    expect(memo.parse(broken, MAX)).toEqual({ frontmatter: fresh.frontmatter, declarationError: fresh.declarationError });
  });

  it('reuses the parse of the very same text', () => {
    const memo = new SkillMdMemo();
    const text = skillMd('a.js');
    expect(memo.parse(text, MAX)).toBe(memo.parse(`${text}`, MAX));
    expect(memo.size).toBe(1);
  });

  it('attack: a script renamed to another of the same length (same size, any mtime) is parsed again and runs as declared now', () => {
    const memo = new SkillMdMemo();
    const before = memo.parse(skillMd('a.js'), MAX);
    const after = memo.parse(skillMd('b.js'), MAX);
    expect(skillMd('a.js').length).toBe(skillMd('b.js').length);
    expect(after).not.toBe(before);
    expect(JSON.stringify(after.frontmatter)).toContain('b.js');
    expect(JSON.stringify(after.frontmatter)).not.toContain('a.js');
  });

  it("attack: a caller changing a remembered result fails at once instead of changing the next run's plan", () => {
    const memo = new SkillMdMemo();
    const parsed = memo.parse(skillMd('a.js'), MAX);
    const run = ((parsed.frontmatter['mcp-host'] as Record<string, unknown>)['run'] as Record<string, unknown>[])[0]!;
    expect(() => {
      run['script'] = 'evil.js';
    }).toThrow(TypeError);
    expect(JSON.stringify(memo.parse(skillMd('a.js'), MAX).frontmatter)).toContain('a.js');
  });

  it('a frontmatter that does not parse throws every time, as a fresh parse does (nothing remembered)', () => {
    const memo = new SkillMdMemo();
    const bad = '---\nname: [unclosed\n---\n';
    expect(() => parseSkillMd(bad, MAX)).toThrow();
    expect(() => memo.parse(bad, MAX)).toThrow();
    expect(() => memo.parse(bad, MAX)).toThrow();
    expect(memo.size).toBe(0);
  });

  it('a different frontmatter cap is a different parse (a text over the smaller cap is refused there)', () => {
    const memo = new SkillMdMemo();
    const text = skillMd('a.js');
    expect(memo.parse(text, MAX).frontmatter['name']).toBe('s');
    expect(() => memo.parse(text, 8)).toThrow();
  });

  it(`keeps at most ${MAX_ENTRIES} texts, the oldest going first`, () => {
    const memo = new SkillMdMemo();
    const first = memo.parse(skillMd('x0.js'), MAX);
    for (let i = 1; i <= MAX_ENTRIES; i++) memo.parse(skillMd(`x${i}.js`), MAX);
    expect(memo.size).toBe(MAX_ENTRIES);
    // The first one went: parsed again, a new (equal) object.
    const again = memo.parse(skillMd('x0.js'), MAX);
    expect(again).not.toBe(first);
    expect(again).toEqual(first);
  });
});
