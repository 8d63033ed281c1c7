/**
 * A skills/list page's JSON is joined from its entries' JSON, kept since each entry was checked,
 * instead of stringified again for every page (server/pre-encoded.ts, issue 31 item 3). The bytes
 * must be exactly what `JSON.stringify` of the answer gives, for every page shape, and an entry
 * rebuilt by a rescan must never be answered with its old JSON.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import type { Skill } from '@modelcontextprotocol/server/ext/skills';
import { Catalog } from '../../server/catalog/catalog.js';
import { DEFAULT_CATALOG_LIMITS } from '../../shared/limits.js';
import { CatalogSkillSource } from '../../server/catalog/source.js';
import type { SkillRecord } from '../../server/catalog/skill.js';
import { encodeAnswer, jsonOf, withJson } from '../../server/pre-encoded.js';
import { SKILLS_CACHE_HINT } from '../../server/skills-list.js';
import { LineTransport } from '../../server/stdio/transport.js';

const text = (pieces: Buffer[] | undefined): string | undefined =>
  pieces === undefined ? undefined : Buffer.concat(pieces).toString('utf8');

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Skills whose text needs JSON escaping: quotes, backslashes, control characters, U+2028, astral characters. */
function makeSkills(count: number): string {
  const root = mkdtempSync(join(tmpdir(), 'skill-mcp-pre-encoded-'));
  dirs.push(root);
  for (let i = 0; i < count; i++) {
    const name = `s-${String(i).padStart(2, '0')}`;
    mkdirSync(join(root, name, 'references'), { recursive: true });
    const description = `"quoted" \\\\ back\\tslash, line\u2028separator, 𝄞 clef, é, ${i}`;
    writeFileSync(
      join(root, name, 'SKILL.md'),
      `---\nname: ${name}\ndescription: ${JSON.stringify(description)}\nmetadata:\n  note: "tab\\there"\n---\nbody ${i}\n`,
    );
    writeFileSync(join(root, name, 'references', `ref "${i}".md`), `reference ${i}\n`);
  }
  return root;
}

async function walk(source: CatalogSkillSource, extra: Record<string, unknown>): Promise<number> {
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await source.checkedPage(cursor);
    expect(text(source.pageJson(page, extra))).toBe(JSON.stringify({ ...page, ...extra }));
    cursor = page.nextCursor;
    pages++;
  } while (cursor !== undefined);
  return pages;
}

