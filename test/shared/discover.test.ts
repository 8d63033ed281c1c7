/**
 * The runner finds a skill by name before every prepare and run (`findSkillByName`) without a
 * full discovery; it must always agree with the catalog's full `discoverSkills`, or a run could
 * reach a directory the catalog refuses (a duplicate, a link out of the root, a skill over the
 * limit). Every case is checked by comparing the two on the same real tree.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { discoverSkills, findSkillByName } from '../../shared/discover.js';
import { FolderListings } from '../../shared/folder-listing.js';

const base = mkdtempSync(join(tmpdir(), 'discover-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

function skill(dir: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'SKILL.md'), `---\nname: x\ndescription: x\n---\n`);
}

const rootA = join(base, 'a');
const rootB = join(base, 'b');
const outside = join(base, 'outside');
skill(join(rootA, 'alpha'));
skill(join(rootA, 'twin'));
skill(join(rootB, 'twin')); // duplicate across roots
skill(join(rootA, 'skills', 'nested'));
skill(join(rootA, 'real-target'));
symlinkSync('real-target', join(rootA, 'alias')); // served as real-target, counted once
skill(join(rootB, 'linked-dup-target'));
skill(join(rootA, 'other'));
symlinkSync(join(rootB, 'linked-dup-target'), join(rootA, 'innocent')); // leaves root A: refused
skill(join(outside, 'escaped'));
symlinkSync(join(outside, 'escaped'), join(rootB, 'escaped')); // a link out of its root
mkdirSync(join(rootA, 'no-skill-md'));
// A link elsewhere in the root that renames a skill onto another skill's name: a duplicate.
skill(join(rootB, 'deep', 'bravo'));
skill(join(rootB, 'bravo-src'));
mkdirSync(join(rootB, 'holder'), { recursive: true });

const NAMES = [
  'alpha',
  'twin',
  'nested',
  'real-target',
  'alias',
  'linked-dup-target',
  'innocent',
  'escaped',
  'no-skill-md',
  'other',
  'bravo',
  'missing',
];

const listings = new FolderListings();

async function agree(roots: string[], maxSkills: number): Promise<void> {
  const full = await discoverSkills(roots, maxSkills);
  for (const name of NAMES) {
    const expected = full.skills.find((s) => s.name === name);
    // Read now, and through the runner's remembered listings (shared/folder-listing.ts): both agree.
    for (const found of [await findSkillByName(roots, name, maxSkills), await findSkillByName(roots, name, maxSkills, listings)]) {
      expect(found?.realDir, name).toBe(expected?.realDir);
      expect(found?.displayPath, name).toBe(expected?.displayPath);
    }
  }
}

describe('findSkillByName agrees with full discovery', () => {
  it('on duplicates across roots, aliases, links out of the root and folders without SKILL.md', async () => {
    await agree([rootA, rootB], 32);
    expect(await findSkillByName([rootA, rootB], 'twin', 32)).toBeUndefined();
    expect(await findSkillByName([rootA, rootB], 'escaped', 32)).toBeUndefined();
    const full = await discoverSkills([rootA, rootB], 32);
    expect((await findSkillByName([rootA, rootB], 'real-target', 32))?.displayPath).toBe(
      full.skills.find((s) => s.name === 'real-target')?.displayPath,
    );
  });

  it('a link in one root naming a skill of the other root is refused like discovery refuses it', async () => {
    symlinkSync(join(rootA, 'alpha'), join(rootB, 'alpha-link')); // leaves root B
    await agree([rootA, rootB], 32);
    expect(await findSkillByName([rootA, rootB], 'alpha', 32)).toBeDefined();
  });

  it('over the skill limit it falls back to full discovery, so a skill past the limit is never found', async () => {
    await agree([rootA, rootB], 2);
    await agree([rootA, rootB], 3);
  });
});
