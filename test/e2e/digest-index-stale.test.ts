/**
 * A stale digest index entry is never served for long, and never where it matters, through the
 * real server and the SDK client over stdio. The index is the front's own file (0600, its uid); a
 * test writes one by hand to stand for what the filesystem cannot be made to do on demand: a
 * digest taken while the file changed within one timestamp tick (the racy window), and a file
 * changed without moving any of its identity fields (dev, inode, size, mtime, ctime — possible
 * only by going around the kernel, or on filesystems whose ctime is not trustworthy).
 *
 * - taken in the racy window: never served, the file is hashed again;
 * - settled but wrong: listed at start (a warm start trusts the identity check, as git does), and
 *   the first read of the file corrects it — the read answers only after the catalog lists the
 *   digest of the bytes it returns, clients are told (list_changed), and the next start hashes the
 *   file again instead of reusing the entry;
 * - an index another uid owns or others may read is refused whatever it holds;
 * - the runner has no code that reads it (its bundle is checked).
 */
import { createHash } from 'node:crypto';
import { chownSync, cpSync, existsSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { fileState } from '../../shared/file-state.js';
import { ERAS, FRONT_UID, REPO, VARIED_SKILLS, expectNoLeftovers, rpc, serve, tempDir, type Served } from './harness.js';

afterAll(expectNoLeftovers);

const era = ERAS[0]!;
const isRoot = process.getuid?.() === 0;
const hex = (bytes: Uint8Array | string): string => createHash('sha256').update(bytes).digest('hex');
const FORGED = hex('bytes that are not in the file');
const SKILL = 'api-docs';
const REL = 'references/style.md';
const URI = `skill://${SKILL}/${REL}`;

/** A copy of the fixture skills and an index path the front may own. */
function setup(): { root: string; file: string; index: string } {
  const root = join(tempDir('stale-skills'), 'skills');
  cpSync(VARIED_SKILLS, root, { recursive: true });
  const home = tempDir('stale-index');
  if (isRoot) chownSync(home, FRONT_UID, FRONT_UID);
  return { root, file: join(root, SKILL, REL), index: join(home, 'digests.json') };
}

/** Writes an index holding one row for `file` in its current state, as the front would own it. */
function plant(
  index: string,
  root: string,
  file: string,
  digest: string,
  times: { firstSeen: number; hashedAt: number },
  owner = isRoot ? FRONT_UID : undefined,
): void {
  const key = `${realpathSync(join(root, SKILL))}\0${REL}`;
  const state = fileState(statSync(file, { bigint: true }));
  writeFileSync(index, JSON.stringify({ version: 2, rows: [[key, state, times.firstSeen, times.hashedAt, digest]] }), { mode: 0o600 });
  if (owner !== undefined) chownSync(index, owner, owner);
}

async function listedDigest(served: Served, uri = URI): Promise<string | undefined> {
  let cursor: string | undefined;
  do {
    const page = await rpc(served.client, 'skills/list', cursor === undefined ? {} : { cursor });
    for (const skill of page['skills'] as { resources: { uri: string; digest: string }[] }[]) {
      const found = skill.resources.find((r) => r.uri === uri);
      if (found) return found.digest;
    }
    cursor = page['nextCursor'] as string | undefined;
  } while (cursor !== undefined);
  return undefined;
}

/** The digest the saved index holds for the planted file (undefined: no row for it). */
function savedHex(index: string): string | undefined {
  if (!existsSync(index)) return undefined;
  const rows = (JSON.parse(readFileSync(index, 'utf8')) as { rows: [string, string, number, number, string][] }).rows;
  return rows.find((r) => r[0].endsWith(`\0${REL}`) && r[0].includes(SKILL))?.[4];
}

describe('a stale digest index entry is never served', () => {
  test('an entry taken in the racy window (hashed in the tick its state was first seen) is not trusted: the file is hashed again', async () => {
    const { root, file, index } = setup();
    const long = Date.now() - 60_000;
    plant(index, root, file, FORGED, { firstSeen: long, hashedAt: long });
    const served = await serve({ SKILLS_DIR: root, SKILL_MCP_WATCH: 'off', SKILL_MCP_DIGEST_INDEX: index }, era);
    try {
      expect(await listedDigest(served)).toBe(`sha256:${hex(readFileSync(file))}`);
      // The start's pass saves what it hashed: the true digest replaces the planted one.
      await expect.poll(() => savedHex(index), { timeout: 30_000 }).toBe(hex(readFileSync(file)));
    } finally {
      await served.close();
    }
  });

  test('a settled entry the bytes do not match (a change that kept every identity field) is corrected by the first read, announced, and not reused by the next start', async () => {
    const { root, file, index } = setup();
    plant(index, root, file, FORGED, { firstSeen: Date.now() - 60_000, hashedAt: Date.now() - 50_000 });
    const bytes = readFileSync(file);
    const env = { SKILLS_DIR: root, SKILL_MCP_WATCH: 'off', SKILL_MCP_DIGEST_INDEX: index };
    const served = await serve(env, era);
    try {
      let announced = 0;
      served.client.setNotificationHandler('notifications/resources/list_changed', () => {
        announced++;
      });
      // What the warm start trusts: the identity fields. This is the entry the read must undo.
      expect(await listedDigest(served)).toBe(`sha256:${FORGED}`);
      const read = await rpc(served.client, 'resources/read', { uri: URI });
      const text = (read['contents'] as { text?: string }[])[0]?.text;
      expect(text).toBe(bytes.toString('utf8'));
      // The read answered after the catalog was corrected: the listing now holds the digest of what it returned.
      expect(await listedDigest(served)).toBe(`sha256:${hex(text!)}`);
      await expect.poll(() => announced, { timeout: 30_000 }).toBeGreaterThan(0);
      await expect.poll(() => savedHex(index), { timeout: 30_000 }).toBe(hex(bytes));
    } finally {
      await served.close();
    }
    const next = await serve(env, era);
    try {
      expect(await listedDigest(next)).toBe(`sha256:${hex(bytes)}`);
    } finally {
      await next.close();
    }
  });

  test('an index that others may read is refused whatever it holds: not read, said on stderr', async () => {
    const { root, file, index } = setup();
    plant(index, root, file, FORGED, { firstSeen: Date.now() - 60_000, hashedAt: Date.now() - 50_000 });
    const { chmodSync } = await import('node:fs');
    chmodSync(index, 0o644);
    const served = await serve({ SKILLS_DIR: root, SKILL_MCP_WATCH: 'off', SKILL_MCP_DIGEST_INDEX: index }, era);
    try {
      expect(await listedDigest(served)).toBe(`sha256:${hex(readFileSync(file))}`);
      expect(served.stderr()).toMatch(/SKILL_MCP_DIGEST_INDEX: .* has mode 644; it must be 0600/);
    } finally {
      await served.close();
    }
  });

  test.skipIf(!isRoot)(
    'an index owned by another uid is refused whatever it holds, and not overwritten (root only: a test must chown it)',
    async () => {
      const { root, file, index } = setup();
      plant(index, root, file, FORGED, { firstSeen: Date.now() - 60_000, hashedAt: Date.now() - 50_000 }, 65534);
      const planted = readFileSync(index);
      const served = await serve({ SKILLS_DIR: root, SKILL_MCP_WATCH: 'off', SKILL_MCP_DIGEST_INDEX: index }, era);
      try {
        expect(await listedDigest(served)).toBe(`sha256:${hex(readFileSync(file))}`);
        // 0600 of another uid: the open itself fails; the owner check (digest-index.ts) stands behind it for a file the front could open.
        expect(served.stderr()).toMatch(/SKILL_MCP_DIGEST_INDEX: .* (is owned by uid 65534|cannot be opened \(EACCES\))/);
        expect(statSync(index).uid).toBe(65534);
        expect(readFileSync(index).equals(planted)).toBe(true);
      } finally {
        await served.close();
      }
    },
  );

  test('the runner has no code that reads the index: its bundle holds neither the variable nor the module', () => {
    const runner = readFileSync(join(REPO, 'dist/skill-mcp-runner.cjs'), 'utf8');
    const front = readFileSync(join(REPO, 'dist/skill-mcp.cjs'), 'utf8');
    // The same check finds both in the front's bundle, so it is not looking for the wrong strings.
    for (const needle of ['SKILL_MCP_DIGEST_INDEX', 'front-digest-index.json', 'parsedSkillMd']) {
      expect(front).toContain(needle);
      expect(runner).not.toContain(needle);
    }
  });
});