describe('a page joined from its entries is the page JSON.stringify gives', () => {
  it("every page of a walk, with a cursor and without, in both eras' shapes", async () => {
    const catalog = await Catalog.load({ roots: [makeSkills(7)], limits: DEFAULT_CATALOG_LIMITS, env: {} });
    // Three a page: pages with a nextCursor, and a last one without.
    expect(await walk(new CatalogSkillSource(catalog, 100, 3), {})).toBe(3);
    expect(await walk(new CatalogSkillSource(catalog, 100, 3), SKILLS_CACHE_HINT)).toBe(3);
    expect(await walk(new CatalogSkillSource(catalog, 100), SKILLS_CACHE_HINT)).toBe(1);
  });

  it('a page without the entry that failed its check, an empty catalog, and entries made anew for every page', async () => {
    const digest = `sha256:${'b'.repeat(64)}`;
    const entry = (name: string, extra: string[] = []): Skill =>
      ({
        uri: `skill://${name}/SKILL.md`,
        frontmatter: { name, description: `the ${name} skill` },
        resources: [`skill://${name}/SKILL.md`, ...extra].map((uri) => ({ uri, digest, size: 3 })),
      }) as Skill;
    const records = (entries: Skill[]): SkillRecord[] =>
      entries.map((e) => ({ name: e.frontmatter.name, entry: e }) as unknown as SkillRecord);
    const fake = (entries: Skill[], fresh = false) =>
      ({
        publishedFingerprint: 'fp0123456789',
        published: () => records(entries),
        // As a pulled skill's entry: a new object with its provenance in _meta on every call.
        entry: async (record: SkillRecord & { entry?: Skill }) =>
          fresh ? { ...record.entry!, _meta: { 'io.skill-mcp/provenance': { source: 'x' } } } : record.entry!,
      }) as unknown as Catalog;
    const dropped = new CatalogSkillSource(fake([entry('a'), entry('b', ['skill://elsewhere/x.md']), entry('c')]), 100);
    await walk(dropped, {});
    expect((await dropped.checkedPage(undefined)).skills).toHaveLength(2);
    await walk(new CatalogSkillSource(fake([]), 100), SKILLS_CACHE_HINT);
    await walk(new CatalogSkillSource(fake([entry('a'), entry('b')], true), 100, 1), {});
  });

  it('a skill rescanned after an edit is answered with its new entry, never the old JSON', async () => {
    const root = makeSkills(2);
    const catalog = await Catalog.load({ roots: [root], limits: DEFAULT_CATALOG_LIMITS, env: {} });
    const source = new CatalogSkillSource(catalog, 100);
    const before = text(source.pageJson(await source.checkedPage(undefined), {}))!;
    // The same size: only the digest can tell.
    writeFileSync(join(root, 's-01', 'references', 'ref "1".md'), 'REFERENCE 1\n');
    await catalog.refresh('s-01');
    const page = await source.checkedPage(undefined);
    const after = text(source.pageJson(page, {}))!;
    expect(after).toBe(JSON.stringify(page));
    expect(after).not.toBe(before);
    const digestOf = (json: string) => (JSON.parse(json) as { skills: Skill[] }).skills[1]!.resources;
    expect(digestOf(after)).not.toEqual(digestOf(before));
  });
});

describe('an answer written from the JSON its result holds', () => {
  const page = { skills: [{ uri: 'skill://a/SKILL.md' }], nextCursor: 'c"1' };
  const registered = () => withJson({ ...page }, () => [Buffer.from(JSON.stringify(page))]);

  it("is JSON.stringify of the message, its members in the message's order, undefined ones left out", () => {
    for (const message of [
      { result: registered(), jsonrpc: '2.0', id: 7 },
      { jsonrpc: '2.0', id: 'id "with" quotes', result: registered() },
      { result: registered(), jsonrpc: '2.0', id: 0, extra: undefined },
    ]) {
      expect(text(encodeAnswer(message, '\n'))).toBe(`${JSON.stringify(message)}\n`);
    }
  });

  it('is not made for a result that was not registered, nor for an error answer', () => {
    expect(encodeAnswer({ result: { ...page }, jsonrpc: '2.0', id: 1 })).toBeUndefined();
    expect(encodeAnswer({ jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'no' } })).toBeUndefined();
    expect(jsonOf(null)).toBeUndefined();
    expect(jsonOf('text')).toBeUndefined();
  });

  it('holds for a result that cannot change under it: the registered result is frozen', () => {
    const result = registered();
    expect(Object.isFrozen(result)).toBe(true);
    expect(() => {
      (result as { nextCursor?: string }).nextCursor = 'other';
    }).toThrow(TypeError);
  });

  it('goes out of the stdio transport as exactly those bytes, one line', async () => {
    const stdout = new PassThrough();
    const chunks: Buffer[] = [];
    stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    const transport = new LineTransport({ stdin: new PassThrough(), stdout, warn: () => undefined, onFinished: () => undefined });
    await transport.start();
    const withPieces = {
      result: withJson({ ...page }, () => [Buffer.from('{"skills":[{"uri":"skill://a/SKILL.md"}]'), Buffer.from(',"nextCursor":"c\\"1"}')]),
      jsonrpc: '2.0',
      id: 3,
    } as const;
    const plain = { result: { ...page }, jsonrpc: '2.0', id: 4 } as const;
    await transport.send(withPieces as never);
    await transport.send(plain as never);
    expect(Buffer.concat(chunks).toString('utf8')).toBe(`${JSON.stringify(withPieces)}\n${JSON.stringify(plain)}\n`);
    await transport.close();
  });
});
