/**
 * @module The catalog: every served skill's record and every problem, scanned once at start (with
 * synchronous file-system calls: walk.ts says why), plus the published SEP-2640 entries. Entry digests are computed once per
 * skill from the bytes that will be served: on first use, and ahead of use in the background
 * after the start (a few ms at a time, so requests interleave), so that later skills/list pages
 * are ready when a client walks them. A read that finds different bytes rescans that skill, so new
 * bytes are never published under an old digest.
 */
import { createHash } from 'node:crypto';
import type { Skill } from '@modelcontextprotocol/server/ext/skills';
import { discoverSkills } from '../../shared/discover.js';
import { deadGrantRows, readGrantSource, type GrantSource } from '../../shared/grant.js';
import type { CatalogLimits } from '../../shared/limits.js';
import { PUBLISH_MAX_BYTES } from '../../shared/limits.js';
import type { Problem } from '../../shared/problems.js';
import { digestServedFile } from './digest.js';
import { scanSkill, type SkillRecord } from './skill.js';
import { uriFor } from './uri.js';
import type { DiscoveredSkill } from '../../shared/discover.js';

export interface CatalogOptions {
  roots: string[];
  limits: CatalogLimits;
  env: NodeJS.ProcessEnv;
  /** Problems found before scanning (bad configuration values). */
  configProblems?: Problem[];
}

/** How long one background slice of entry building may hold the event loop. */
const WARM_SLICE_MS = 4;
/** Scratch buffer for hashing: files are streamed through it, never held whole. */
const DIGEST_CHUNK_BYTES = 64 * 1024;

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export class Catalog {
  readonly grant: GrantSource;
  #records = new Map<string, SkillRecord>();
  #found = new Map<string, DiscoveredSkill>();
  #scanProblems = new Map<string, Problem[]>();
  #fixedProblems: Problem[];
  #entries = new WeakMap<SkillRecord, Skill>();
  #limits: CatalogLimits;
  /** Sorted by name; rebuilt after a (re)scan changed the records. */
  #sorted: SkillRecord[] | undefined;
  #scratch = Buffer.allocUnsafe(DIGEST_CHUNK_BYTES);

  private constructor(grant: GrantSource, fixed: Problem[], limits: CatalogLimits) {
    this.grant = grant;
    this.#fixedProblems = fixed;
    this.#limits = limits;
  }

  static async load(options: CatalogOptions): Promise<Catalog> {
    const discovery = await discoverSkills(options.roots, options.limits.maxSkills);
    const catalog = new Catalog(readGrantSource(options.env), [...(options.configProblems ?? []), ...discovery.problems], options.limits);
    await Promise.all(discovery.skills.map((found) => catalog.#scan(found)));
    const grant = catalog.grant;
    if (grant.kind === 'owner' && grant.error) catalog.#fixedProblems.push({ path: 'MCP_SKILL_RUN', reason: 'grant', detail: grant.error });
    for (const dead of deadGrantRows(grant, (name) => {
      const record = catalog.#records.get(name);
      return record ? (record.declaration?.run ?? []) : undefined;
    }, (name) => catalog.#records.get(name)?.declaration?.egress ?? [])) {
      catalog.#fixedProblems.push({ path: `MCP_SKILL_RUN/${dead.row.skill}/${dead.row.script}`, reason: 'grant', detail: dead.why });
    }
    catalog.#warmEntries();
    return catalog;
  }

  /**
   * Builds every published entry ahead of use, in name (= page) order, in slices of a few ms.
   * Measured on 5,000 skills / 50,000 files: ~1.5 s of hashing that would otherwise land on the
   * skills/list pages a client walks (~100 ms each instead of a few ms).
   */
  #warmEntries(): void {
    const queue = this.published();
    let next = 0;
    const slice = (): void => {
      const until = performance.now() + WARM_SLICE_MS;
      while (next < queue.length && performance.now() < until) {
        const record = queue[next++]!;
        if (this.#records.get(record.name) !== record) continue;
        try {
          this.#entryNow(record);
        } catch {
          // Left unbuilt: the page that lists this skill builds it again and reports the error.
        }
      }
      if (next < queue.length) setImmediate(slice).unref();
    };
    setImmediate(slice).unref();
  }

  async #scan(found: DiscoveredSkill): Promise<void> {
    const { record, problems } = await scanSkill(found, this.#limits);
    this.#found.set(found.name, found);
    this.#scanProblems.set(found.name, problems);
    if (record) this.#records.set(found.name, record);
    else this.#records.delete(found.name);
    this.#sorted = undefined;
  }

  /** Rescans one skill (its bytes changed on disk) and swaps its record in. */
  async refresh(name: string): Promise<void> {
    const found = this.#found.get(name);
    if (found) await this.#scan(found);
  }

  get problems(): Problem[] {
    const all = [...this.#fixedProblems];
    for (const problems of this.#scanProblems.values()) all.push(...problems);
    return all.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  /** Every served skill, sorted by name. */
  skills(): SkillRecord[] {
    this.#sorted ??= [...this.#records.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return [...this.#sorted];
  }

  get(name: string): SkillRecord | undefined {
    return this.#records.get(name);
  }

  /** Skills in the `skill://` namespace, sorted by name (= URI order). */
  published(): SkillRecord[] {
    return this.skills().filter((s) => s.published);
  }

  /** The SEP-2640 entry of a published skill: digests and sizes of the bytes served now. */
  async entry(record: SkillRecord): Promise<Skill> {
    return this.#entryNow(record);
  }

  /** The entry, built now if it is not yet; a file a read would refuse throws (nothing is cached). */
  #entryNow(record: SkillRecord): Skill {
    let entry = this.#entries.get(record);
    if (!entry) {
      const resources = record.files.map((file) => {
        const { hex, size } = digestServedFile(record.realDir, file.path, PUBLISH_MAX_BYTES, this.#scratch);
        return { uri: uriFor(record.name, file.path)!, digest: `sha256:${hex}`, size };
      });
      entry = { uri: uriFor(record.name, 'SKILL.md')!, frontmatter: record.frontmatter as Skill['frontmatter'], resources };
      this.#entries.set(record, entry);
    }
    return entry;
  }

  /**
   * Whether `bytes` just read from `path` still match what this record published (or would). When
   * not, the skill is rescanned so the next listing carries the new digest.
   */
  async confirmFresh(record: SkillRecord, path: string, bytes: Uint8Array): Promise<void> {
    const entry = this.#entries.get(record);
    const scanned = record.files.find((f) => f.path === path);
    let stale = scanned === undefined || scanned.size !== bytes.length;
    if (!stale && entry) {
      const published = entry?.resources === 'dynamic' ? undefined : entry?.resources.find((r) => r.uri === uriFor(record.name, path));
      stale = published !== undefined && published.digest !== `sha256:${sha256Hex(bytes)}`;
    }
    if (stale && this.#records.get(record.name) === record) await this.refresh(record.name);
  }

  /**
   * A listed file of `record` could not be served any more (deleted, or swapped for a link or a
   * FIFO): rescan the skill so the manifest stops promising it.
   */
  async confirmGone(record: SkillRecord, path: string): Promise<void> {
    if (record.files.some((f) => f.path === path) && this.#records.get(record.name) === record) await this.refresh(record.name);
  }
}
