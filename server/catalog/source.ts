/**
 * @module Our `SkillSource` for the SDK's `SkillsExtension`: the wire format is the SDK's, the
 * catalog rules are ours. Only published skills are in `skill://`; every read is checked against
 * the catalog and re-confirmed fresh.
 */
import { ProtocolError, ProtocolErrorCode, type Resource } from '@modelcontextprotocol/server';
import type { SkillReadResult, SkillSource } from '@modelcontextprotocol/server/ext/skills';
import { isSkillMcpError } from '../../shared/errors.js';
import { PUBLISH_MAX_BYTES } from '../../shared/limits.js';
import type { Catalog } from './catalog.js';
import { exactText, mediaTypeFor, readServedFile } from './read.js';
import type { SkillRecord } from './skill.js';
import { parseSkillUri, uriFor } from './uri.js';

const DIRECTORY_MIME = 'inode/directory';

function encodeCursor(key: string): string {
  return Buffer.from(`c1:${key}`).toString('base64url');
}

/** Decodes a cursor; an unknown one is -32602 (never "start over" silently). */
function decodeCursor(cursor: string | undefined): string | undefined {
  if (cursor === undefined) return undefined;
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!text.startsWith('c1:') || encodeCursor(text.slice(3)) !== cursor) {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid cursor: pass back a nextCursor exactly as received');
  }
  return text.slice(3);
}

/** One page of `items` (sorted by `key`) after the cursor's key. */
function page<T>(items: T[], key: (item: T) => string, cursor: string | undefined, size: number): { items: T[]; next?: string } {
  const after = decodeCursor(cursor);
  const start = after === undefined ? 0 : items.findIndex((item) => key(item) > after);
  const slice = start < 0 ? [] : items.slice(start, start + size);
  const last = slice.at(-1);
  const more = start >= 0 && start + size < items.length;
  return more && last !== undefined ? { items: slice, next: encodeCursor(key(last)) } : { items: slice };
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
    const { items, next } = page(this.catalog.published(), (r) => r.name, params.cursor, this.pageSize);
    const skills = await Promise.all(items.map((record) => this.catalog.entry(record)));
    return next === undefined ? { skills } : { skills, nextCursor: next };
  }

  async get(uri: string) {
    const parsed = parseSkillUri(uri);
    if (!parsed || parsed.path !== 'SKILL.md') return undefined;
    const record = this.#published(parsed.name);
    return record ? this.catalog.entry(record) : undefined;
  }

  async read(uri: string): Promise<SkillReadResult | undefined> {
    const parsed = parseSkillUri(uri);
    if (!parsed || parsed.path === '') return undefined;
    const record = this.#published(parsed.name);
    if (!record || uriFor(record.name, parsed.path) !== uri) return undefined;
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
    const { items, next } = page(sorted, (r) => r.uri, params.cursor, this.pageSize);
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
