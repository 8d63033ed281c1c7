/**
 * `skill_search` over a real stdio transport, on a fixture collection whose descriptions read like
 * real skills: plain-language requests, word stems, prefixes, typos, when-to-use notes and SKILL.md
 * headings each find the expected skill in the top 3; empty, huge and non-text queries get clear
 * refusals.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ERAS, REPO, callTool, expectNoLeftovers, serve, type Served } from './harness.js';

afterAll(expectNoLeftovers);

const SEARCH_SKILLS = `${REPO}test/fixtures/search-skills`;

/** [query, the skill that must be in the top 3, what it exercises] */
const QUERIES: [string, string, string][] = [
  ['fill in a form inside a PDF', 'pdf-forms', 'a plain-language request'],
  ['make slides for a presentation', 'slide-decks', 'a plain-language request'],
  ['check my website works in a browser', 'webapp-testing', 'a plain-language request'],
  ['summarise a meeting transcript', 'meeting-notes', 'a plain-language request'],
  ['slow database query', 'sql-queries', 'a plain-language request'],
  ['translate the UI into German', 'translation', 'a plain-language request'],
  ['charting', 'data-charts', 'a word stem (chart)'],
  ['resizing photos', 'image-resizing', 'a word stem (resize)'],
  ['presentations', 'slide-decks', 'a word stem (presentation)'],
  ['recover a lost commit', 'git-history', 'a word stem (commits)'],
  ['kube', 'kubernetes-deploy', 'a prefix'],
  ['dockerfile', 'docker-images', 'a prefix of a longer word'],
  ['spredsheet formulas', 'spreadsheet-formulas', 'a typo'],
  ['pivot tabel', 'spreadsheet-formulas', 'a typo'],
  ['my program crashed with an exception', 'stack-trace-debugging', 'the when_to_use note'],
  ['rotating API keys', 'secrets-hygiene', 'a SKILL.md heading only'],
  ['explain this regex', 'regex-helper', 'the name'],
];

interface Hit {
  name: string;
  description: string;
  whenToUse?: string;
  score: number;
}

describe.each(ERAS)('skill_search, $name', (era) => {
  let served: Served;
  beforeAll(async () => {
    served = await serve({ SKILLS_DIR: SEARCH_SKILLS }, era);
  });
  afterAll(async () => {
    await served?.close();
  });

  const search = async (args: Record<string, unknown>) => callTool(served.client, 'skill_search', args);

  test('is offered as a read-only, closed-world reader', async () => {
    const { tools } = await served.client.listTools();
    const tool = tools.find((t) => t.name === 'skill_search')!;
    expect(tool.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false, openWorldHint: false });
    expect(tools.find((t) => t.name === 'skill_list')!.description).toMatch(/skill_search/);
  });

  test.each(QUERIES)('"%s" finds %s in the top 3 (%s)', async (query, expected) => {
    const answer = await search({ query });
    expect(answer.isError, answer.text).toBe(false);
    const hits = answer.value['results'] as Hit[];
    expect(hits.slice(0, 3).map((h) => h.name)).toContain(expected);
  });

  test('results are ranked, carry name, description, whenToUse and score, and honour limit', async () => {
    const answer = await search({ query: 'pdf form', limit: 2 });
    const hits = answer.value['results'] as Hit[];
    expect(hits.length).toBeLessThanOrEqual(2);
    expect(hits[0]).toEqual({
      name: 'pdf-forms',
      description:
        'Fill in, flatten and validate the form fields of PDF documents, and extract text and tables from PDFs. Use for anything that edits or reads a PDF file.',
      whenToUse: 'the user hands over a PDF with fields to complete, or asks what a PDF says',
      score: expect.any(Number),
    });
    const all = (await search({ query: 'write documents', limit: 50 })).value['results'] as Hit[];
    expect(all.map((h) => h.score)).toEqual([...all.map((h) => h.score)].sort((a, b) => b - a));
  });

  test('a query nothing matches is an empty result with a hint, not an error', async () => {
    const answer = await search({ query: 'zyxwvut qqqq' });
    expect(answer.isError).toBe(false);
    expect(answer.value['results']).toEqual([]);
    expect(answer.value['hint']).toMatch(/skill_list/);
  });

  test.each([
    ['an empty query', '', /empty/],
    ['a blank query', '   \n\t', /empty/],
    ['a huge query', 'pdf '.repeat(200), /at most 500/],
    ['a query without letters or digits', '?!… — ###', /no letters or digits/],
    ['control characters only', '\u0000\u0001\u0002', /no letters or digits/],
    ['only common words', 'how do I do it with the', /only common words/],
  ])('%s is refused INVALID_QUERY with what would work', async (_what, query, message) => {
    const answer = await search({ query });
    expect(answer.isError).toBe(true);
    expect(answer.value['error']).toMatchObject({ code: 'INVALID_QUERY', message: expect.stringMatching(message) });
  });

  test.each([
    ['a number', 42],
    ['an object', { text: 'pdf' }],
    ['a list', ['pdf']],
    ['nothing', undefined],
  ])('a query that is not text (%s) is refused, naming the query argument', async (_what, query) => {
    const result = await served.client
      .callTool({ name: 'skill_search', arguments: query === undefined ? {} : { query } })
      .catch((error: unknown) => ({ isError: true, content: [{ type: 'text', text: String(error) }] }));
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toMatch(/query/);
  });
});
