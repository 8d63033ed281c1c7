/**
 * The copy and digest of a skill's files at the sizes around the small-file path of
 * shared/skill-content.ts (read on the calling thread up to 64 KiB, on the hashing thread above):
 * both ways give the file's sha256, size and an identical copy, with and without the hashing
 * thread and with a sink that writes by fd or by `write`; a cap below a small file refuses the
 * copy (TOO_LARGE), never a partial digest.
 */
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HashWorker } from '../../shared/hash-worker.js';
import type { ContentSink } from '../../shared/skill-content.js';
import { readSkillContent } from '../../shared/skill-content.js';

const KIB = 1024;
const SIZES: Record<string, number> = {
  'empty.txt': 0,
  'one.txt': 1,
  'small.txt': 100,
  'edge.txt': 64 * KIB,
  'past-edge.txt': 64 * KIB + 1,
  'large.bin': 3 * 1024 * KIB + 7,
};
const root = mkdtempSync(join(tmpdir(), 'skill-mcp-content-sizes-'));
const skill = join(root, 'sized');
mkdirSync(skill);
writeFileSync(join(skill, 'SKILL.md'), '---\nname: sized\ndescription: files of many sizes\n---\n');
const bytesOf = (size: number, seed: number): Buffer => Buffer.from(Array.from({ length: size }, (_, i) => (i * 31 + seed) % 251));
for (const [name, size] of Object.entries(SIZES)) writeFileSync(join(skill, name), bytesOf(size, name.length));
const hasher = new HashWorker();
afterAll(async () => {
  await hasher.close();
  rmSync(root, { recursive: true, force: true });
});
const sha = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** A copy into `dir`, by fd (as the runner's copy: the hashing thread writes it) or by `write` only. */
function sinkInto(dir: string, byFd: boolean): ContentSink {
  mkdirSync(dir);
  return {
    open(path) {
      const fd = openSync(join(dir, path), 'wx');
      return {
        ...(byFd ? { fd } : {}),
        async write(chunk: Buffer) {
          for (let at = 0; at < chunk.length; ) at += writeSync(fd, chunk, at, chunk.length - at);
        },
        close: () => closeSync(fd),
      };
    },
  };
}

describe("a skill's files at every size copy and hash the same on both paths", () => {
  const ways = [
    { name: 'with the hashing thread, copy by fd', hasher, byFd: true },
    { name: 'with the hashing thread, copy by write', hasher, byFd: false },
    { name: 'without it', hasher: undefined, byFd: false },
  ];
  it.each(ways)('$name', async ({ hasher: h, byFd, name }) => {
    const copy = join(root, `copy-${name.replace(/\W+/g, '-')}`);
    const read = await readSkillContent(
      'sized',
      skill,
      { maxFiles: 100, maxDirs: 10, maxBytes: 64 * 1024 * KIB, ...(h ? { hasher: h } : {}) },
      sinkInto(copy, byFd),
    );
    if (!read.ok) throw new Error(read.why);
    for (const [file, size] of Object.entries(SIZES)) {
      const original = readFileSync(join(skill, file));
      expect(read.content.files.find((f) => f.path === file)).toEqual({ path: file, sha256: sha(original), size });
      expect(readFileSync(join(copy, file)).equals(original), `${file}: the copy holds other bytes`).toBe(true);
    }
  });

  it('a cap below a small file refuses the copy as TOO_LARGE (never a digest of part of it)', async () => {
    const tiny = join(root, 'tiny');
    mkdirSync(tiny);
    writeFileSync(join(tiny, 'SKILL.md'), 'x'.repeat(100));
    // The walk sees 100 bytes; the file grows before its read: the small-file read finds it over the cap.
    const read = await readSkillContent(
      'tiny',
      tiny,
      { maxFiles: 10, maxDirs: 10, maxBytes: 100, hasher },
      {
        open(path) {
          if (path === 'SKILL.md') writeFileSync(join(tiny, 'SKILL.md'), 'x'.repeat(101));
          return { async write() {}, close() {} };
        },
      },
    );
    expect(read).toMatchObject({ ok: false, code: 'TOO_LARGE' });
  });
});
