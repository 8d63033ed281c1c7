/**
 * @module Our `SkillSource` for the SDK's `SkillsExtension`: the wire format is the SDK's, the
 * catalog rules are ours. Only published skills are in `skill://`; every read is checked against
 * the catalog and re-confirmed fresh.
 */
import { createHash } from 'node:crypto';
import { ProtocolError, ProtocolErrorCode, type Resource } from '@modelcontextprotocol/server';
import type { Skill, SkillReadResult, SkillSource } from '@modelcontextprotocol/server/ext/skills';
import { isSkillMcpError } from '../../shared/errors.js';
import { PUBLISH_MAX_BYTES } from '../../shared/limits.js';
import type { Catalog, LockReads } from './catalog.js';
import { entryProblems } from './entry-check.js';
import { FASTMCP_MANIFEST_PATH, fastmcpManifest } from './fastmcp-manifest.js';
import { exactText, mediaTypeFor, readServedFile } from './read.js';
import type { SkillRecord } from './skill.js';
import { parseSkillUri, uriFor } from './uri.js';
import { fileTitle, skillTitle } from '../titles.js';

const DIRECTORY_MIME = 'inode/directory';

/**
 * A cursor names the last key of its page and the list it was cut from (a fingerprint of its
 * names). Keys alone never repeat an entry, but a skill added before the key after the page was
 * cut would be skipped silently; so once the list's names changed, the cursor is refused.
 */
function encodeCursor(list: string, key: string): string {
  return Buffer.from(`c2:${list}:${key}`).toString('base64url');
}

/** Decodes a cursor of `list`; an unknown or outdated one is -32602 (never "start over" silently). */
function decodeCursor(cursor: string | undefined, list: string): string | undefined {
  if (cursor === undefined) return undefined;
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const match = /^c2:([A-Za-z0-9_-]+):/.exec(text);
  if (!match || Buffer.from(text).toString('base64url') !== cursor) {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid cursor: pass back a nextCursor exactly as received');
  }
  if (match[1] !== list)
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      'The catalog changed since this cursor was issued (skills were added, removed or renamed); list again from the start, without a cursor',
    );
  return text.slice(match[0].length);
}

/**
 * A skills/list page ends before its entries pass this many bytes of JSON (never inside an entry,
 * never before the first): few round trips for a client walking a large catalog (~9 pages at 5,000
 * skills, against ~100 at the SDK's 100 entries), while one answer stays far under what clients
 * take in one message — the SDK's stdio client refuses lines over 10 MiB, and HTTP bodies of a few
 * MiB pass common proxies' defaults. The model's own `skill_list` keeps its small pages
 * (tools/skill-list.ts). What a page weighs past this is the rest of the answer (cursor, cache
 * fields, the JSON-RPC envelope): under a kilobyte.
 */
export const PAGE_MAX_BYTES = 1024 * 1024 - 4096;

/** What an entry costs on the wire, and why it may not be listed (empty: it may). */
interface Checked {
  bytes: number;
  problems: string[];
  /** The entry's JSON (UTF-8), from which a page's JSON is joined ({@link CatalogSkillSource.pageJson}). */
  json: Buffer;
}

/** The index of the first of `items` (sorted by `key`) after `after`: a binary search, not a scan, so a walk is not quadratic. */
function firstAfter<T>(items: readonly T[], key: (item: T) => string, after: string): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (key(items[mid]!) > after) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** One page of `items` (sorted by `key`) after the cursor's key: at most `size` items. */
function page<T>(
  items: readonly T[],
  list: string,
  key: (item: T) => string,
  cursor: string | undefined,
  size: number,
): { items: T[]; next?: string } {
  const after = decodeCursor(cursor, list);
  const start = after === undefined ? 0 : firstAfter(items, key, after);
  const end = Math.min(start + size, items.length);
  const slice = items.slice(start, end);
  const last = slice.at(-1);
  return end < items.length && last !== undefined ? { items: slice, next: encodeCursor(list, key(last)) } : { items: slice };
}

const COMMA = Buffer.from(',');

