/**
 * skills/list pages cut by bytes (issue 31), over a real stdio transport in both eras: a catalog
 * whose entries weigh ~2.5 MiB is walked in a few pages, each under 1 MiB on the wire (under the
 * SDK stdio client's 10 MiB line limit with room to spare), every skill exactly once, in order,
 * no entry split; the cursor is opaque (a forged or edited one is -32602, never a restart), and a
 * cursor taken before the catalog changed is refused. skill_list, the model's tool, keeps its
 * small pages. With SKILL_MCP_PAGE_SIZE set, the owner's count still caps a page.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ERAS, callTool, expectNoLeftovers, rpc, rpcErrorCode, serve, tempDir, type Served } from './harness.js';

afterAll(expectNoLeftovers);

const SKILLS = 48;
const FILES_PER_SKILL = 120;
const MIB = 1024 * 1024;

/** Skills with many long-named files: each entry ~55 KB of resources (uri, digest, size per file). */
function bigCatalog(): string {
  const root = tempDir('pages');
  for (let s = 0; s < SKILLS; s++) {
    const name = `skill-${String(s).padStart(3, '0')}`;
    const dir = join(root, name, 'references');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(root, name, 'SKILL.md'), `---\nname: ${name}\ndescription: a skill with many files, number ${s}\n---\nBody.\n`);
    for (let f = 0; f < FILES_PER_SKILL; f++) writeFileSync(join(dir, `${'long-file-name-'.repeat(16)}${f}.md`), `file ${f} of ${name}\n`);
  }
  return root;
}

describe.each(ERAS)('skills/list pages by bytes, $name', (era) => {
  let served: Served;
  let root: string;

  beforeAll(async () => {
    root = bigCatalog();
    served = await serve({ SKILLS_DIR: root }, era);
  });
  afterAll(async () => {
    await served?.close();
  });

  test('a walk takes a few pages, each under 1 MiB, every skill once and in order, no entry split', async () => {
    const names: string[] = [];
    const sizes: number[] = [];
    let cursor: string | undefined;
    do {
      const page = await rpc(served.client, 'skills/list', cursor === undefined ? {} : { cursor });
      sizes.push(Buffer.byteLength(JSON.stringify(page)));
      for (const skill of page['skills'] as { uri: string; resources: unknown[] }[]) {
        names.push(skill.uri);
        expect(skill.resources).toHaveLength(FILES_PER_SKILL + 1);
      }
      if (era.versionNegotiation) expect(page).toMatchObject({ ttlMs: 0, cacheScope: 'private' });
      else expect(page).not.toHaveProperty('ttlMs');
      cursor = page['nextCursor'] as string | undefined;
    } while (cursor !== undefined);
    expect(names).toEqual(Array.from({ length: SKILLS }, (_, s) => `skill://skill-${String(s).padStart(3, '0')}/SKILL.md`));
    const total = sizes.reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(2 * MIB);
    // Few pages: as many as the bytes need, not one per 100 skills or per 500 files.
    expect(sizes.length).toBe(Math.ceil(total / MIB));
    for (const size of sizes) expect(size).toBeLessThanOrEqual(MIB);
    expect(sizes.slice(0, -1).every((size) => size > MIB / 2)).toBe(true);
  });

  test('the cursor is opaque and still works: passed back it gives the next page; forged or re-spelled is -32602, never a restart', async () => {
    const first = await rpc(served.client, 'skills/list');
    const cursor = first['nextCursor'] as string;
    expect(cursor).toEqual(expect.any(String));
    expect(cursor).not.toContain('skill-');
    const second = await rpc(served.client, 'skills/list', { cursor });
    const last = (first['skills'] as { uri: string }[]).at(-1)!.uri;
    expect((second['skills'] as { uri: string }[])[0]!.uri > last).toBe(true);
    for (const bad of ['bm90LWEtY3Vyc29y', '', `${cursor}=`, Buffer.from(`c2:${'A'.repeat(12)}:skill-001`).toString('base64url')]) {
      expect(await rpcErrorCode(rpc(served.client, 'skills/list', { cursor: bad })), bad).toBe(-32602);
    }
  });

  test('a cursor taken before a skill was added is refused: list again', async () => {
    const first = await rpc(served.client, 'skills/list');
    const dir = join(root, 'aaa-added');
    mkdirSync(dir);
    writeFileSync(join(dir, 'SKILL.md'), '---\nname: aaa-added\ndescription: added while a client walked\n---\nBody.\n');
    // The live catalog picks the skill up; then the old cursor names a list that no longer is.
    await expect
      .poll(async () => ((await rpc(served.client, 'skills/list'))['skills'] as { uri: string }[])[0]!.uri, { timeout: 30_000 })
      .toBe('skill://aaa-added/SKILL.md');
    expect(await rpcErrorCode(rpc(served.client, 'skills/list', { cursor: first['nextCursor'] }))).toBe(-32602);
  });

  test("skill_list, the model's tool, keeps its small pages", async () => {
    const answer = await callTool(served.client, 'skill_list');
    const value = answer.value as { skills: unknown[]; nextCursor?: string };
    expect(value.skills.length).toBeLessThan(SKILLS);
    expect(value.nextCursor).toEqual(expect.any(String));
  });
});

describe('SKILL_MCP_PAGE_SIZE still caps a skills/list page when the owner sets it', () => {
  test('7 skills a page', async () => {
    const served = await serve({ SKILLS_DIR: bigCatalog(), SKILL_MCP_PAGE_SIZE: '7' }, ERAS[0]!);
    try {
      let cursor: string | undefined;
      const counts: number[] = [];
      do {
        const page = await rpc(served.client, 'skills/list', cursor === undefined ? {} : { cursor });
        counts.push((page['skills'] as unknown[]).length);
        cursor = page['nextCursor'] as string | undefined;
      } while (cursor !== undefined);
      expect(counts).toEqual([...Array(Math.floor(SKILLS / 7)).fill(7), SKILLS % 7].filter((n) => n > 0));
    } finally {
      await served.close();
    }
  });
});
