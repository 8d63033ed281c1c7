/**
 * @module MiniSearch with a top-k query: the same matching and the same scores as
 * `MiniSearch#search` (BM25+ per field with boosts, prefix and fuzzy expansion with MiniSearch's
 * weights, OR of the query terms, the score times the number of query terms matched), computed into
 * typed arrays indexed by MiniSearch's short document ids, and only the best `limit` hits kept.
 *
 * Why: `MiniSearch#search` builds a result object per matching document and per term (the matched
 * terms, a `match` map of fields), merges them term by term, materializes and sorts every hit. On
 * a catalog where the query words occur in nearly every skill (the bench's 5,000 generated skills)
 * that was ~95% of a query's time, a sixth of it garbage collection (docs/search.md has the
 * profile). Here a query allocates nothing per document.
 *
 * It reads MiniSearch's `protected` index fields, which a subclass is allowed to: the posting maps
 * (`_index`: term → field id → short id → term frequency), field lengths and averages, the live
 * document ids. MiniSearch is pinned (package.json), and test/server/ranked-index.test.ts checks
 * hit for hit, score for score, that this agrees with `MiniSearch#search` — an upgrade that changes
 * those internals fails there.
 */
import MiniSearch, { type Options, type SearchOptions } from 'minisearch';

export interface RankedHit {
  id: string;
  score: number;
}

type FieldTermData = Map<number, Map<number, number>>;

/** Typed arrays indexed by short document id, with epochs instead of clearing them per query. */
class Scratch {
  total = new Float64Array(0);
  term = new Float64Array(0);
  quality = new Uint16Array(0);
  /** The query (epoch) that last touched each document. */
  queryMark = new Uint32Array(0);
  /** The query term (epoch) that last touched each document. */
  termMark = new Uint32Array(0);
  touched = new Int32Array(0);
  termTouched = new Int32Array(0);
  epoch = 0;

  ensure(size: number): void {
    if (this.total.length >= size) return;
    const n = Math.max(size, this.total.length * 2, 64);
    this.total = new Float64Array(n);
    this.term = new Float64Array(n);
    this.quality = new Uint16Array(n);
    this.queryMark = new Uint32Array(n);
    this.termMark = new Uint32Array(n);
    this.touched = new Int32Array(n);
    this.termTouched = new Int32Array(n);
    this.epoch = 0;
  }

  next(): number {
    if (this.epoch >= 0xfffffff0) {
      this.queryMark.fill(0);
      this.termMark.fill(0);
      this.epoch = 0;
    }
    return ++this.epoch;
  }
}

export class RankedIndex<T> extends MiniSearch<T> {
  #scratch = new Scratch();

  constructor(options: Options<T>) {
    super(options);
    const search = this._options.searchOptions as SearchOptions;
    // What `top` implements; anything else would be answered differently from MiniSearch#search.
    if ((search.combineWith ?? 'OR').toUpperCase() !== 'OR') throw new Error('RankedIndex: only combineWith OR is implemented');
    if (
      search.boostDocument !== undefined ||
      search.filter !== undefined ||
      search.boostTerm !== undefined ||
      search.fields !== undefined
    ) {
      throw new Error('RankedIndex: boostDocument, boostTerm, filter and fields are not implemented');
    }
    if (typeof search.weights?.fuzzy !== 'number' || typeof search.weights?.prefix !== 'number')
      throw new Error('RankedIndex: give both weights or neither');
  }

