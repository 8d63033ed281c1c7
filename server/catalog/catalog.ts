/**
 * @module The catalog: every served skill's record and every problem, scanned once at start (all
 * skills in parallel), plus the published SEP-2640 entries. Entry digests are computed once per
 * skill, on first use, from the bytes that will be served; a read that finds different bytes
 * rescans that skill, so new bytes are never published under an old digest.
 */
import { createHash } from 'node:crypto';
import type { Skill } from '@modelcontextprotocol/server/ext/skills';
import { discoverSkills } from '../../shared/discover.js';
import { deadGrantRows, readGrantSource, type GrantSource } from '../../shared/grant.js';
import type { CatalogLimits } from '../../shared/limits.js';
import { PUBLISH_MAX_BYTES } from '../../shared/limits.js';
import type { Problem } from '../../shared/problems.js';
import { readServedFile } from './read.js';
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

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export class Catalog {
  readonly grant: GrantSource;
  #records = new Map<string, SkillRecord>();
  #found = new Map<string, DiscoveredSkill>();
  #scanProblems = new Map<string, Problem[]>();
  #fixedProblems: Problem[];
  #entries = new WeakMap<SkillRecord, Promise<Skill>>();
  #limits: CatalogLimits;

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
    })) {
      catalog.#fixedProblems.push({ path: `MCP_SKILL_RUN/${dead.row.skill}/${dead.row.script}`, reason: 'grant', detail: dead.why });
    }
    return catalog;
  }

  async #scan(found: DiscoveredSkill): Promise<void> {
    const { record, problems } = await scanSkill(found, this.#limits);
    this.#found.set(found.name, found);
    this.#scanProblems.set(found.name, problems);
    if (record) this.#records.set(found.name, record);
    else this.#records.delete(found.name);
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
    return [...this.#records.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  get(name: string): SkillRecord | undefined {
    return this.#records.get(name);
  }

  /** Skills in the `skill://` namespace, sorted by name (= URI order). */
  published(): SkillRecord[] {
    return this.skills().filter((s) => s.published);
  }

  /** The SEP-2640 entry of a published skill: digests and sizes of the bytes served now. */
  entry(record: SkillRecord): Promise<Skill> {
    let entry = this.#entries.get(record);
    if (!entry) {
      entry = this.#buildEntry(record);
      this.#entries.set(record, entry);
      entry.catch(() => this.#entries.delete(record));
    }
    return entry;
  }

  async #buildEntry(record: SkillRecord): Promise<Skill> {
    const resources = await Promise.all(
      record.files.map(async (file) => {
        const { bytes } = await readServedFile(record, file.path, PUBLISH_MAX_BYTES);
        return { uri: uriFor(record.name, file.path)!, digest: `sha256:${sha256Hex(bytes)}`, size: bytes.length };
      }),
    );
    return { uri: uriFor(record.name, 'SKILL.md')!, frontmatter: record.frontmatter as Skill['frontmatter'], resources };
  }

  /**
   * Whether `bytes` just read from `path` still match what this record published (or would). When
   * not, the skill is rescanned so the next listing carries the new digest.
   */
  async confirmFresh(record: SkillRecord, path: string, bytes: Uint8Array): Promise<void> {
    const pending = this.#entries.get(record);
    const scanned = record.files.find((f) => f.path === path);
    let stale = scanned === undefined || scanned.size !== bytes.length;
    if (!stale && pending) {
      const entry = await pending.catch(() => undefined);
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
