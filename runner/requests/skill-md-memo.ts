/**
 * @module The runner's memory of SKILL.md parses. Every prepare and every run reads the skill's
 * SKILL.md afresh (runner/requests/derive.ts) and parses its frontmatter — the strict YAML parse
 * was ~0.5-0.7 ms of each (a CPU profile of bench/run-floor.mjs), run rarely enough to stay cold in
 * the JIT. The parse is a pure function of the text, so the result for the very same text is
 * reused: keyed by the sha256 of the bytes just read, never by a path, a size or a time, so an
 * edit (of any byte, whatever its size and mtime) is a different key. Nothing read from disk is
 * skipped; only the parse of text already seen is.
 *
 * Bounded (MAX_ENTRIES, oldest out first) and without the body; results are frozen, so a caller
 * that tried to change one would fail loudly instead of changing the next run's plan.
 */
import { createHash } from 'node:crypto';
import { parseSkillMd } from '../../shared/frontmatter.js';
import type { Frontmatter } from '../../shared/frontmatter.js';

/** What derive needs of a parse: the frontmatter and the `mcp-host:` block's own parse error. */
export interface SkillMdParse {
  frontmatter: Frontmatter;
  declarationError?: string;
}

/** Distinct SKILL.md texts remembered (a catalog's worth of run skills; each is small: no body). */
export const MAX_ENTRIES = 128;

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

export class SkillMdMemo {
  readonly #parsed = new Map<string, SkillMdParse>();

  /** `parseSkillMd(text, maxFrontmatterBytes)`'s frontmatter and declaration error; throws as it does. */
  parse(text: string, maxFrontmatterBytes: number): SkillMdParse {
    const key = `${maxFrontmatterBytes}:${createHash('sha256').update(text).digest('hex')}`;
    const known = this.#parsed.get(key);
    if (known) return known;
    const { frontmatter, declarationError } = parseSkillMd(text, maxFrontmatterBytes);
    const parsed: SkillMdParse = deepFreeze(declarationError !== undefined ? { frontmatter, declarationError } : { frontmatter });
    if (this.#parsed.size >= MAX_ENTRIES) this.#parsed.delete(this.#parsed.keys().next().value!);
    this.#parsed.set(key, parsed);
    return parsed;
  }

  get size(): number {
    return this.#parsed.size;
  }
}
