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
import { SkillResourceEntrySchema } from '@modelcontextprotocol/core/ext/skills';
import { entryProblems, resourceProblem } from '../../server/catalog/entry-check.js';
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

describe("an entry that breaks the extension's rules is refused", () => {
  it('a well-formed entry passes', () => {
    expect(entryProblems(entry('good', ['skill://good/references/a.md']))).toEqual([]);
  });

  it.each([
    ['a resource of another skill', entry('thief', ['skill://victim/secret.md']), /not a file of skill:\/\/thief/],
    ['a resource with a query', entry('q', ['skill://q/a.md?x=1']), /not a file/],
    ['a resource listed twice', entry('twice', ['skill://twice/a.md', 'skill://twice/a.md']), /more than once/],
    [
      'no SKILL.md among the resources',
      { ...entry('bare'), resources: [{ uri: 'skill://bare/a.md', digest: DIGEST, size: 1 }] } as Skill,
      /must include skill:\/\/bare\/SKILL.md/,
    ],
    ['a frontmatter name that is not the folder', entry('folder', [], { name: 'other' }), /must match the directory/],
    ['an uppercase name', { ...entry('Bad'), uri: 'skill://Bad/SKILL.md' } as Skill, /lowercase/],
    ['a description over 1,024 characters', entry('long', [], { description: 'x'.repeat(1025) }), /description/],
    ['a compatibility that is not a string', entry('compat', [], { compatibility: 3 }), /compatibility/],
    ['metadata that is not strings', entry('meta', [], { metadata: { a: 1 } }), /metadata/],
    [
      'a malformed digest',
      { ...entry('dig'), resources: [{ uri: 'skill://dig/SKILL.md', digest: 'md5:abc', size: 1 }] } as Skill,
      /digest/,
    ],
    ['a uri that is not a SKILL.md', { ...entry('u'), uri: 'skill://u/README.md' } as Skill, /must be skill:\/\/<name>\/SKILL.md/],
  ])('%s', (_, bad, why) => {
    expect(entryProblems(bad).join('; ')).toMatch(why);
  });
});

describe("resources are checked by hand with the SDK schema's rules (zod costs ~4 µs an item)", () => {
  const good = { uri: 'skill://s/a.md', digest: DIGEST, size: 10 };
  const inherited = Object.assign(Object.create({ digest: DIGEST }), { uri: 'skill://s/a.md', size: 1 });
  const items: [string, unknown][] = [
    ['a well-formed item', good],
    ['one with extra fields (the schema is loose)', { ...good, mimeType: 'text/plain', _meta: { a: 1 } }],
    ['size 0', { ...good, size: 0 }],
    ['size -0', { ...good, size: -0 }],
    ['the largest safe size', { ...good, size: Number.MAX_SAFE_INTEGER }],
    ['a digest inherited from the prototype', inherited],
    ['null', null],
    ['an array', [good]],
    ['a string', 'skill://s/a.md'],
    ['a number', 3],
    ['a missing uri', { digest: DIGEST, size: 1 }],
    ['a uri that is not a string', { ...good, uri: 1 }],
    ['a missing digest', { uri: good.uri, size: 1 }],
    ['an uppercase digest', { ...good, digest: `sha256:${'A'.repeat(64)}` }],
    ['a short digest', { ...good, digest: `sha256:${'a'.repeat(63)}` }],
    ['a long digest', { ...good, digest: `sha256:${'a'.repeat(65)}` }],
    ['a digest with a trailing newline', { ...good, digest: `${DIGEST}\n` }],
    ['another algorithm', { ...good, digest: `sha512:${'a'.repeat(64)}` }],
    ['a digest that is not a string', { ...good, digest: 7 }],
    ['a missing size', { uri: good.uri, digest: DIGEST }],
    ['a negative size', { ...good, size: -1 }],
    ['a fractional size', { ...good, size: 1.5 }],
    ['a size past the safe integers', { ...good, size: 2 ** 53 }],
    ['a NaN size', { ...good, size: Number.NaN }],
    ['an infinite size', { ...good, size: Number.POSITIVE_INFINITY }],
    ['a size as a string', { ...good, size: '10' }],
    ['a size as a bigint', { ...good, size: 10n }],
    ['a size of null', { ...good, size: null }],
  ];

  it.each(items)('%s: same verdict as SkillResourceEntrySchema', (_, item) => {
    expect(resourceProblem(item) === undefined).toBe(SkillResourceEntrySchema.safeParse(item).success);
  });

  it('a bad item anywhere in the array refuses the entry, naming its index', () => {
    const e = entry('items', ['skill://items/a.md', 'skill://items/b.md']);
    (e.resources as unknown[])[2] = { uri: 'skill://items/b.md', digest: DIGEST, size: 1.5 };
    expect(entryProblems(e)).toEqual(['resources.2: size must be a non-negative safe integer']);
    (e.resources as unknown[])[1] = null;
    expect(entryProblems(e)).toEqual(['resources.1: must be an object', 'resources.2: size must be a non-negative safe integer']);
  });

  it('resources that are neither an array nor "dynamic" are still refused by the SDK schema', () => {
    expect(entryProblems({ ...entry('r'), resources: 'static' } as unknown as Skill).join('; ')).toMatch(/resources/);
    expect(entryProblems({ ...entry('r'), resources: { 0: {} } } as unknown as Skill).join('; ')).toMatch(/resources/);
    expect(entryProblems({ ...entry('r'), resources: 'dynamic' } as Skill)).toEqual([]);
  });

  it("the rest of the entry is still the SDK schema's: a frontmatter that is not an object, _meta that is not a record", () => {
    expect(entryProblems({ ...entry('f'), frontmatter: 'name: f' } as unknown as Skill).join('; ')).toMatch(/frontmatter/);
    expect(entryProblems({ ...entry('f'), frontmatter: { name: 'f' } } as unknown as Skill).join('; ')).toMatch(/frontmatter\.description/);
    expect(entryProblems({ ...entry('m'), _meta: 'x' } as unknown as Skill).join('; ')).toMatch(/_meta/);
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
    const source = new CatalogSkillSource(fakeCatalog([entry('a-good'), bad, entry('c-good')]), 100, Number.POSITIVE_INFINITY, (uri) =>
      dropped.push(uri),
    );
    for (let i = 0; i < 3; i++)
      expect((await source.checkedPage(undefined)).skills.map((s) => s.uri)).toEqual([
        'skill://a-good/SKILL.md',
        'skill://c-good/SKILL.md',
      ]);
    expect(dropped).toEqual(['skill://b-bad/SKILL.md']);
  });

  it('ends before PAGE_MAX_BYTES of entries, never inside one, and never empty', async () => {
    // ~100 KB each: ten fit in a page, the eleventh starts the next.
    const big = (name: string): Skill =>
      entry(
        name,
        Array.from({ length: 700 }, (_, i) => `skill://${name}/references/${'f'.repeat(60)}-${i}.md`),
      );
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
    for (let p = 0; p < pages.length - 1; p++)
      expect(pages[p]!.reduce((a, b) => a + b + 1, 0) + pages[p + 1]![0]! + 1).toBeGreaterThan(PAGE_MAX_BYTES);
    // One entry over the whole budget still goes, alone.
    const huge = new CatalogSkillSource(
      fakeCatalog([
        entry(
          'z',
          Array.from({ length: 12_000 }, (_, i) => `skill://z/${i}-${'f'.repeat(60)}.md`),
        ),
      ]),
      100,
    );
    expect((await huge.checkedPage(undefined)).skills).toHaveLength(1);
  });
});
