/**
 * @module The full-text index behind `skill_search`: each served skill's name, description,
 * `when_to_use` and SKILL.md headings, in MiniSearch (BM25 ranking, prefix and typo matching) with
 * English stemming and stop words, so "fill in a form inside a PDF" finds the skill that says
 * "Fill in ... the form fields of PDF documents". The catalog tells it which skills changed; the
 * changes are applied in small slices in the background and before any search, so thousands of
 * skills never hold the event loop at once (bench/RESULTS.md: ~0.2 s to index 5,000 skills).
 */
import MiniSearch from 'minisearch';
import { stemmer } from 'stemmer';
import { RankedIndex } from './ranked-index.js';
import { SkillMcpError } from '../../shared/errors.js';
import type { SkillRecord } from '../catalog/skill.js';

/** A query longer than this is refused: a description of a task fits, a pasted document does not. */
export const MAX_QUERY_CHARS = 500;
/** How long one background slice of indexing may hold the event loop. */
const INDEX_SLICE_MS = 4;
/**
 * How long after the index is made its background indexing waits. A start puts every skill in at
 * once, and indexing them (~40 ms of CPU at 553 skills, ~0.2 s at 5,000) would land on the way to
 * the first answers, which do not need it (bench/RESULTS.md, warm start); a search in the meantime
 * indexes everything pending first, as always.
 */
const FIRST_INDEX_DELAY_MS = 1_000;

/**
 * Words that say nothing about which skill fits ("how do I ... with my ..."). Dropped from both the
 * index and the query: with prefix matching on, "a" alone would match every word starting with a.
 */
const STOP_WORDS = new Set(
  'a an and any are as at be by can could do does for from get got has have how i if in into inside is it its me my need of on onto or our please should so some that the their them then there this to up us use using want was we what when where which who why will with without would you your'.split(
    ' ',
  ),
);

export interface SearchHit {
  name: string;
  description: string;
  whenToUse?: string;
  /** Relevance (BM25 with field boosts); only the order means something. */
  score: number;
}

export interface IndexedSkill {
  id: string;
  nameWords: string;
  description: string;
  /** `when_to_use` and the headings: one field, since every field costs a lookup per query word. */
  details: string;
}

function processTerm(term: string): string | null {
  const word = term.toLowerCase();
  return STOP_WORDS.has(word) ? null : stemmer(word);
}

const tokenize = MiniSearch.getDefault('tokenize') as (text: string) => string[];

/** The stemmed words of `text` that the index can match. */
export function searchTerms(text: string): string[] {
  return tokenize(text)
    .map((t) => (t === '' ? null : processTerm(t)))
    .filter((t): t is string => t !== null && t !== '');
}

export function documentOf(record: SkillRecord): IndexedSkill {
  return {
    id: record.name,
    // "pdf-forms" is found as "pdf" and "forms".
    nameWords: record.name.replace(/[-_.]+/g, ' '),
    description: record.description,
    details: [record.whenToUse ?? '', ...record.headings].join('\n'),
  };
}

/** Checks a query before it reaches the index; a refusal says what would work. */
export function checkQuery(query: string): string {
  const trimmed = query.trim();
  if (trimmed === '')
    throw new SkillMcpError('INVALID_QUERY', 'the query is empty: describe the task in a few words (for example "fill in a PDF form").');
  if ([...trimmed].length > MAX_QUERY_CHARS) {
    throw new SkillMcpError(
      'INVALID_QUERY',
      `the query is ${[...trimmed].length} characters long; at most ${MAX_QUERY_CHARS}. Describe the task in a few words instead of pasting text.`,
    );
  }
  if (!/[\p{L}\p{N}]/u.test(trimmed))
    throw new SkillMcpError('INVALID_QUERY', 'the query has no letters or digits: describe the task in words.');
  if (searchTerms(trimmed).length === 0) {
    throw new SkillMcpError(
      'INVALID_QUERY',
      'the query holds only common words ("how", "the", "with", ...): add what the task is about, for example "spreadsheet formulas".',
    );
  }
  return trimmed;
}

/** The index `skill_search` ranks with (exported for the test that checks it against MiniSearch#search). */
export function createSkillIndex(): RankedIndex<IndexedSkill> {
  return new RankedIndex<IndexedSkill>({
    fields: ['nameWords', 'description', 'details'],
    storeFields: [],
    processTerm,
    searchOptions: {
      boost: { nameWords: 3, description: 2, details: 1.5 },
      // Prefixes from 3 characters ("kube" finds kubernetes); typos from 5 (one edit per 5 characters).
      prefix: (term) => term.length >= 3,
      fuzzy: (term) => (term.length >= 5 ? 0.2 : false),
      combineWith: 'OR',
    },
  });
}

export class SkillSearch {
  #index = createSkillIndex();
  /** Changes not yet in the index: a record to (re)index, or null to remove. */
  #pending = new Map<string, SkillRecord | null>();
  #scheduled = false;
  #records = new Map<string, SkillRecord>();
  readonly #madeAt = performance.now();

  /** (Re)indexes `record` soon. */
  put(record: SkillRecord): void {
    this.#pending.set(record.name, record);
    this.#schedule();
  }

  remove(name: string): void {
    this.#pending.set(name, null);
    this.#schedule();
  }

  /** The best `limit` skills for `query` (already checked with {@link checkQuery}). */
  search(query: string, limit: number): SearchHit[] {
    this.#apply(Number.POSITIVE_INFINITY);
    return this.#index.top(query, limit).map((hit) => {
      const record = this.#records.get(hit.id)!;
      return {
        name: record.name,
        description: record.description,
        ...(record.whenToUse !== undefined ? { whenToUse: record.whenToUse } : {}),
        score: Math.round(hit.score * 1000) / 1000,
      };
    });
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    const slice = (): void => {
      this.#apply(performance.now() + INDEX_SLICE_MS);
      if (this.#pending.size > 0) setImmediate(slice).unref();
      else this.#scheduled = false;
    };
    const wait = this.#madeAt + FIRST_INDEX_DELAY_MS - performance.now();
    if (wait > 0) setTimeout(slice, wait).unref();
    else setImmediate(slice).unref();
  }

  /** Applies pending changes until `until` (a `performance.now()` time). */
  #apply(until: number): void {
    for (const [name, record] of this.#pending) {
      this.#pending.delete(name);
      if (this.#records.has(name)) {
        this.#index.discard(name);
        this.#records.delete(name);
      }
      if (record) {
        this.#index.add(documentOf(record));
        this.#records.set(name, record);
      }
      if (performance.now() >= until) return;
    }
  }
}
