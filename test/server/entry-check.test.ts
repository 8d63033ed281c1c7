/**
 * skills/list entries are checked once, when built (server/catalog/entry-check.ts), instead of on
 * every page by the SDK (issue 31). The check must still stop what the SDK's would: an entry naming
 * a file of another skill or of nothing at all, a duplicate resource, a missing SKILL.md, a name
 * that does not match its folder, a description too long, a malformed digest. And a page never
 * carries an entry that failed: it is left out, reported once, and the walk goes on past it.
 */
import { describe, expect, it } from 'vitest';
import type { Skill } from '@modelcontextprotocol/server/ext/skills';
import type { Catalog } from '../../server/catalog/catalog.js';
import { entryProblems } from '../../server/catalog/entry-check.js';
import { CatalogSkillSource, PAGE_MAX_BYTES } from '../../server/catalog/source.js';
import type { SkillRecord } from '../../server/catalog/skill.js';

const DIGEST = `sha256:${'a'.repeat(64)}`;

function entry(name: string, extra: string[] = [], frontmatter: Record<string, unknown> = {}): Skill {
  const uri = `skill://${name}/SKILL.md`;
  return {
    uri,
    frontmatter: { name, description: `the ${name} skill`, ...frontmatter },
    resources: [{ uri, digest: DIGEST, size: 10 }, ...extra.map((u) => ({ uri: u, digest: DIGEST, size: 1 }))],
  } as Skill;
}

describe('an entry that breaks the extension\'s rules is refused', () => {
  it('a well-formed entry passes', () => {
    expect(entryProblems(entry('good', ['skill://good/references/a.md']))).toEqual([]);
  });

  it.each([
    ['a resource of another skill', entry('thief', ['skill://victim/secret.md']), /not a file of skill:\/\/thief/],
    ['a resource with a query', entry('q', ['skill://q/a.md?x=1']), /not a file/],
    ['a resource listed twice', entry('twice', ['skill://twice/a.md', 'skill://twice/a.md']), /more than once/],
    ['no SKILL.md among the resources', { ...entry('bare'), resources: [{ uri: 'skill://bare/a.md', digest: DIGEST, size: 1 }] } as Skill, /must include skill:\/\/bare\/SKILL.md/],
    ['a frontmatter name that is not the folder', entry('folder', [], { name: 'other' }), /must match the directory/],
    ['an uppercase name', { ...entry('Bad'), uri: 'skill://Bad/SKILL.md' } as Skill, /lowercase/],
    ['a description over 1,024 characters', entry('long', [], { description: 'x'.repeat(1025) }), /description/],
    ['a compatibility that is not a string', entry('compat', [], { compatibility: 3 }), /compatibility/],
    ['metadata that is not strings', entry('meta', [], { metadata: { a: 1 } }), /metadata/],
    ['a malformed digest', { ...entry('dig'), resources: [{ uri: 'skill://dig/SKILL.md', digest: 'md5:abc', size: 1 }] } as Skill, /digest/],
    ['a uri that is not a SKILL.md', { ...entry('u'), uri: 'skill://u/README.md' } as Skill, /must be skill:\/\/<name>\/SKILL.md/],
  ])('%s', (_, bad, why) => {
    expect(entryProblems(bad).join('; ')).toMatch(why);
  });
});

/** A catalog with just what the source's pages use. */
function fakeCatalog(entries: Skill[]): Catalog {
  const records = entries.map((e) => ({ name: e.frontmatter.name, entry: e }) as unknown as SkillRecord & { entry: Skill });
  return {
    publishedFingerprint: 'fp0123456789',
    published: () => records,
    entry: async (record: SkillRecord & { entry?: Skill }) => record.entry!,
  } as unknown as Catalog;
}

describe('a skills/list page', () => {
  it('never carries an entry that failed its check; it is reported once and the walk goes on past it', async () => {
    const dropped: string[] = [];
    const bad = entry('b-bad', ['skill://elsewhere/x.md']);
    const source = new CatalogSkillSource(fakeCatalog([entry('a-good'), bad, entry('c-good')]), 100, Number.POSITIVE_INFINITY, (uri) => dropped.push(uri));
    for (let i = 0; i < 3; i++) expect((await source.checkedPage(undefined)).skills.map((s) => s.uri)).toEqual(['skill://a-good/SKILL.md', 'skill://c-good/SKILL.md']);
    expect(dropped).toEqual(['skill://b-bad/SKILL.md']);
  });

  it('ends before PAGE_MAX_BYTES of entries, never inside one, and never empty', async () => {
    // ~100 KB each: ten fit in a page, the eleventh starts the next.
    const big = (name: string): Skill => entry(name, Array.from({ length: 700 }, (_, i) => `skill://${name}/references/${'f'.repeat(60)}-${i}.md`));
    const entries = Array.from({ length: 25 }, (_, i) => big(`s-${String(i).padStart(2, '0')}`));
    const source = new CatalogSkillSource(fakeCatalog(entries), 100);
    const pages: number[][] = [];
    let cursor: string | undefined;
    do {
      const page = await source.checkedPage(cursor);
      pages.push(page.skills.map((s) => Buffer.byteLength(JSON.stringify(s))));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(pages.flat()).toHaveLength(25);
    for (const page of pages) {
      expect(page.length).toBeGreaterThan(0);
      expect(page.reduce((a, b) => a + b + 1, 0)).toBeLessThanOrEqual(PAGE_MAX_BYTES);
    }
    // Each page but the last is full: the next entry would not have fit.
    for (let p = 0; p < pages.length - 1; p++) expect(pages[p]!.reduce((a, b) => a + b + 1, 0) + pages[p + 1]![0]! + 1).toBeGreaterThan(PAGE_MAX_BYTES);
    // One entry over the whole budget still goes, alone.
    const huge = new CatalogSkillSource(fakeCatalog([entry('z', Array.from({ length: 12_000 }, (_, i) => `skill://z/${i}-${'f'.repeat(60)}.md`))]), 100);
    expect((await huge.checkedPage(undefined)).skills).toHaveLength(1);
  });
});