export class CatalogSkillSource implements SkillSource {
  /** Per entry object (rebuilt whenever its skill is rescanned, never changed): its size and its check, done once. */
  readonly #checked = new WeakMap<Skill, Checked>();

  /**
   * @param pageSize entries per page of directory listings (SKILL_MCP_PAGE_SIZE, default 100)
   * @param listPageSize at most this many skills/list entries a page (the owner's
   *   SKILL_MCP_PAGE_SIZE); absent: bytes alone decide ({@link PAGE_MAX_BYTES})
   * @param onDropped told of an entry that failed its check (it is left out of skills/list)
   */
  constructor(
    private readonly catalog: Catalog,
    private readonly pageSize: number,
    private readonly listPageSize = Number.POSITIVE_INFINITY,
    private readonly onDropped: (uri: string, problems: string[]) => void = () => undefined,
  ) {}

  #check(entry: Skill): Checked {
    let checked = this.#checked.get(entry);
    if (!checked) {
      const json = Buffer.from(JSON.stringify(entry));
      checked = { bytes: json.length, problems: entryProblems(entry), json };
      this.#checked.set(entry, checked);
      if (checked.problems.length > 0) this.onDropped(entry.uri, checked.problems);
    }
    return checked;
  }

  /**
   * One skills/list page, its entries already checked (server/skills-list.ts answers the method
   * with it, so the SDK does not check the same entries again on every page). The page is cut by
   * bytes ({@link PAGE_MAX_BYTES}) and by `listPageSize`; an entry that failed its check is left
   * out (and was reported once), never sent.
   */
  async checkedPage(cursor: string | undefined): Promise<{ skills: Skill[]; nextCursor?: string }> {
    // Fingerprint first: an update between the two calls can only make the cursor stricter.
    const list = this.catalog.publishedFingerprint;
    // Security: `published()`, the one accessor an identity's view (auth/visible-catalog.ts) filters.
    const records = this.catalog.published();
    const after = decodeCursor(cursor, list);
    let i = after === undefined ? 0 : firstAfter(records, (r) => r.name, after);
    const skills: Skill[] = [];
    let bytes = 0;
    let taken = 0;
    const locks: LockReads = new Map();
    for (; i < records.length && taken < this.listPageSize; i++) {
      const entry = await this.catalog.entry(records[i]!, locks);
      const checked = this.#check(entry);
      if (taken > 0 && bytes + checked.bytes + 1 > PAGE_MAX_BYTES) break;
      taken++;
      bytes += checked.bytes + 1;
      if (checked.problems.length === 0) skills.push(entry);
    }
    return i < records.length && taken > 0 ? { skills, nextCursor: encodeCursor(list, records[i - 1]!.name) } : { skills };
  }

  /**
   * `JSON.stringify({ ...page, ...extra })` for a page {@link checkedPage} gave, in pieces: its
   * entries' JSON kept by their checks, with the punctuation between. The same bytes, without stringifying 30 to 1,000 entries
   * again for every page (server/pre-encoded.ts). The members in the order the spread gives them:
   * `skills`, `nextCursor` when there is one, then `extra`'s (which must not repeat those two).
   */
  pageJson(page: { skills: Skill[]; nextCursor?: string }, extra: Readonly<Record<string, unknown>>): Buffer[] {
    const parts: Buffer[] = [Buffer.from('{"skills":[')];
    for (const [i, entry] of page.skills.entries()) {
      if (i > 0) parts.push(COMMA);
      parts.push(this.#check(entry).json);
    }
    let tail = ']';
    if (page.nextCursor !== undefined) tail += `,"nextCursor":${JSON.stringify(page.nextCursor)}`;
    for (const [key, value] of Object.entries(extra)) if (value !== undefined) tail += `,${JSON.stringify(key)}:${JSON.stringify(value)}`;
    parts.push(Buffer.from(`${tail}}`));
    return parts;
  }

  #published(name: string): SkillRecord | undefined {
    const record = this.catalog.get(name);
    return record?.published ? record : undefined;
  }

  /** The SDK's view (its extension checks these entries itself); skills/list is answered by {@link checkedPage}. */
  async list(params: { cursor?: string }): Promise<{ skills: Skill[]; nextCursor?: string }> {
    return this.checkedPage(params.cursor);
  }

  async get(uri: string) {
    const parsed = parseSkillUri(uri);
    if (parsed?.path !== 'SKILL.md') return undefined;
    const record = this.#published(parsed.name);
    return record ? this.catalog.entry(record) : undefined;
  }

  async read(uri: string): Promise<SkillReadResult | undefined> {
    const parsed = parseSkillUri(uri);
    if (!parsed || parsed.path === '') return undefined;
    const record = this.#published(parsed.name);
    if (!record || uriFor(record.name, parsed.path) !== uri) return undefined;
    if (parsed.path === FASTMCP_MANIFEST_PATH) return this.#fastmcpManifest(record);
    let bytes: Buffer;
    try {
      ({ bytes } = await readServedFile(record, parsed.path, PUBLISH_MAX_BYTES));
    } catch (error) {
      if (!isSkillMcpError(error)) throw error;
      await this.catalog.confirmGone(record, parsed.path);
      return undefined;
    }
    await this.catalog.confirmFresh(record, parsed.path, bytes);
    const text = exactText(bytes);
    const mimeType = mediaTypeFor(parsed.path, text !== undefined);
    return text !== undefined ? { text, mimeType } : { bytes, mimeType };
  }

  /** `skill://<name>/_manifest` for FastMCP's client utilities (fastmcp-manifest.ts). */
  async #fastmcpManifest(record: SkillRecord): Promise<SkillReadResult> {
    const manifest = fastmcpManifest(record.name, record.files, await this.catalog.entry(record));
    return { text: JSON.stringify(manifest, null, 2), mimeType: 'application/json' };
  }

  async readDirectory(uri: string, params: { cursor?: string }): Promise<{ resources: Resource[]; nextCursor?: string } | undefined> {
    const parsed = parseSkillUri(uri);
    if (!parsed) return undefined;
    const record = this.#published(parsed.name);
    if (!record || uriFor(record.name, parsed.path || undefined) !== uri) return undefined;
    const prefix = parsed.path === '' ? '' : `${parsed.path}/`;
    const children = new Map<string, Resource>();
    for (const file of record.files) {
      if (!file.path.startsWith(prefix)) continue;
      const rest = file.path.slice(prefix.length);
      const slash = rest.indexOf('/');
      if (slash < 0) {
        const isMd = rest.endsWith('.md');
        children.set(rest, {
          uri: uriFor(record.name, file.path)!,
          name: rest,
          title: fileTitle(record.name, file.path),
          mimeType: isMd ? 'text/markdown' : mediaTypeFor(rest, false),
          size: file.size,
        });
      } else {
        const dir = rest.slice(0, slash);
        if (!children.has(dir))
          children.set(dir, {
            uri: uriFor(record.name, prefix + dir)!,
            name: dir,
            title: fileTitle(record.name, `${prefix}${dir}/`),
            mimeType: DIRECTORY_MIME,
          });
      }
    }
    // A path that is a file, or a folder with nothing served in it, is not a directory resource.
    if (children.size === 0) return undefined;
    const sorted = [...children.values()].sort((a, b) => (a.uri < b.uri ? -1 : a.uri > b.uri ? 1 : 0));
    // A directory's listing is keyed by the skill's manifest: a changed skill refuses old cursors.
    const list = createHash('sha256')
      .update(sorted.map((r) => r.uri).join('\n'))
      .digest('base64url')
      .slice(0, 12);
    const { items, next } = page(sorted, list, (r) => r.uri, params.cursor, this.pageSize);
    return next === undefined ? { resources: items } : { resources: items, nextCursor: next };
  }

  async listResources(): Promise<Resource[]> {
    return this.catalog.published().map((record) => ({
      uri: uriFor(record.name, 'SKILL.md')!,
      name: record.name,
      title: skillTitle(record),
      description: record.description,
      mimeType: 'text/markdown',
    }));
  }
}
