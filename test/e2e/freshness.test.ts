/**
 * Digests and sizes always match the bytes served, also when files change on disk while the
 * server runs: a read never returns new bytes under the digest the catalog publishes, and the next
 * skills/list carries the new digest. Swaps after the scan (a FIFO, a link to /etc/passwd, a
 * deleted file) are refused at read time and drop out of the manifest.
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ERAS, callTool, expectNoLeftovers, rpc, rpcErrorCode, serve, tempDir, type Served } from './harness.js';

afterAll(expectNoLeftovers);

const sha256 = (bytes: Uint8Array): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
const PASSWD_LINE = readFileSync('/etc/passwd', 'utf8').split('\n')[0]!;

interface Entry {
  uri: string;
  frontmatter: Record<string, unknown>;
  resources: { uri: string; digest: string; size: number }[];
}

describe.each(ERAS)('files changing under a running server, $name', (era) => {
  let base: string;
  let skill: string;
  let served: Served;

  const entry = async (): Promise<Entry> => {
    const page = await rpc(served.client, 'skills/list');
    return (page['skills'] as Entry[]).find((e) => e.uri === 'skill://moving/SKILL.md')!;
  };
  const listed = async (path: string): Promise<{ digest: string; size: number } | undefined> =>
    (await entry()).resources.find((r) => r.uri === `skill://moving/${path}`);
  const readBytes = async (path: string): Promise<Buffer> => {
    const result = await served.client.readResource({ uri: `skill://moving/${path}` });
    const content = result.contents[0] as { text?: string; blob?: string };
    return content.text !== undefined ? Buffer.from(content.text, 'utf8') : Buffer.from(content.blob!, 'base64');
  };

  beforeAll(async () => {
    base = tempDir('fresh');
    skill = join(base, 'root', 'moving');
    mkdirSync(join(skill, 'data'), { recursive: true });
    writeFileSync(join(skill, 'SKILL.md'), '---\nname: moving\ndescription: Files that change while served.\n---\nversion one\n');
    for (const name of ['same-size.txt', 'grows.txt', 'to-fifo.txt', 'to-link.txt', 'deleted.txt', 'checked.txt'])
      writeFileSync(join(skill, 'data', name), 'AAAA\n');
    // Watch off: these are the read-time checks. With the watch on, a rescan that lands first (from
    // this swap, or a write of an earlier test settling late on a loaded machine) drops the file
    // from the manifest before the read, and the answer is NOT_FOUND instead — also right, but not
    // what is tested here (test/e2e/live-catalog.test.ts covers the watch).
    served = await serve({ SKILLS_DIR: join(base, 'root'), SKILL_MCP_WATCH: 'off' }, era);
  });
  afterAll(async () => {
    await served?.close();
    rmSync(base, { recursive: true, force: true });
  });

  test('a same-size change: the read returns the new bytes and the next skills/list carries their digest', async () => {
    const before = await listed('data/same-size.txt');
    expect(before!.digest).toBe(sha256(Buffer.from('AAAA\n')));
    writeFileSync(join(skill, 'data', 'same-size.txt'), 'BBBB\n');
    const bytes = await readBytes('data/same-size.txt');
    const after = await listed('data/same-size.txt');
    expect(after).toEqual({ uri: 'skill://moving/data/same-size.txt', digest: sha256(bytes), size: bytes.length });
    expect(bytes.toString()).toBe('BBBB\n');
  });

  test('a size change seen by skill_file also refreshes the published entry', async () => {
    writeFileSync(join(skill, 'data', 'grows.txt'), 'much longer now\n');
    const answer = await callTool(served.client, 'skill_file', { name: 'moving', paths: ['data/grows.txt'] });
    const got = (answer.value['files'] as { text: string }[])[0]!.text;
    expect(got).toBe('much longer now\n');
    expect(await listed('data/grows.txt')).toMatchObject({ digest: sha256(Buffer.from(got)), size: Buffer.byteLength(got) });
  });

  test('a host holding the old entry refuses the new bytes (SDK verification), and the fresh listing verifies', async () => {
    const { skills } = await served.skills.list();
    const stale = skills.find((s) => s.uri === 'skill://moving/SKILL.md')!;
    writeFileSync(join(skill, 'data', 'checked.txt'), 'CCCC\n');
    await expect(served.skills.read(stale, 'data/checked.txt')).rejects.toThrow(/digest|size/i);
    const fresh = (await served.skills.list()).skills.find((s) => s.uri === 'skill://moving/SKILL.md')!;
    const file = await served.skills.read(fresh, 'data/checked.txt');
    expect(file.verified).toBe(true);
    expect(Buffer.from(file.bytes).toString()).toBe('CCCC\n');
  });

  test('an edited SKILL.md: skill_load returns the new body and the listing carries the new frontmatter', async () => {
    writeFileSync(join(skill, 'SKILL.md'), '---\nname: moving\ndescription: Edited while served.\n---\nversion two\n');
    const load = await callTool(served.client, 'skill_load', { name: 'moving' });
    expect(load.value['body']).toBe('version two\n');
    expect((await entry()).frontmatter['description']).toBe('Edited while served.');
    const list = await callTool(served.client, 'skill_list');
    expect((list.value['skills'] as { description: string }[])[0]!.description).toBe('Edited while served.');
  });

  test('a file swapped for a FIFO after the scan is refused at once (no hang) and leaves the manifest', async () => {
    unlinkSync(join(skill, 'data', 'to-fifo.txt'));
    execFileSync('mkfifo', [join(skill, 'data', 'to-fifo.txt')]);
    const answer = await callTool(served.client, 'skill_file', { name: 'moving', paths: ['data/to-fifo.txt', 'data/same-size.txt'] });
    const files = answer.value['files'] as { error?: { code: string }; text?: string }[];
    expect(files[0]!.error).toMatchObject({ code: 'NOT_A_FILE' });
    expect(files[1]!.text).toBe('BBBB\n');
    expect(await rpcErrorCode(rpc(served.client, 'resources/read', { uri: 'skill://moving/data/to-fifo.txt' }))).toBe(-32602);
    expect(await listed('data/to-fifo.txt')).toBeUndefined();
  });

  test('a file swapped for a link to /etc/passwd after the scan is refused and its target never appears', async () => {
    unlinkSync(join(skill, 'data', 'to-link.txt'));
    symlinkSync('/etc/passwd', join(skill, 'data', 'to-link.txt'));
    const answer = await callTool(served.client, 'skill_file', { name: 'moving', paths: ['data/to-link.txt'] });
    expect((answer.value['files'] as { error?: { code: string } }[])[0]!.error).toMatchObject({ code: 'OUTSIDE_SKILL' });
    expect(answer.text).not.toContain(PASSWD_LINE);
    const read = rpc(served.client, 'resources/read', { uri: 'skill://moving/data/to-link.txt' });
    expect(await rpcErrorCode(read)).toBe(-32602);
    expect(await listed('data/to-link.txt')).toBeUndefined();
    expect(answer.text).not.toContain(base);
  });

  test('a deleted file is -32602 on read and gone from the next listing', async () => {
    expect(await listed('data/deleted.txt')).toBeDefined();
    unlinkSync(join(skill, 'data', 'deleted.txt'));
    expect(await rpcErrorCode(rpc(served.client, 'resources/read', { uri: 'skill://moving/data/deleted.txt' }))).toBe(-32602);
    expect(await listed('data/deleted.txt')).toBeUndefined();
  });
});
