/**
 * The hashing thread (shared/hash-worker.ts): the digest is sha256 of the file's bytes, a copy
 * written through it holds the very bytes hashed, a file over the cap is `over` (never a partial
 * digest), a failed read is an error with its code, and files asked for together all come back.
 * While it hashes a large file, the event loop keeps turning.
 */
import { createHash } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { HashWorker } from '../../shared/hash-worker.js';

const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-hash-worker-'));
const hasher = new HashWorker();
afterAll(async () => {
  await hasher.close();
  rmSync(dir, { recursive: true, force: true });
});

function file(name: string, bytes: Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}
const sha = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

test('digest, copy and size of a 3 MiB file (several chunks), and of an empty one', async () => {
  const bytes = Buffer.from(Array.from({ length: 3 * 1024 * 1024 + 17 }, (_, i) => (i * 31) % 251));
  const fd = openSync(file('big', bytes), 'r');
  const out = openSync(join(dir, 'big.copy'), 'w');
  expect(await hasher.hash(fd, 64 * 1024 * 1024, out)).toEqual({ sha256: sha(bytes), size: bytes.length });
  closeSync(out);
  closeSync(fd);
  expect(readFileSync(join(dir, 'big.copy')).equals(bytes)).toBe(true);
  const empty = openSync(file('empty', Buffer.alloc(0)), 'r');
  expect(await hasher.hash(empty, 10)).toEqual({ sha256: sha(Buffer.alloc(0)), size: 0 });
  closeSync(empty);
});

test('a file over the cap is `over`, not a digest of part of it', async () => {
  const fd = openSync(file('over', Buffer.alloc(5000, 1)), 'r');
  expect(await hasher.hash(fd, 4999)).toEqual({ over: true });
  closeSync(fd);
});

test('a read that fails is an error naming its code; the thread goes on serving', async () => {
  const fd = openSync(dir, 'r'); // a directory: read fails with EISDIR
  await expect(hasher.hash(fd, 100)).rejects.toMatchObject({ code: 'EISDIR' });
  closeSync(fd);
  const ok = openSync(file('after', Buffer.from('x')), 'r');
  expect(await hasher.hash(ok, 100)).toMatchObject({ size: 1 });
  closeSync(ok);
});

test('many files asked for together all come back right, while the event loop keeps turning', async () => {
  const big = Buffer.alloc(16 * 1024 * 1024, 9);
  const path = file('many', big);
  let turns = 0;
  const timer = setInterval(() => turns++, 1);
  const fds = Array.from({ length: 6 }, () => openSync(path, 'r'));
  const answers = await Promise.all(fds.map((fd) => hasher.hash(fd, big.length)));
  clearInterval(timer);
  for (const fd of fds) closeSync(fd);
  expect(answers).toEqual(Array(6).fill({ sha256: sha(big), size: big.length }));
  expect(turns).toBeGreaterThan(0);
});
