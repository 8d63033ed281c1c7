/**
 * Attack: making a root runner read (and copy into a run, or hash for describe) a file outside the
 * skill — a file swapped for a link to a secret, a folder swapped for a link to a secret folder,
 * in a loop while the runner reads; a hard link to a secret; a file another user owns. The reads
 * go through the same function describe and the run copy use (shared/skill-content.ts), with a
 * sink collecting every byte copied. No byte of the secret is ever read, whatever the timing;
 * bounded iterations, no timing asserts. Root only (the owner and link rules are a root runner's).
 */
import { spawn } from 'node:child_process';
import { chownSync, linkSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSkillContent } from '../../shared/skill-content.js';
import { openInsideSkill } from '../../shared/open-inside.js';
import { isRoot, tempDir } from './harness.js';

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

/** Swaps, in another process, data.txt ↔ a link to the secret and lib/ ↔ a link to the secret folder, until killed. */
function startSwapper(): { stop(): Promise<void> } {
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
}`;
  const child = spawn(process.execPath, ['-e', program, skill, outside], { stdio: 'ignore' });
  return {
    stop: () => new Promise((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    }),
  };
}

describe.skipIf(!isRoot)('a root reader never leaves the skill (root only)', () => {
  afterAll(() => undefined);

  it('files and folders swapped for links in a loop: 400 reads and copies, never a byte of the secret', async () => {
    const swapper = startSwapper();
    let copied = 0;
    let refused = 0;
    try {
      for (let i = 0; i < 400; i++) {
        const bytes: Buffer[] = [];
        const result = await readSkillContent('racy', skill, limits, { open: () => ({ write: async (chunk) => { bytes.push(Buffer.from(chunk)); }, close: () => undefined }) });
        expect(Buffer.concat(bytes).toString('utf8')).not.toContain(SECRET);
        if (result.ok) copied++;
        else refused++;
        for (const rel of ['data.txt', 'lib/data.txt']) {
          try {
            const { fd } = openInsideSkill(skill, rel);
            const { readFileSync, closeSync } = await import('node:fs');
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

  it('a hard link to a file outside is refused (it has two names), and a file another user owns is refused', () => {
    const dir = join(tempDir('skills'), 'linked');
    mkdirSync(dir, { recursive: true });
    linkSync(join(outside, 'secret.txt'), join(dir, 'hard.txt'));
    expect(() => openInsideSkill(dir, 'hard.txt')).toThrow(/2 hard links/);
    writeFileSync(join(dir, 'theirs.txt'), 'planted by someone else\n');
    chownSync(join(dir, 'theirs.txt'), 40118, 40118);
    expect(() => openInsideSkill(dir, 'theirs.txt')).toThrow(/belongs to uid 40118/);
    writeFileSync(join(dir, 'mine.txt'), 'fine\n');
    const { fd } = openInsideSkill(dir, 'mine.txt');
    expect(fd).toBeGreaterThan(0);
  });
});
