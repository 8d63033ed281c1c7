/**
 * @module The catalog: every served skill's record and every problem, scanned at start (with
 * synchronous file-system calls: walk.ts says why), plus the published SEP-2640 entries and the
 * search index. Entry digests are computed once per skill from the bytes that will be served: on
 * first use, and ahead of use in the background after the start (a few ms at a time, so requests
 * interleave), so that later skills/list pages are ready when a client walks them.
 *
 * It stays live: {@link Catalog.update} rescans the skills that changed paths touch (and re-runs
 * discovery only when the set of skill folders may have changed), one update at a time, and tells
 * its listeners when something a client sees changed. A read that finds different bytes rescans
 * that skill the same way, so new bytes are never published under an old digest.
 */
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import type { Skill } from '@modelcontextprotocol/server/ext/skills';
import { declarationsDigest, listDeclarationsDir, MAX_DECLARATION_ENTRIES, skillOfEntry } from '../../shared/declaration-files.js';
import { OPERATOR_PLACE, strayDeclarationProblems } from '../../shared/declaration-source.js';
import { discoverSkills, rootLabel, type DiscoveredSkill } from '../../shared/discover.js';
import { PROVENANCE_META_KEY, provenanceOf, readPullLock, type Provenance } from '../../shared/provenance.js';
import type { Lock } from '../../shared/pull-lock.js';
import { deadGrantRows, readGrantSource, type GrantSource } from '../../shared/grant.js';
import type { CatalogLimits } from '../../shared/limits.js';
import { PUBLISH_MAX_BYTES } from '../../shared/limits.js';
import type { Problem } from '../../shared/problems.js';
import { declarationsDirOf } from '../../shared/settings.js';
import { SkillSearch } from '../search/skill-search.js';
import { affectedBy } from './affected.js';
import { digestServedFile } from './digest.js';
import { DigestIndex, indexKey } from './digest-index.js';
import { scanSkill, type ScanMemory, type SkillRecord } from './skill.js';
import { uriFor } from './uri.js';

export interface CatalogOptions {
  roots: string[];
  limits: CatalogLimits;
  env: NodeJS.ProcessEnv;
  /** Problems found before scanning (bad configuration values). */
  configProblems?: Problem[];
  /** Digests remembered from an earlier start (digest-index.ts); absent: every file is hashed. */
  digestIndex?: DigestIndex;
}

/**
 * What changed for clients in one update: the skills whose listing, entry or prompt differs, and
 * whether the problems (`skill_list`'s `problems`, `problemCount`) differ.
 */
export interface CatalogChange {
  names: string[];
  problems: boolean;
}

/** What to look at again: changed real paths, named skills, or every skill of some roots (polling). */
export interface UpdateRequest {
  paths?: Iterable<string>;
  names?: Iterable<string>;
  roots?: Iterable<number>;
}

/** How long one background slice of entry building (or of a long rescan) may hold the event loop. */
const SLICE_MS = 4;
/** Scratch buffer for hashing: files are streamed through it, never held whole. */
const DIGEST_CHUNK_BYTES = 64 * 1024;

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** A short fingerprint of a sorted name list: cursors carry it, so a page is never cut from another list. */
function fingerprintOf(names: readonly string[]): string {
  return createHash('sha256').update(names.join('\n')).digest('base64url').slice(0, 12);
}

function realRootsOf(roots: readonly string[]): (string | undefined)[] {
  return roots.map((root) => {
    try {
      return realpathSync.native(root);
    } catch {
      return undefined;
    }
  });
}

/**
 * One answer's reads of each root's `.skill-mcp-lock.json`, by root: a page of entries (skills/list,
 * skill_list) asks for the lock of every skill on it, and one look per root and page is enough to
 * show what the lock says now (it was one `lstat` per entry: 6 % of a skills/list request).
 */
export type LockReads = Map<string, Lock | undefined>;

function readLockOnce(root: string, locks: LockReads | undefined): Lock | undefined {
  if (locks === undefined) return readPullLock(root);
  if (!locks.has(root)) locks.set(root, readPullLock(root));
  return locks.get(root);
}

/** Compares problem lists (already sorted by path). */
function problemsKey(problems: readonly Problem[]): string {
  return JSON.stringify(problems.map((p) => [p.path, p.reason, p.detail]));
}

