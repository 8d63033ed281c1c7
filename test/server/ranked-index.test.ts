/**
 * `skill_search` ranks with RankedIndex#top (server/search/ranked-index.ts), a top-k query written
 * against MiniSearch's index fields for speed. It must answer exactly what `MiniSearch#search`
 * answers, cut to the limit: the same skills in the same order with bit-identical scores. Checked
 * on the search fixture (realistic descriptions) and on a generated corpus built to exercise stems,
 * prefixes, typos, repeated words, ties, and documents replaced and removed (discarded postings
 * that MiniSearch has not vacuumed yet rank as if they were gone).
 */
import { describe, expect, test } from 'vitest';
import { Catalog } from '../../server/catalog/catalog.js';
import { createSkillIndex, documentOf, type IndexedSkill } from '../../server/search/skill-search.js';
import type { RankedIndex } from '../../server/search/ranked-index.js';
import { DEFAULT_CATALOG_LIMITS } from '../../shared/limits.js';

const FIXTURE = new URL('../fixtures/search-skills', import.meta.url).pathname;

const LIMITS = [1, 3, 10, 50, 100_000];

/** MiniSearch's own answer. */
function reference(index: RankedIndex<IndexedSkill>, query: string): { id: string; score: number }[] {
  return index.search(query).map((hit) => ({ id: hit.id as string, score: hit.score }));
}

function expectSameAsMiniSearch(index: RankedIndex<IndexedSkill>, queries: string[]): number {
  let compared = 0;
  for (const query of queries) {
    const ours = (limit: number) => index.top(query, limit);
    const theirs = reference(index, query);
    for (const limit of LIMITS) {
      expect(ours(limit), `${JSON.stringify(query)}, limit ${limit}`).toEqual(theirs.slice(0, limit));
      compared += Math.min(limit, theirs.length);
    }
  }
  return compared;
}

/** mulberry32: a reproducible corpus. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const VOCABULARY = (
  'config configuration configure chart charts charting report reports reporting deploy deployment kubernetes kube ' +
  'docker dockerfile image images resize resizing pdf form forms fill spreadsheet formula formulas pivot table tables ' +
  'commit commits history branch merge review translate translation german slides presentation presentations deck ' +
  'invoice invoices vat total totals meeting transcript summary summarise database query queries slow index regex ' +
  'pattern secret secrets rotate rotating key keys browser website test testing'
).split(' ');

function generatedDocuments(count: number, seed: number): IndexedSkill[] {
  const random = rng(seed);
  const words = (n: number) => Array.from({ length: n }, () => VOCABULARY[Math.floor(random() * VOCABULARY.length)]).join(' ');
  return Array.from({ length: count }, (_, i) => ({
    id: `skill-${i}`,
    nameWords: `skill ${i} ${words(1 + Math.floor(random() * 2))}`,
    description: words(4 + Math.floor(random() * 30)),
    // Some documents have no details at all: a field missing from some documents.
    details: random() < 0.2 ? '' : words(Math.floor(random() * 12)),
  }));
}

const QUERIES = [
  'fill in a form inside a PDF',
  'configuration',
  'config',
  'conf',
  'kube',
  'dockerfile',
  'charting reports',
  'spredsheet formulas',
  'pivot tabel',
  'rotating API keys',
  'pdf pdf form',
  'form pdf pdf',
  'summarise a meeting transcript and the invoice totals',
  'zyxwvut',
  'test testing tests tested',
  'how do I deploy with kubernetes',
  'skill',
  '12',
];

describe('RankedIndex#top answers what MiniSearch#search answers, cut to the limit', () => {
  test('on the search fixture', async () => {
    const catalog = await Catalog.load({ roots: [FIXTURE], limits: DEFAULT_CATALOG_LIMITS, env: {} });
    const index = createSkillIndex();
    const records = catalog.skills();
    expect(records.length).toBeGreaterThan(20);
    index.addAll(records.map(documentOf));
    const fixtureQueries = [
      ...QUERIES,
      'make slides for a presentation',
      'slow database query',
      'recover a lost commit',
      'explain this regex',
      'write documents',
    ];
    expect(expectSameAsMiniSearch(index, fixtureQueries)).toBeGreaterThan(100);
  });

  test('on a generated corpus, and after documents were replaced and removed', async () => {
    const index = createSkillIndex();
    const documents = generatedDocuments(800, 7);
    index.addAll(documents);
    expect(expectSameAsMiniSearch(index, QUERIES)).toBeGreaterThan(1000);

    // What SkillSearch does on a rescan: discard, then add the new version. The discarded postings
    // stay until MiniSearch vacuums them (its own search meanwhile counts them in a word's document
    // frequency until it has walked past them); ours ranks as if they were gone already.
    const replacements = generatedDocuments(800, 99);
    for (let i = 0; i < 800; i += 3) {
      index.discard(`skill-${i}`);
      index.add({ ...replacements[i]!, id: `skill-${i}` });
    }
    for (let i = 1; i < 800; i += 7) index.discard(`skill-${i}`);
    expect(index.dirtCount).toBeGreaterThan(0);
    const whileDirty = QUERIES.map((query) => index.top(query, 100_000));
    await index.vacuum();
    expect(index.dirtCount).toBe(0);
    for (const [i, query] of QUERIES.entries()) expect(whileDirty[i], JSON.stringify(query)).toEqual(reference(index, query));
    expect(expectSameAsMiniSearch(index, QUERIES)).toBeGreaterThan(1000);
  });

  test('equal scores keep the order MiniSearch gives them (the order documents were first matched)', () => {
    const index = createSkillIndex();
    // Identical documents: every one scores the same for every query.
    index.addAll(Array.from({ length: 30 }, (_, i) => ({ id: `same-${i}`, nameWords: 'same', description: 'pdf forms', details: '' })));
    const hits = index.top('pdf', 5);
    expect(new Set(hits.map((h) => h.score)).size).toBe(1);
    expect(hits).toEqual(reference(index, 'pdf').slice(0, 5));
  });
});
