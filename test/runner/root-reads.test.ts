/**
 * Attack: making a root runner read (and copy into a run, or hash for describe) a file outside the
 * skill — a file swapped for a link to a secret, a folder swapped for a link to a secret folder,
 * in a loop while the runner reads; a hard link to a secret; a file another user owns. The reads
 * go through the same function describe and the run copy use (shared/skill-content.ts), with a
 * sink collecting every byte copied. No byte of the secret is ever read, whatever the timing;
 * bounded iterations, no timing asserts. Root only (the owner and link rules are a root runner's).
 * Every attack runs on both ways of opening (shared/open-beneath.ts): openat2, and the
 * per-component O_NOFOLLOW walk a kernel before 5.6 (or a machine without koffi) gets. Last, the
 * requirement files a preview reads (runner/deps/resolve.ts), with this process's way, as any uid.
 */
import { spawn } from 'node:child_process';
import {
  chownSync,
  closeSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { readSkillFile } from '../../runner/deps/resolve.js';
import { readSkillContent } from '../../shared/skill-content.js';
import type { BeneathOpener } from '../../shared/open-beneath.js';
import { loadOpenat2, perComponentOpener } from '../../shared/open-beneath.js';
import { openInsideSkill } from '../../shared/open-inside.js';
import { isRoot, REPO, startRunner, tempDir } from './harness.js';

const SECRET = `TOP-SECRET-${process.pid}`;
const limits = { maxFiles: 100, maxDirs: 100, maxBytes: 1024 * 1024 };

let skill: string;
let outside: string;

beforeAll(() => {
  outside = tempDir('outside');
  writeFileSync(join(outside, 'secret.txt'), `${SECRET}\n`, { mode: 0o600 });
  mkdirSync(join(outside, 'lib'));
  writeFileSync(join(outside, 'lib', 'data.txt'), `${SECRET}\n`, { mode: 0o600 });
  skill = join(tempDir('skills'), 'racy');
  mkdirSync(join(skill, 'lib'), { recursive: true });
  writeFileSync(join(skill, 'SKILL.md'), '---\nname: racy\ndescription: a skill whose files move\n---\nBody.\n');
  writeFileSync(join(skill, 'data.txt'), 'benign data\n');
  writeFileSync(join(skill, 'lib', 'data.txt'), 'benign lib\n');
});

/**
 * Swaps, in another process, data.txt ↔ a link to the secret and lib/ ↔ a link to the secret
 * folder, until stopped; resolves once the first swap is done. `stop` kills it and puts the skill
 * back as it was (the kill can land between any two steps).
 */
async function startSwapper(): Promise<{ stop(): Promise<void> }> {
  const program = `
const fs = require('node:fs'), p = require('node:path');
const [skill, outside] = process.argv.slice(1);
const f = p.join(skill, 'data.txt'), d = p.join(skill, 'lib');
for (let i = 0; ; i++) {
  try {
    fs.writeFileSync(f + '.new', 'benign data\\n'); fs.renameSync(f + '.new', f);
    fs.symlinkSync(p.join(outside, 'secret.txt'), f + '.lnk'); fs.renameSync(f + '.lnk', f);
    fs.renameSync(d, d + '.real'); fs.symlinkSync(p.join(outside, 'lib'), d);
    fs.unlinkSync(d); fs.renameSync(d + '.real', d);
  } catch {}
  if (i === 0) process.stdout.write('swapping\\n');
}`;
  const child = spawn(process.execPath, ['-e', program, skill, outside], { stdio: ['ignore', 'pipe', 'ignore'] });
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the swapper exited (${code}) before its first swap`)));
  });
  return {
    stop: async () => {
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      });
      const f = join(skill, 'data.txt');
      const d = join(skill, 'lib');
      if (existsSync(`${d}.real`)) {
        // Killed mid-swap: lib is a link or absent, the real folder waits under lib.real.
        if (lstatSync(d, { throwIfNoEntry: false })?.isSymbolicLink()) unlinkSync(d);
        renameSync(`${d}.real`, d);
      }
      rmSync(f, { force: true });
      for (const stray of [`${f}.new`, `${f}.lnk`]) rmSync(stray, { force: true });
      writeFileSync(f, 'benign data\n');
    },
  };
}

const openat2 = loadOpenat2();
// On a Linux 5.6+ host with koffi (CI's, this one) the openat2 way must load; the test says why if not.
const openers: [string, BeneathOpener | { why: string }][] = [
  ['openat2', openat2],
  ['per-component O_NOFOLLOW', perComponentOpener],
];

describe.skipIf(!isRoot).each(openers)('a root reader never leaves the skill, opening by %s (root only)', (_name, loaded) => {
  it('the opener is available on this host', () => {
    expect('why' in loaded ? loaded.why : 'loaded').toBe('loaded');
  });
  const opener = loaded as BeneathOpener;

  it('files and folders swapped for links in a loop: 400 reads and copies, never a byte of the secret', async () => {
    const swapper = await startSwapper();
    let copied = 0;
    let refused = 0;
    try {
      for (let i = 0; i < 400; i++) {
        const bytes: Buffer[] = [];
        const result = await readSkillContent(
          'racy',
          skill,
          { ...limits, opener },
          {
            open: () => ({
              write: async (chunk) => {
                bytes.push(Buffer.from(chunk));
              },
              close: () => undefined,
            }),
          },
        );
        expect(Buffer.concat(bytes).toString('utf8')).not.toContain(SECRET);
        if (result.ok) copied++;
        else refused++;
        for (const rel of ['data.txt', 'lib/data.txt']) {
          try {
            const { fd } = openInsideSkill(skill, rel, opener);
            try {
              expect(readFileSync(fd, 'utf8')).not.toContain(SECRET);
            } finally {
              closeSync(fd);
            }
          } catch (error) {
            expect((error as { code?: string }).code).toMatch(/OUTSIDE_SKILL|NOT_FOUND|READ_FAILED|NOT_A_FILE/);
          }
        }
      }
    } finally {
      await swapper.stop();
    }
    // Both outcomes happen across the loop; neither ever carries the secret.
    expect(copied + refused).toBe(400);
  });

  it('the opener alone, without the checks after it, never opens the secret while lib/ and data.txt are swapped for links', async () => {
    // openInsideSkill also refuses what /proc says lies outside; this holds the open itself to the rule.
    const swapper = await startSwapper();
    const rootFd = opener.openRoot(skill);
    const outcomes = new Set<string>();
    try {
      // At least 400 rounds, more (bounded) until both a read and a refusal were seen; the mix
      // depends on scheduling and is not asserted.
      for (let i = 0; i < 400 || (i < 20_000 && !(outcomes.has('read') && outcomes.size > 1)); i++) {
        for (const segments of [['data.txt'], ['lib', 'data.txt']]) {
          let fd: number;
          try {
            fd = opener.open(rootFd, segments);
          } catch (error) {
            const code = (error as { code?: string }).code ?? 'none';
            expect(code).toMatch(/^(ELOOP|ENOTDIR|ENOENT)$/);
            outcomes.add(code);
            continue;
          }
          try {
            expect(readFileSync(fd, 'utf8')).not.toContain(SECRET);
            outcomes.add('read');
          } finally {
            closeSync(fd);
          }
        }
      }
    } finally {
      closeSync(rootFd);
      await swapper.stop();
    }
  });

  it('a hard link to a file outside is refused (it has two names), and a file another user owns is refused', () => {
    const dir = join(tempDir('skills'), 'linked');
    mkdirSync(dir, { recursive: true });
    const secret = join(tempDir('outside'), 'secret.txt');
    writeFileSync(secret, `${SECRET}\n`, { mode: 0o600 });
    linkSync(secret, join(dir, 'hard.txt'));
    expect(() => openInsideSkill(dir, 'hard.txt', opener)).toThrow(/2 hard links/);
    writeFileSync(join(dir, 'theirs.txt'), 'planted by someone else\n');
    chownSync(join(dir, 'theirs.txt'), 40118, 40118);
    expect(() => openInsideSkill(dir, 'theirs.txt', opener)).toThrow(/belongs to uid 40118/);
    writeFileSync(join(dir, 'mine.txt'), 'fine\n');
    const { fd } = openInsideSkill(dir, 'mine.txt', opener);
    expect(readFileSync(fd, 'utf8')).toBe('fine\n');
    closeSync(fd);
  });
});

describe('a requirements file read for a preview never comes from outside the skill', () => {
  it('lib/ swapped for a link to a folder holding the secret as lib/data.txt while it is read: the secret is never returned', async () => {
    const swapper = await startSwapper();
    const outcomes = new Set<string>();
    try {
      // 2000 rounds, more (bounded) until a swap landed between the check and the open at least
      // once: the window in which the plain open of the resolved path this replaced followed the
      // link (in two runs of three at 20 000 rounds, measured).
      for (let i = 0; i < 2000 || (i < 20_000 && ![...outcomes].some((o) => o.includes('changed into a link'))); i++) {
        const read = readSkillFile(skill, 'lib/data.txt', 1024);
        if (read.ok) expect(read.bytes.toString('utf8')).not.toContain(SECRET);
        outcomes.add(read.ok ? 'read' : read.why);
      }
    } finally {
      await swapper.stop();
    }
    for (const outcome of outcomes)
      expect(outcome).toMatch(
        /^(read|lib\/data\.txt (is not in the skill|resolves outside the skill|cannot be read \(EINVAL\)|changed into a link .*))$/,
      );
  });
});

describe.skipIf(!isRoot)(
  'a root runner that cannot use openat2 says so once at start (root only: hides koffi in a mount namespace)',
  () => {
    it('koffi hidden: one note naming the per-folder way and why, and the runner still starts', async () => {
      const empty = join(tempDir('no-koffi'), 'koffi');
      mkdirSync(empty);
      const hide = [
        'unshare',
        '--mount',
        '--',
        'sh',
        '-c',
        'mount --bind "$0" "$1" && shift && exec "$@"',
        empty,
        join(REPO, 'node_modules', 'koffi'),
      ];
      const runner = await startRunner({ env: {}, spawnPrefix: hide });
      try {
        const notes = runner
          .stderr()
          .split('\n')
          .filter((line) => line.includes('not with openat2'));
        expect(notes, runner.stderr()).toEqual([
          expect.stringContaining(
            'skill files are opened one folder at a time with O_NOFOLLOW, not with openat2 (koffi could not be loaded',
          ),
        ]);
      } finally {
        await runner.stop();
      }
    });
  },
);