const yieldToRequests = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class Catalog {
  readonly grant: GrantSource;
  /** Full-text index over the served skills, kept in step with every (re)scan. */
  readonly search = new SkillSearch();
  #roots: readonly string[];
  /** Each configured root's real path, undefined while it cannot be resolved (missing); refreshed at each discovery. */
  #realRoots: (string | undefined)[];
  /** `Date.now()` just before the first discovery: a file changed since may have changed after it was scanned. */
  #scanStartedAt = Date.now();
  #records = new Map<string, SkillRecord>();
  #found = new Map<string, DiscoveredSkill>();
  #scanProblems = new Map<string, Problem[]>();
  #configProblems: Problem[];
  #discoveryProblems: Problem[] = [];
  #grantProblems: Problem[] = [];
  /** `SKILL_MCP_DECLARATIONS`, and the digest of what it held at the last (re)scan: a change rescans every skill. */
  readonly declarationsDir: string | undefined;
  #declarationsDigest = '';
  #declarationProblems: Problem[] = [];
  #entries = new WeakMap<SkillRecord, Skill>();
  #limits: CatalogLimits;
  /** Sorted by name; rebuilt after a (re)scan changed the records. */
  #sorted: SkillRecord[] | undefined;
  #published: { records: SkillRecord[]; fingerprint: string } | undefined;
  #servedFingerprint: string | undefined;
  #scratch = Buffer.allocUnsafe(DIGEST_CHUNK_BYTES);
  #index: DigestIndex;
  /**
   * Whether a digest may be served from the index on the walk's stat alone (digest.ts): not in a
   * root process. Taken when the catalog is made, after a root launcher dropped to its front's uid.
   */
  readonly #trustWalkedStates = process.getuid?.() !== 0;
  /** What a scan may take from the index (skill.ts ScanMemory); undefined without one. */
  readonly #memory: ScanMemory | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #listeners = new Set<(change: CatalogChange) => void>();

  private constructor(options: CatalogOptions) {
    this.grant = readGrantSource(options.env);
    this.#roots = options.roots;
    this.#realRoots = realRootsOf(options.roots);
    this.#limits = options.limits;
    this.#index = options.digestIndex ?? DigestIndex.none();
    const index = this.#index;
    this.#memory = !index.enabled
      ? undefined
      : {
          parsedSkillMd: (key) => index.parsedSkillMd(key),
          rememberParsedSkillMd: (key, json) => index.rememberParsedSkillMd(key, json),
          // The same rule as the digests' (#entryNow): walked states vouch only outside a root process.
          ...(this.#trustWalkedStates
            ? { walkedDigest: (realDir: string, rel: string, state: string) => index.lookup(indexKey(realDir, rel), state) }
            : {}),
        };
    this.declarationsDir = declarationsDirOf(options.env);
    this.#configProblems = [...(options.configProblems ?? [])];
    if (this.grant.kind === 'owner' && this.grant.error)
      this.#configProblems.push({ path: 'MCP_SKILL_RUN', reason: 'grant', detail: this.grant.error });
  }

  static async load(options: CatalogOptions): Promise<Catalog> {
    const catalog = new Catalog(options);
    catalog.#scanStartedAt = Date.now();
    const discovery = await discoverSkills(options.roots, options.limits.maxSkills);
    catalog.#discoveryProblems = discovery.problems;
    catalog.#declarationsDigest = declarationsDigest(catalog.declarationsDir);
    await Promise.all(discovery.skills.map((found) => catalog.#scan(found)));
    catalog.#checkGrant();
    catalog.#checkDeclarations();
    catalog.#warmEntries(catalog.published());
    return catalog;
  }

  /** The configured roots, in order (the index is a discovered skill's `root`). */
  get roots(): readonly string[] {
    return this.#roots;
  }

  /**
   * Each configured root as a real path (what a watcher watches), index for index; undefined for a
   * root that did not resolve (missing) at the last discovery.
   */
  get realRoots(): readonly (string | undefined)[] {
    return this.#realRoots;
  }

  /** When the start-up scan began (`Date.now()`): a change after it may have been missed before the watch was set up. */
  get scanStartedAt(): number {
    return this.#scanStartedAt;
  }

  /** Calls `listener` after every update that changed what clients see. Returns the unsubscribe. */
  onChange(listener: (change: CatalogChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Rescans what `request` names, one update at a time, and resolves with what clients see
   * differently (also told to the listeners when a skill or the problems changed).
   */
  update(request: UpdateRequest): Promise<CatalogChange> {
    const run = this.#queue.then(() => this.#updateNow(request));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #updateNow(request: UpdateRequest): Promise<CatalogChange> {
    const before = new Map(this.#records);
    const problemsBefore = problemsKey(this.problems);
    const byRealDir = new Map([...this.#found.values()].map((f) => [f.realDir, f.name]));
    const realRoots = this.#realRoots.filter((r): r is string => r !== undefined);
    const { names, rediscover } = affectedBy(request.paths ?? [], realRoots, byRealDir);
    for (const name of request.names ?? []) names.add(name);
    const roots = new Set(request.roots ?? []);
    // The operator's declarations replace skills' own: any change there may change any skill.
    const declarations = declarationsDigest(this.declarationsDir);
    if (declarations !== this.#declarationsDigest) {
      this.#declarationsDigest = declarations;
      for (const name of this.#found.keys()) names.add(name);
    }
    const gone = new Set<string>();
    if (rediscover || roots.size > 0) {
      // A root that was missing may be there now (or the reverse).
      this.#realRoots = realRootsOf(this.#roots);
      const discovery = await discoverSkills(this.#roots, this.#limits.maxSkills);
      this.#discoveryProblems = discovery.problems;
      const next = new Map(discovery.skills.map((s) => [s.name, s]));
      for (const name of this.#found.keys()) if (!next.has(name)) gone.add(name);
      for (const [name, found] of next) {
        const old = this.#found.get(name);
        if (!old || old.realDir !== found.realDir || old.displayPath !== found.displayPath || roots.has(found.root)) {
          names.add(name);
          this.#found.set(name, found);
        }
      }
    }
    for (const name of gone) this.#drop(name);
    let until = performance.now() + SLICE_MS;
    for (const name of names) {
      const found = this.#found.get(name);
      if (!found || gone.has(name)) continue;
      await this.#scan(found);
      // A poll rescans a whole root: let requests in between skills.
      if (performance.now() > until) {
        await yieldToRequests();
        until = performance.now() + SLICE_MS;
      }
    }
    this.#checkGrant();
    this.#checkDeclarations();
    const changed = [...new Set([...names, ...gone])].filter((name) => this.#differs(before.get(name), this.#records.get(name))).sort();
    // A SKILL.md that breaks (or a new folder that is not a skill) changes only the problems
    // skill_list shows: announced too.
    const change: CatalogChange = { names: changed, problems: problemsKey(this.problems) !== problemsBefore };
    // Digests follow the files without anyone reading them first: the next skills/list is ready.
    this.#warmEntries(changed.map((name) => this.#records.get(name)).filter((r): r is SkillRecord => r?.published === true));
    if (changed.length > 0 || change.problems) for (const listener of this.#listeners) listener(change);
    return change;
  }

  /** Whether a client would see `now` differently from `old` (listing, prompt, entry digests). */
  #differs(old: SkillRecord | undefined, now: SkillRecord | undefined): boolean {
    if (old === now) return false;
    if (!old || !now) return true;
    const view = (r: SkillRecord): string =>
      JSON.stringify([
        r.realDir,
        r.displayPath,
        r.frontmatter,
        r.description,
        r.whenToUse,
        r.published,
        r.files,
        r.skillMdDigest,
        r.declaration,
        r.declarationOrigin,
        r.headings,
      ]);
    if (view(old) !== view(now)) return true;
    if (!now.published) return false;
    // Same listing: the entry's digests decide. An entry never built before cannot be compared.
    const oldEntry = this.#entries.get(old);
    if (!oldEntry) return true;
    try {
      return JSON.stringify(oldEntry) !== JSON.stringify(this.#entryNow(now));
    } catch {
      return true;
    }
  }

  /** Grant problems follow the records: a grant row for a skill that just appeared comes alive. */
  #checkGrant(): void {
    this.#grantProblems = deadGrantRows(
      this.grant,
      (name) => {
        const record = this.#records.get(name);
        return record ? (record.declaration?.run ?? []) : undefined;
      },
      (name) => this.#records.get(name)?.declaration?.egress ?? [],
      (name) => this.#records.get(name)?.declaration?.secrets ?? [],
    ).map((dead) => ({ path: `MCP_SKILL_RUN/${dead.row.skill}/${dead.row.script}`, reason: 'grant' as const, detail: dead.why }));
  }

  /** Files in the operator's folder that declare no served skill: reported, never silently ignored. */
  #checkDeclarations(): void {
    const dir = this.declarationsDir;
    if (dir === undefined) return;
    const listed = listDeclarationsDir(dir);
    const problems: Problem[] = strayDeclarationProblems(listed.names, (name) => this.#records.has(name), skillOfEntry).map(
      ({ entry, detail }) => ({
        path: `${OPERATOR_PLACE}/${JSON.stringify(entry).slice(1, -1)}`,
        reason: 'declaration',
        detail,
      }),
    );
    if (listed.limited)
      problems.push({
        path: OPERATOR_PLACE,
        reason: 'declaration',
        detail: `the folder holds more than ${MAX_DECLARATION_ENTRIES} entries; only the first ${MAX_DECLARATION_ENTRIES} by name were checked for stray files (each skill's own file is still read)`,
      });
    this.#declarationProblems = problems;
  }

  /**
   * Builds every published entry ahead of use, in name (= page) order, in slices of a few ms.
   * Measured on 5,000 skills / 50,000 files: ~1.5 s of hashing that would otherwise land on the
   * skills/list pages a client walks (~100 ms each instead of a few ms).
   */
  #warmEntries(queue: SkillRecord[]): void {
    let next = 0;
    const slice = (): void => {
      const until = performance.now() + SLICE_MS;
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
      // Every entry of the pass built: what was hashed is remembered for the next start.
      else this.#index.save();
    };
    setImmediate(slice).unref();
  }

  async #scan(found: DiscoveredSkill): Promise<void> {
    const { record, problems } = await scanSkill(found, this.#limits, this.declarationsDir, this.#memory);
    this.#found.set(found.name, found);
    this.#scanProblems.set(found.name, problems);
    if (record) {
      this.#records.set(found.name, record);
      this.search.put(record);
    } else if (this.#records.delete(found.name)) this.search.remove(found.name);
    this.#invalidate();
  }

  #drop(name: string): void {
    this.#found.delete(name);
    this.#scanProblems.delete(name);
    if (this.#records.delete(name)) this.search.remove(name);
    this.#invalidate();
  }

  #invalidate(): void {
    this.#sorted = undefined;
    this.#published = undefined;
    this.#servedFingerprint = undefined;
  }

  /** Rescans one skill (its bytes changed on disk) and swaps its record in. */
  async refresh(name: string): Promise<void> {
    await this.update({ names: [name] });
  }

  get problems(): Problem[] {
    const all = [...this.#configProblems, ...this.#discoveryProblems, ...this.#grantProblems, ...this.#declarationProblems];
    for (const problems of this.#scanProblems.values()) all.push(...problems);
    return all.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  /** What crossing the skill limit means, when it is crossed: said on stderr at start and by skill_list. */
  limitNotice(): string | undefined {
    const over = this.#discoveryProblems.filter((p) => p.reason === 'skill-limit').length;
    if (over === 0) return undefined;
    const max = this.#limits.maxSkills;
    return `${max + over} skill folders found, over the limit of ${max} (SKILL_MCP_MAX_SKILLS): the first ${max} by name are served, the other ${over} are not (each is a skill-limit problem). Raise SKILL_MCP_MAX_SKILLS to serve them all.`;
  }

  /** Every served skill, sorted by name. */
  skills(): SkillRecord[] {
    this.#sorted ??= [...this.#records.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return [...this.#sorted];
  }

  /** Fingerprint of the served names: a skill_list or prompts/list cursor is valid while it holds. */
  get servedFingerprint(): string {
    this.#servedFingerprint ??= fingerprintOf(this.skills().map((s) => s.name));
    return this.#servedFingerprint;
  }

  get(name: string): SkillRecord | undefined {
    return this.#records.get(name);
  }

  /** Skills in the `skill://` namespace, sorted by name (= URI order). */
  published(): SkillRecord[] {
    return [...this.#publishedView().records];
  }

  /** Fingerprint of the published names: a skills/list cursor is valid while it holds. */
  get publishedFingerprint(): string {
    return this.#publishedView().fingerprint;
  }

  #publishedView(): { records: SkillRecord[]; fingerprint: string } {
    if (!this.#published) {
      const records = this.skills().filter((s) => s.published);
      this.#published = { records, fingerprint: fingerprintOf(records.map((r) => r.name)) };
    }
    return this.#published;
  }

  /**
   * The SEP-2640 entry of a published skill: digests and sizes of the bytes served now, and in
   * `_meta` where a pull brought it from (shared/provenance.ts), read fresh from the lock each time.
   */
  async entry(record: SkillRecord, locks?: LockReads): Promise<Skill> {
    const entry = this.#entryNow(record);
    const provenance = this.provenance(record, locks);
    return provenance ? { ...entry, _meta: { ...entry._meta, [PROVENANCE_META_KEY]: provenance } } : entry;
  }

  /**
   * Where `skill-mcp pull` brought this skill from, when it sits at the top of a root holding a
   * `.skill-mcp-lock.json` with an entry for it; the pin only while every served file still has
   * the digest the lock records.
   */
  provenance(record: SkillRecord, locks?: LockReads): Provenance | undefined {
    const found = this.#found.get(record.name);
    const root = found === undefined ? undefined : this.#roots[found.root];
    // Only DIR/<name>: the lock describes the folders pull writes, at the top of the folder it wrote to.
    if (root === undefined || found!.displayPath !== `${rootLabel(root)}/${record.name}`) return undefined;
    const lock = readLockOnce(root, locks);
    if (!lock?.skills[record.name]) return undefined;
    let served: Map<string, string>;
    try {
      const resources = this.#entryNow(record).resources;
      if (resources === 'dynamic') return undefined;
      served = new Map(record.files.map((f, i) => [f.path, resources[i]!.digest] as const));
    } catch {
      // A file that cannot be hashed now: nothing shows the files are the pulled ones.
      served = new Map();
    }
    return provenanceOf(lock, record.name, served);
  }

  /** The entry, built now if it is not yet; a file a read would refuse throws (nothing is cached). */
  #entryNow(record: SkillRecord): Skill {
    let entry = this.#entries.get(record);
    if (!entry) {
      const resources = record.files.map((file) => {
        const state = this.#trustWalkedStates ? record.fileStates?.get(file.path) : undefined;
        const walked = state === undefined ? undefined : { state, size: file.size };
        const { hex, size } = digestServedFile(record.realDir, file.path, PUBLISH_MAX_BYTES, this.#scratch, this.#index, walked);
        return { uri: uriFor(record.name, file.path)!, digest: `sha256:${hex}`, size };
      });
      entry = { uri: uriFor(record.name, 'SKILL.md')!, frontmatter: record.frontmatter as Skill['frontmatter'], resources };
      this.#entries.set(record, entry);
    }
    return entry;
  }

  /**
   * Whether `bytes` just read from `path` still match what this record published (or would). When
   * not, the skill is rescanned so the next listing carries the digest of these bytes: resolved
   * only after that, so the bytes a read returns match what is listed when it answers.
   */
  async confirmFresh(record: SkillRecord, path: string, bytes: Uint8Array): Promise<void> {
    const entry = this.#entries.get(record);
    const scanned = record.files.find((f) => f.path === path);
    let stale = scanned === undefined || scanned.size !== bytes.length;
    if (!stale && entry) {
      const published = entry?.resources === 'dynamic' ? undefined : entry?.resources.find((r) => r.uri === uriFor(record.name, path));
      stale = published !== undefined && published.digest !== `sha256:${sha256Hex(bytes)}`;
    }
    if (!stale) return;
    // Security: the listed digest may have come from the index (a file whose identity fields
    // survived a change, or an index entry that is wrong): forget it, or the rescan below would
    // find the same state and serve the same stale digest again, now and at the next start.
    this.#index.forget(indexKey(record.realDir, path));
    if (this.#records.get(record.name) === record) await this.refresh(record.name);
  }

  /**
   * A listed file of `record` could not be served any more (deleted, or swapped for a link or a
   * FIFO): rescan the skill so the manifest stops promising it.
   */
  async confirmGone(record: SkillRecord, path: string): Promise<void> {
    if (record.files.some((f) => f.path === path) && this.#records.get(record.name) === record) await this.refresh(record.name);
  }
}