  /**
   * The best `limit` documents for `query`, best first, as `MiniSearch#search(query)` would rank
   * them (equal scores in its order too: the order in which documents were first matched).
   */
  top(query: string, limit: number): RankedHit[] {
    const options = this._options;
    const search = options.searchOptions as Required<Pick<SearchOptions, 'maxFuzzy' | 'weights' | 'bm25'>> & SearchOptions;
    const tokenize = search.tokenize ?? options.tokenize;
    const processTerm = search.processTerm ?? options.processTerm;
    const terms = tokenize(query)
      .flatMap((term) => processTerm(term))
      .filter((term): term is string => !!term);
    if (terms.length === 0 || limit <= 0) return [];

    const s = this.#scratch;
    s.ensure(this._nextId);
    const queryEpoch = s.next();
    let touched = 0;
    const fields = options.fields.map((field) => ({ id: this._fieldIds[field]!, boost: search.boost?.[field] || 1 }));
    const { k, b, d } = search.bm25;
    const total = this._documentCount;
    // Discarded documents stay in the postings until MiniSearch vacuums them; they have no field lengths.
    const dirty = this._dirtCount > 0;

    for (const [i, term] of terms.entries()) {
      const termEpoch = s.next();
      let termTouched = 0;
      const add = (data: FieldTermData | undefined, weight: number): void => {
        if (data === undefined) return;
        for (const field of fields) {
          const freqs = data.get(field.id);
          if (freqs === undefined) continue;
          let matching = freqs.size;
          if (dirty) for (const doc of freqs.keys()) if (!this._fieldLength.has(doc)) matching--;
          const idf = Math.log(1 + (total - matching + 0.5) / (matching + 0.5));
          const average = this._avgFieldLength[field.id]!;
          const factor = weight * field.boost;
          for (const [doc, freq] of freqs) {
            const lengths = this._fieldLength.get(doc);
            if (lengths === undefined) continue;
            // MiniSearch's calcBM25Score, operation for operation (the same floating-point result).
            const raw = idf * (d + (freq * (k + 1)) / (freq + k * (1 - b + (b * lengths[field.id]!) / average)));
            if (s.termMark[doc] !== termEpoch) {
              s.termMark[doc] = termEpoch;
              s.term[doc] = 0;
              s.termTouched[termTouched++] = doc;
            }
            s.term[doc] = s.term[doc]! + factor * raw;
          }
        }
      };

      add(this._index.get(term), 1);
      const fuzzy = typeof search.fuzzy === 'function' ? search.fuzzy(term, i, terms) : search.fuzzy || false;
      const prefix = typeof search.prefix === 'function' ? search.prefix(term, i, terms) : search.prefix === true;
      let fuzzyMatches: Map<string, [FieldTermData, number]> | undefined;
      if (fuzzy) {
        const share = fuzzy === true ? 0.2 : fuzzy;
        const maxDistance = share < 1 ? Math.min(search.maxFuzzy, Math.round(term.length * share)) : share;
        if (maxDistance) fuzzyMatches = this._index.fuzzyGet(term, maxDistance);
      }
      if (prefix) {
        for (const [match, data] of this._index.atPrefix(term)) {
          const distance = match.length - term.length;
          if (!distance) continue;
          fuzzyMatches?.delete(match);
          add(data, (search.weights.prefix! * match.length) / (match.length + 0.3 * distance));
        }
      }
      if (fuzzyMatches) {
        for (const [match, [data, distance]] of fuzzyMatches) {
          if (!distance) continue;
          add(data, (search.weights.fuzzy! * match.length) / (match.length + distance));
        }
      }

      // OR: this term's score adds to each document's, and a first occurrence of the word counts
      // once more toward the document's quality (a repeated word matches the same documents).
      const first = terms.indexOf(term) === i;
      for (let j = 0; j < termTouched; j++) {
        const doc = s.termTouched[j]!;
        if (s.queryMark[doc] !== queryEpoch) {
          s.queryMark[doc] = queryEpoch;
          s.total[doc] = 0;
          s.quality[doc] = 0;
          s.touched[touched++] = doc;
        }
        s.total[doc] = s.total[doc]! + s.term[doc]!;
        if (first) s.quality[doc] = s.quality[doc]! + 1;
      }
    }

    // The best `limit`, kept sorted; a later document with an equal score goes after (a stable order).
    const bestDocs: number[] = [];
    const bestScores: number[] = [];
    for (let j = 0; j < touched; j++) {
      const doc = s.touched[j]!;
      const score = s.total[doc]! * s.quality[doc]!;
      if (bestDocs.length === limit && score <= bestScores[limit - 1]!) continue;
      let at = bestDocs.length === limit ? limit - 1 : bestDocs.length;
      while (at > 0 && bestScores[at - 1]! < score) {
        bestDocs[at] = bestDocs[at - 1]!;
        bestScores[at] = bestScores[at - 1]!;
        at--;
      }
      bestDocs[at] = doc;
      bestScores[at] = score;
    }
    return bestDocs.map((doc, j) => ({ id: this._documentIds.get(doc) as string, score: bestScores[j]! }));
  }
}
