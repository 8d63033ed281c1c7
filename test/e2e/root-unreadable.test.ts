/**
 * Started as root with `SKILLS_DIR=~/my-skills`, the front reads as uid 61183 and `/root` (0700)
 * stops it: every skill is gone and the problem used to say only "cannot be read (EACCES)". Now it
 * names the uid and which folder on the way stops it — relative to the root's folder name for the
 * model (no absolute host path), with the absolute folder, its mode and owner on stderr.
 */
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ERAS, expectNoLeftovers, FRONT_UID, serve, skillList, SUITE_TMP, tempDir } from './harness.js';

const isRoot = process.getuid?.() === 0;
let home: string;
let deep: string;
let closed: string;

function writeSkill(dir: string): void {
  mkdirSync(join(dir, 'notes'), { recursive: true, mode: 0o755 });
  writeFileSync(join(dir, 'notes', 'SKILL.md'), '---\nname: notes\ndescription: Notes.\n---\nBody.\n', { mode: 0o644 });
}

beforeAll(() => {
  if (!isRoot) return;
  // ~/my-skills of a root whose home is 0700, as /root is.
  home = tempDir('home');
  writeSkill(join(home, 'my-skills'));
  // Three levels down from such a home.
  deep = tempDir('home');
  writeSkill(join(deep, 'a', 'b', 'my-skills'));
  for (const dir of [home, deep]) chmodSync(dir, 0o700);
  // A skills folder that is itself private.
  closed = join(tempDir('closed'), 'private-skills');
  writeSkill(closed);
  chmodSync(closed, 0o700);
});
afterAll(expectNoLeftovers);

// Needs root: only a root-started front changes uid (CI is root).
describe.skipIf(!isRoot)('a root-started front whose skills folder its uid cannot reach', () => {
  test.each(ERAS)(
    '~/my-skills under a 0700 home: the problem names uid 61183 and "my-skills/..", stderr the folder ($name)',
    async (era) => {
      const served = await serve({ SKILLS_DIR: join(home, 'my-skills') }, era);
      try {
        const list = await skillList(served.client);
        expect(list.skills).toEqual([]);
        const problem = list.problems.find((p) => p.reason === 'root-unreadable');
        expect(problem?.path).toBe('my-skills');
        expect(problem?.detail).toContain(`uid ${FRONT_UID}`);
        expect(problem?.detail).toContain('the folder just above it ("my-skills/..") does not let that uid through');
        // What the model reads holds no absolute host path.
        expect(JSON.stringify(list)).not.toContain(SUITE_TMP);
        expect(served.stderr()).toContain(
          `the skills folder ${join(home, 'my-skills')} cannot be read by uid ${FRONT_UID}: ${home} (mode 0700, owner uid 0) does not let uid ${FRONT_UID} through`,
        );
      } finally {
        await served.close();
      }
    },
  );

  test('three levels down: the problem counts the levels and says which folder, relative to the root', async () => {
    const served = await serve({ SKILLS_DIR: join(deep, 'a', 'b', 'my-skills') }, ERAS[0]!);
    try {
      const problem = (await skillList(served.client)).problems.find((p) => p.reason === 'root-unreadable');
      expect(problem?.detail).toContain('the folder 3 levels above it ("my-skills/../../..")');
      expect(problem?.detail).not.toContain(SUITE_TMP);
      expect(served.stderr()).toContain(`${deep} (mode 0700, owner uid 0)`);
    } finally {
      await served.close();
    }
  });

  test('a skills folder that is itself 0700: the problem says the folder itself cannot be listed by uid 61183', async () => {
    const served = await serve({ SKILLS_DIR: closed }, ERAS[1]!);
    try {
      const problem = (await skillList(served.client)).problems.find((p) => p.reason === 'root-unreadable');
      expect(problem?.path).toBe('private-skills');
      expect(problem?.detail).toContain(`cannot be read by uid ${FRONT_UID}`);
      expect(problem?.detail).toContain('the folder itself does not let that uid list it');
      expect(problem?.detail).not.toContain(SUITE_TMP);
      expect(served.stderr()).toContain(`the skills folder ${closed} (mode 0700, owner uid 0) cannot be listed by uid ${FRONT_UID}`);
    } finally {
      await served.close();
    }
  });
});
