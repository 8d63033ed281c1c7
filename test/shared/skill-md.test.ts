/**
 * The one SKILL.md reader both processes use refuses what a bundle could plant in its place — a
 * link (to /etc/passwd), a FIFO (which would hang a synchronous open), a file too large to hold —
 * and reads a regular file exactly.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_SKILL_MD_BYTES } from '../../shared/limits.js';
import { readSkillMdFile } from '../../shared/skill-md.js';

const base = mkdtempSync(join(tmpdir(), 'skill-md-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

function skillDir(name: string): string {
  const dir = join(base, name);
  mkdirSync(dir);
  return dir;
}

describe('readSkillMdFile', () => {
  it('reads a regular SKILL.md byte for byte', () => {
    const dir = skillDir('plain');
    const text = '---\nname: plain\n---\nbody é\n';
    writeFileSync(join(dir, 'SKILL.md'), text);
    expect(readSkillMdFile(dir)).toMatchObject({ ok: true, text, size: Buffer.byteLength(text) });
  });

  it('refuses a SKILL.md that is a link to /etc/passwd, and never returns its bytes', () => {
    const dir = skillDir('link');
    symlinkSync('/etc/passwd', join(dir, 'SKILL.md'));
    const read = readSkillMdFile(dir);
    expect(read.ok).toBe(false);
    expect(JSON.stringify(read)).not.toContain('root:');
  });

  it('refuses a FIFO at once instead of hanging', () => {
    const dir = skillDir('fifo');
    execFileSync('mkfifo', [join(dir, 'SKILL.md')]);
    expect(readSkillMdFile(dir)).toMatchObject({ ok: false, why: 'SKILL.md is not a regular file' });
  });

  it(`refuses a SKILL.md over ${MAX_SKILL_MD_BYTES} bytes without reading it`, () => {
    const dir = skillDir('huge');
    writeFileSync(join(dir, 'SKILL.md'), '');
    truncateSync(join(dir, 'SKILL.md'), 256 * 1024 * 1024); // sparse: no disk, no heap
    expect(readSkillMdFile(dir)).toMatchObject({ ok: false, why: expect.stringContaining('over the') });
  });
});
