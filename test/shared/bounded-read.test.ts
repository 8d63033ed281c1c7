/** The one bounded read (shared/bounded-read.ts), by the attacks it stops. */
import { closeSync, mkdtempSync, openSync, rmSync, truncateSync, writeFileSync, constants, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readBounded } from '../../shared/bounded-read.js';

const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-bounded-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function withFd<T>(path: string, use: (fd: number) => T, flags = constants.O_RDONLY): T {
  const fd = openSync(path, flags);
  try {
    return use(fd);
  } finally {
    closeSync(fd);
  }
}

describe('readBounded', () => {
  it('reads a regular file within the bound, whole', () => {
    writeFileSync(join(dir, 'a'), 'hello');
    const read = withFd(join(dir, 'a'), (fd) => readBounded(fd, 5));
    expect(read.ok && read.bytes.toString()).toBe('hello');
  });

  it('attack: a sparse 1 TiB file is refused from its size, before a byte is read', () => {
    writeFileSync(join(dir, 'sparse'), '');
    truncateSync(join(dir, 'sparse'), 2 ** 40);
    const read = withFd(join(dir, 'sparse'), (fd) => readBounded(fd, 1024));
    expect(read).toMatchObject({ ok: false, why: 'too-large' });
  });

  it('attack: a folder (or anything not a regular file) is not read', () => {
    const read = withFd(dir, (fd) => readBounded(fd, 1024), constants.O_RDONLY | constants.O_DIRECTORY);
    expect(read).toMatchObject({ ok: false, why: 'not-a-file' });
  });

  it('attack: a file that grows while it is read is cut at the size it had, never past the bound', () => {
    writeFileSync(join(dir, 'grows'), 'x'.repeat(10));
    const read = withFd(join(dir, 'grows'), (fd) => {
      appendFileSync(join(dir, 'grows'), 'y'.repeat(10_000));
      return readBounded(fd, 10);
    });
    // The size fstat gave may be the grown one (then refused) or the first (then cut there): never more than 10 bytes read.
    if (read.ok) expect(read.bytes.length).toBeLessThanOrEqual(10);
    else expect(read.why).toBe('too-large');
  });
});
