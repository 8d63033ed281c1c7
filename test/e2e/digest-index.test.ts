/**
 * The warm-start digest index through the real server (SKILL_MCP_DIGEST_INDEX, as root the uid the
 * front drops to owns it): after starts that record and settle it, a fresh server publishes the
 * same digests as one without it; a file edited between two starts with its size and mtime put
 * back is published with the digest of its new bytes; an index file left readable by others is
 * refused with a line on stderr, and the digests are still right.
 */
import { createHash } from 'node:crypto';
import { chmodSync, chownSync, cpSync, existsSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { SETTLE_MS } from '../../server/catalog/digest-index.js';
import { ERAS, FRONT_UID, VARIED_SKILLS, expectNoLeftovers, rpc, serve, tempDir } from './harness.js';

afterAll(expectNoLeftovers);

const era = ERAS[0]!;
const sha = (bytes: Uint8Array): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

/** Every published digest, by resource URI, from a fresh server's whole walk. */
async function publishedDigests(
  env: Record<string, string>,
  savedWith?: { index: string; settled: number },
): Promise<{ digests: Map<string, string>; entries: Map<string, string>; stderr: string }> {
  const served = await serve({ SKILL_MCP_WATCH: 'off', ...env }, era);
  try {
    const digests = new Map<string, string>();
    // Whole entries (frontmatter too: the index also remembers each SKILL.md's parse).
    const entries = new Map<string, string>();
    let cursor: string | undefined;
    do {
      const page = await rpc(served.client, 'skills/list', cursor === undefined ? {} : { cursor });
      for (const skill of page['skills'] as { uri: string; resources: { uri: string; digest: string }[] }[]) {
        entries.set(skill.uri, JSON.stringify(skill));
        for (const r of skill.resources) digests.set(r.uri, r.digest);
      }
      cursor = page['nextCursor'] as string | undefined;
    } while (cursor !== undefined);
    // The index is saved once the start's digest pass is done: wait for it while the server runs.
    if (savedWith) await expect.poll(() => settledRows(savedWith.index), { timeout: 30_000 }).toBe(savedWith.settled);
    return { digests, entries, stderr: served.stderr() };
  } finally {
    await served.close();
  }
}

const settledRows = (index: string): number => {
  if (!existsSync(index)) return -1;
  const rows = (JSON.parse(readFileSync(index, 'utf8')) as { rows: [string, string, number, number, string][] }).rows;
  return rows.filter((r) => r[3] - r[2] >= SETTLE_MS).length;
};

describe('SKILL_MCP_DIGEST_INDEX through the real server', () => {
  test('settled digests are reused, an edit keeping size and mtime is seen at the next start, and a world-readable index is refused', async () => {
    const root = join(tempDir('index-skills'), 'skills');
    cpSync(VARIED_SKILLS, root, { recursive: true });
    const home = tempDir('index');
    if (process.getuid?.() === 0) chownSync(home, FRONT_UID, FRONT_UID);
    const index = join(home, 'digests.json');
    const env = { SKILLS_DIR: root, SKILL_MCP_DIGEST_INDEX: index };
    // The file edited later: its mtime a whole second now, so it can be put back to the nanosecond.
    const uri = 'skill://api-docs/SKILL.md';
    const file = join(root, 'api-docs', 'SKILL.md');
    utimesSync(file, 1_700_000_000, 1_700_000_000);
    const fresh = await publishedDigests({ SKILLS_DIR: root, SKILL_MCP_DIGEST_INDEX: 'off' });
    expect(fresh.digests.size).toBeGreaterThan(20);
    expect(fresh.digests.get(uri)).toBe(sha(readFileSync(file)));

    // First start records (it saves once its digest pass is done); the next one, past the settling time, settles.
    await publishedDigests(env, { index, settled: 0 });
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS + 100));
    await publishedDigests(env, { index, settled: fresh.digests.size });
    expect(statSync(index).mode & 0o777).toBe(0o600);
    if (process.getuid?.() === 0) expect(statSync(index).uid).toBe(FRONT_UID);
    const warm = await publishedDigests(env);
    expect(warm.digests).toEqual(fresh.digests);
    expect(warm.entries).toEqual(fresh.entries);

    // An edit that keeps the size and the mtime (to the nanosecond: a whole second).
    const before = statSync(file, { bigint: true });
    const edited = Buffer.from(readFileSync(file));
    edited[edited.length - 2] = edited[edited.length - 2] === 0x41 ? 0x42 : 0x41;
    writeFileSync(file, edited);
    utimesSync(file, 1_700_000_000, 1_700_000_000);
    const after = statSync(file, { bigint: true });
    expect([after.size, after.mtimeNs, after.ino]).toEqual([before.size, before.mtimeNs, before.ino]);
    const afterEdit = await publishedDigests(env);
    expect(afterEdit.digests.get(uri)).toBe(sha(edited));
    expect(afterEdit.digests.get(uri)).not.toBe(fresh.digests.get(uri));

    chmodSync(index, 0o644);
    const refused = await publishedDigests(env);
    expect(refused.stderr).toMatch(/SKILL_MCP_DIGEST_INDEX: .* has mode 644; it must be 0600/);
    expect(refused.digests.get(uri)).toBe(sha(edited));
  });
});
