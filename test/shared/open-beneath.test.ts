/**
 * Attacks on the openat2 way of opening below a skill (shared/open-beneath.ts), each straight at
 * the opener, with no realpath check before it nor /proc check after: a `..` out of the folder, an
 * absolute path, an absolute link, a relative link climbing out, a link that stays inside (refused
 * the same way: the walk resolves links before the open, so one met during it was swapped in), a
 * /proc magic link, a mount point crossed. And what must hold of every descriptor it returns: the
 * file named, read-only, close-on-exec. Linux 5.6+ with koffi (this host and CI).
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BeneathOpener } from '../../shared/open-beneath.js';
import { loadOpenat2, perComponentOpener, rootReads } from '../../shared/open-beneath.js';
import { openInsideSkill } from '../../shared/open-inside.js';

const loaded = loadOpenat2();
const O_CLOEXEC = 0o2000000;

let base: string;
let skill: string;

beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'skill-mcp-beneath-')));
  writeFileSync(join(base, 'secret.txt'), 'SECRET\n');
  skill = join(base, 'skill');
  mkdirSync(join(skill, 'a', 'b', 'c'), { recursive: true });
  writeFileSync(join(skill, 'a', 'b', 'c', 'deep.txt'), 'deep\n');
  writeFileSync(join(skill, 'data.txt'), 'data\n');
  symlinkSync(join(base, 'secret.txt'), join(skill, 'abs-link'));
  symlinkSync('../secret.txt', join(skill, 'rel-link'));
  symlinkSync('data.txt', join(skill, 'inner-link'));
  symlinkSync('a/b', join(skill, 'dir-link'));
  symlinkSync('/proc/self/fd/0', join(skill, 'proc-link'));
});

afterAll(() => rmSync(base, { recursive: true, force: true }));

function codeOf(run: () => unknown): string {
  try {
    const fd = run();
    if (typeof fd === 'number') closeSync(fd);
    return 'opened';
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? 'no code';
  }
}

describe.skipIf(process.platform !== 'linux')('openat2 below a skill refuses every way out (Linux 5.6+ with koffi)', () => {
  it('loads on this host, and is what skill reads use here', () => {
    expect('why' in loaded ? loaded.why : loaded.mechanism).toBe('openat2');
    expect(rootReads()).toEqual({ opener: expect.objectContaining({ mechanism: 'openat2' }) });
  });
  const opener = loaded as BeneathOpener;
  const inSkill = (segments: string[]) => () => {
    const root = opener.openRoot(skill);
    try {
      return opener.open(root, segments);
    } finally {
      closeSync(root);
    }
  };

  it('opens a file four folders down, read-only and close-on-exec (a spawned script never inherits it)', () => {
    const root = opener.openRoot(skill);
    const fd = opener.open(root, ['a', 'b', 'c', 'deep.txt']);
    closeSync(root);
    try {
      expect(readFileSync(fd, 'utf8')).toBe('deep\n');
      const flags = Number.parseInt(/^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))![1]!, 8);
      expect(flags & O_CLOEXEC).toBe(O_CLOEXEC);
      expect(flags & 0o3).toBe(0); // O_RDONLY
    } finally {
      closeSync(fd);
    }
  });

  it('".." out of the folder, even from below it: EXDEV', () => {
    expect(codeOf(inSkill(['..', 'secret.txt']))).toBe('EXDEV');
    expect(codeOf(inSkill(['a', '..', '..', 'secret.txt']))).toBe('EXDEV');
  });

  it('an absolute path: EXDEV', () => {
    expect(codeOf(inSkill(['', 'etc', 'passwd']))).toBe('EXDEV');
  });

  it('an absolute link to a file outside: ELOOP, not followed', () => {
    expect(codeOf(inSkill(['abs-link']))).toBe('ELOOP');
  });

  it('a relative link climbing out: ELOOP, not followed', () => {
    expect(codeOf(inSkill(['rel-link']))).toBe('ELOOP');
  });

  it('a link that stays inside, as the last name or as a folder on the way: ELOOP, the same refusal as the per-component way', () => {
    expect(codeOf(inSkill(['inner-link']))).toBe('ELOOP');
    expect(codeOf(inSkill(['dir-link', 'c', 'deep.txt']))).toBe('ELOOP');
    const root = perComponentOpener.openRoot(skill);
    try {
      expect(codeOf(() => perComponentOpener.open(root, ['inner-link']))).toBe('ELOOP');
      expect(codeOf(() => perComponentOpener.open(root, ['dir-link', 'c', 'deep.txt']))).toMatch(/^(ELOOP|ENOTDIR)$/);
    } finally {
      closeSync(root);
    }
  });

  it('a /proc magic link, reached below /proc/PID (fd/N jumps to any open file) or through a link in the skill: ELOOP', () => {
    const target = openSync(join(base, 'secret.txt'), 'r');
    const procSelf = opener.openRoot(`/proc/${process.pid}`);
    try {
      expect(codeOf(() => opener.open(procSelf, ['fd', String(target)]))).toBe('ELOOP');
      expect(codeOf(() => opener.open(procSelf, ['root', 'etc', 'passwd']))).toBe('ELOOP');
    } finally {
      closeSync(procSelf);
      closeSync(target);
    }
    expect(codeOf(inSkill(['proc-link']))).toBe('ELOOP');
  });

  it('a mount point on the way (/proc below /): EXDEV', () => {
    const slash = opener.openRoot('/');
    try {
      expect(codeOf(() => opener.open(slash, ['proc', 'version']))).toBe('EXDEV');
    } finally {
      closeSync(slash);
    }
  });

  it('a NUL in a name is refused before the call (a C string would end there and name a shorter path)', () => {
    expect(codeOf(inSkill(['data.txt\0', 'x']))).toBe('EINVAL');
  });

  it('through openInsideSkill: a link inside is served as its target (resolved first), one leaving is refused, a mount crossing is refused', () => {
    const { fd } = openInsideSkill(skill, 'inner-link', opener);
    expect(readFileSync(fd, 'utf8')).toBe('data\n');
    closeSync(fd);
    expect(() => openInsideSkill(skill, 'rel-link', opener)).toThrow(/resolves outside the skill/);
    expect(() => openInsideSkill('/', 'proc/version', opener)).toThrow(/crosses a mount point/);
  });

  it('a FIFO planted in the skill opens without blocking and is refused as not a regular file', () => {
    const made = spawnSync('mkfifo', [join(skill, 'pipe')]);
    if (made.status !== 0) throw new Error(`mkfifo failed: ${made.stderr}`);
    const root = opener.openRoot(skill);
    // Without O_NONBLOCK this open would wait for a writer forever.
    const fd = opener.open(root, ['pipe']);
    closeSync(root);
    closeSync(fd);
    expect(() => openInsideSkill(skill, 'pipe', opener)).toThrow(/not a regular file/);
  });
});
