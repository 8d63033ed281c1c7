/**
 * @module Our `SkillSource` for the SDK's `SkillsExtension`: the wire format is the SDK's, the
 * catalog rules are ours. Only published skills are in `skill://`; every read is checked against
 * the catalog and re-confirmed fresh.
 */
import { createHash } from 'node:crypto';
import { ProtocolError, ProtocolErrorCode, type Resource } from '@modelcontextprotocol/server';
import type { SkillReadResult, SkillSource } from '@modelcontextprotocol/server/ext/skills';
import { isSkillMcpError } from '../../shared/errors.js';
import { PUBLISH_MAX_BYTES } from '../../shared/limits.js';
import type { Catalog } from './catalog.js';
import { FASTMCP_MANIFEST_PATH, fastmcpManifest } from './fastmcp-manifest.js';
import { exactText, mediaTypeFor, readServedFile } from './read.js';
import type { SkillRecord } from './skill.js';
import { parseSkillUri, uriFor } from './uri.js';

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
  if (match[1] !== list) throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'The catalog changed since this cursor was issued (skills were added, removed or renamed); list again from the start, without a cursor');
  return text.slice(match[0].length);
}

/**
 * A skills/list page also ends once its entries list this many files (never inside an entry, and
 * never before the first). It bounds what one answer weighs: the SDK validates every resource of an
 * entry from a custom source on every page (~4 µs each, bench/RESULTS.md), so 500 keeps a page
 * near 3 ms; and its stdio client refuses lines over 10 MiB, which 100 skills of 512 files each
 * would come near.
 */
const MAX_PAGE_FILES = 500;

/**
 * One page of `items` (sorted by `key`) after the cursor's key: at most `size` items, and, with
 * `weigh`, items up to a total weight of `budget` (at least one).
 */
function page<T>(items: T[], list: string, key: (item: T) => string, cursor: string | undefined, size: number, weigh?: (item: T) => number, budget = Infinity): { items: T[]; next?: string } {
  const after = decodeCursor(cursor, list);
  const start = after === undefined ? 0 : items.findIndex((item) => key(item) > after);
  if (start < 0) return { items: [] };
  let end = Math.min(start + size, items.length);
  if (weigh) {
    let used = 0;
    for (let i = start; i < end; i++) {
      used += weigh(items[i]!);
      if (used > budget && i > start) {
        end = i;
        break;
      }
    }
  }
  const slice = items.slice(start, end);
  const last = slice.at(-1);
  return end < items.length && last !== undefined ? { items: slice, next: encodeCursor(list, key(last)) } : { items: slice };
}

export class CatalogSkillSource implements SkillSource {
  constructor(
    private readonly catalog: Catalog,
    private readonly pageSize: number,
  ) {}

  #published(name: string): SkillRecord | undefined {
    const record = this.catalog.get(name);
    return record?.published ? record : undefined;
  }

  async list(params: { cursor?: string }): Promise<{ skills: Awaited<ReturnType<Catalog['entry']>>[]; nextCursor?: string }> {
    // Fingerprint first: an update between the two calls can only make the cursor stricter.
    const list = this.catalog.publishedFingerprint;
    const { items, next } = page(this.catalog.published(), list, (r) => r.name, params.cursor, this.pageSize, (r) => r.files.length, MAX_PAGE_FILES);
    const skills = await Promise.all(items.map((record) => this.catalog.entry(record)));
    return next === undefined ? { skills } : { skills, nextCursor: next };
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
        children.set(rest, { uri: uriFor(record.name, file.path)!, name: rest, mimeType: isMd ? 'text/markdown' : mediaTypeFor(rest, false), size: file.size });
      } else {
        const dir = rest.slice(0, slash);
        if (!children.has(dir)) children.set(dir, { uri: uriFor(record.name, prefix + dir)!, name: dir, mimeType: DIRECTORY_MIME });
      }
    }
    // A path that is a file, or a folder with nothing served in it, is not a directory resource.
    if (children.size === 0) return undefined;
    const sorted = [...children.values()].sort((a, b) => (a.uri < b.uri ? -1 : a.uri > b.uri ? 1 : 0));
    // A directory's listing is keyed by the skill's manifest: a changed skill refuses old cursors.
    const list = createHash('sha256').update(sorted.map((r) => r.uri).join('\n')).digest('base64url').slice(0, 12);
    const { items, next } = page(sorted, list, (r) => r.uri, params.cursor, this.pageSize);
    return next === undefined ? { resources: items } : { resources: items, nextCursor: next };
  }

  async listResources(): Promise<Resource[]> {
    return this.catalog.published().map((record) => ({
      uri: uriFor(record.name, 'SKILL.md')!,
      name: record.name,
      description: record.description,
      mimeType: 'text/markdown',
    }));
  }
}
