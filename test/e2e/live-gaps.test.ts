/**
 * The live catalog's edges, over a real stdio transport with the SDK `Client`:
 *
 * - a change made at start-up, after the folders were scanned but before the watch reached them
 *   (it is set up a few ms at a time after the first answers), is not lost;
 * - a root missing at start is served, announced and watched once it appears (its parent folder is
 *   watched; the periodic look, every 30 s by default, is longer than these tests wait);
 * - a change that only alters the problems (a new folder that is not a valid skill, a broken
 *   SKILL.md broken differently) is announced like any other catalog change; a skill that turns
 *   into a problem and back was announced already (a skill comes or goes), and still is.
 *
 * Every wait is for a notification or a condition, with a generous deadline (SEEN_WITHIN_MS).
 */
import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { ERAS, expectNoLeftovers, rpc, serve, skillList, tempDir, type ProblemEntry, type Served } from './harness.js';
import { ChangeCounter, walkSkills, writeSkill } from './live-scenario.js';

afterAll(expectNoLeftovers);

// An internal note (SKILL_MCP_LOG_LEVEL=debug): the watch is set up.
const WATCHING = /debug: watching the skill folders for changes/;
const DEBUG = { SKILL_MCP_LOG_LEVEL: 'debug' };

/** Descriptions by skill name, from a full skills/list walk. */
async function descriptions(client: Parameters<typeof walkSkills>[0]): Promise<Map<string, unknown>> {
  const { entries } = await walkSkills(client);
  return new Map(entries.map((e) => [/^skill:\/\/([^/]+)\//.exec(e.uri)![1]!, e.frontmatter['description']]));
}

describe('a change made while the watch is still being set up', () => {
  test('is seen: every skill edited right after the first answer is served with its new description', async () => {
    // Enough folders that setting up their watches takes a while after the server first answers.
    const root = tempDir('gap');
    const SKILLS = 300;
    const FOLDERS = 60;
    const names = Array.from({ length: SKILLS }, (_, i) => `gap-${String(i).padStart(3, '0')}`);
    for (const name of names) {
      writeSkill(root, name, `The ${name} skill, as first written.`);
      for (let f = 0; f < FOLDERS; f++) mkdirSync(join(root, name, `part-${f}`, 'deeper'), { recursive: true });
    }
    const served = await serve({ ...DEBUG, SKILLS_DIR: root }, ERAS[0]!);
    try {
      // Answering means the start-up scan is done; the watch is still walking the 36,000 folders.
      expect(
        served.stderr(),
        'the watch was ready before the test could change anything (a machine this fast needs a bigger tree)',
      ).not.toMatch(WATCHING);
      // The walk visits the skills in reverse listing order: edit in the order it reaches them last.
      for (const name of readdirSync(root)) writeSkill(root, name, `The ${name} skill, edited during start-up.`);
      const editedBeforeReady = !WATCHING.test(served.stderr());
      expect(editedBeforeReady, 'the edits were made before the watch was ready').toBe(true);
      const counter = new ChangeCounter(served.client);
      await counter.until(async () => {
        const now = await descriptions(served.client);
        return names.every((name) => now.get(name) === `The ${name} skill, edited during start-up.`);
      }, 'every edit made during start-up, served');
      await served.waitForStderr(WATCHING);
      const now = await descriptions(served.client);
      expect([...now.keys()].sort()).toEqual(names);
    } finally {
      await served.close();
    }
  });
});

describe.each(ERAS)('a root missing at start, $name', (era) => {
  test('is served, announced and watched once it appears', async () => {
    const base = tempDir('missing-root');
    // Two levels missing: the watch moves down to each parent as it appears.
    const root = join(base, 'later', 'skills');
    const served = await serve({ ...DEBUG, SKILLS_DIR: root }, era);
    try {
      await served.waitForStderr(/skills: not there \(yet\); served as soon as it appears/);
      if (era.versionNegotiation) await served.client.listen({ resourcesListChanged: true, promptsListChanged: true });
      const counter = new ChangeCounter(served.client);
      expect((await skillList(served.client)).problems).toContainEqual(
        expect.objectContaining({ path: 'skills', reason: 'root-unreadable' }),
      );

      await counter.after(() => {
        mkdirSync(join(base, 'later'));
        mkdirSync(root);
        writeSkill(root, 'arrived', 'A skill in a root that appeared after the start.');
      });
      await counter.until(async () => (await descriptions(served.client)).has('arrived'), 'the skill of the root that appeared');
      const list = await skillList(served.client);
      expect(list.skills.map((s) => s.name)).toEqual(['arrived']);
      expect(list.problems.filter((p) => p.reason === 'root-unreadable')).toEqual([]);
      await served.waitForStderr(/skills: appeared; its skills are served, and its \d+ folders watched for changes/);

      // Watched from now on: a skill moved in later is seen too.
      const staging = tempDir('staging');
      writeSkill(staging, 'second', 'Moved in after the root appeared.');
      await counter.after(() => renameSync(join(staging, 'second'), join(root, 'second')));
      expect([...(await descriptions(served.client)).keys()].sort()).toEqual(['arrived', 'second']);
    } finally {
      await served.close();
    }
  });
});

describe.each(ERAS)('a watched root that goes away, $name', (era) => {
  test('deleted: its skills go, the missing root is named, and a root made again under the same name is served and watched', async () => {
    const base = tempDir('gone-root');
    const root = join(base, 'skills');
    mkdirSync(root);
    writeSkill(root, 'first', 'In the root before it was deleted.');
    const served = await serve({ ...DEBUG, SKILLS_DIR: root }, era);
    try {
      await served.waitForStderr(WATCHING);
      if (era.versionNegotiation) await served.client.listen({ resourcesListChanged: true, promptsListChanged: true });
      const counter = new ChangeCounter(served.client);

      await counter.after(() => rmSync(root, { recursive: true }));
      await counter.until(async () => (await descriptions(served.client)).size === 0, "the deleted root's skills gone");
      await served.waitForStderr(/skills: gone; its skills are no longer served/);
      await counter.until(
        async () => (await skillList(served.client)).problems.some((p) => p.path === 'skills' && p.reason === 'root-unreadable'),
        'the missing root named',
      );

      // The old watches were on the deleted folder: only a new watch sees the new one.
      await counter.after(() => {
        mkdirSync(root);
        writeSkill(root, 'again', 'In the root made again.');
      });
      await counter.until(async () => (await descriptions(served.client)).has('again'), 'the skill of the root made again');
      await served.waitForStderr(/skills: appeared; its skills are served/);
      const staging = tempDir('staging');
      writeSkill(staging, 'later', 'Moved into the root made again.');
      await counter.after(() => renameSync(join(staging, 'later'), join(root, 'later')));
      expect([...(await descriptions(served.client)).keys()].sort()).toEqual(['again', 'later']);
    } finally {
      await served.close();
    }
  });

  test('replaced by another folder of the same name (a rename over it): the new folder is watched', async () => {
    const base = tempDir('replaced-root');
    const root = join(base, 'skills');
    mkdirSync(root);
    writeSkill(root, 'old', 'In the folder that gets replaced.');
    const served = await serve({ ...DEBUG, SKILLS_DIR: root }, era);
    try {
      await served.waitForStderr(WATCHING);
      if (era.versionNegotiation) await served.client.listen({ resourcesListChanged: true, promptsListChanged: true });
      const counter = new ChangeCounter(served.client);
      const next = join(base, 'next');
      mkdirSync(next);
      writeSkill(next, 'new', "In the folder that took the root's place.");
      await counter.after(() => {
        renameSync(root, join(base, 'retired'));
        renameSync(next, root);
      });
      await counter.until(async () => [...(await descriptions(served.client)).keys()].join() === 'new', "the new folder's skills, alone");
      // Changes inside the new folder are seen (its own watch, not the retired folder's).
      await counter.after(() => writeSkill(root, 'new', 'Edited in the new folder.'));
      await counter.until(
        async () => (await descriptions(served.client)).get('new') === 'Edited in the new folder.',
        'an edit inside the new folder',
      );
    } finally {
      await served.close();
    }
  });
});

describe.each(ERAS)('changes to what skill_list reports as problems, $name', (era) => {
  const start = async (): Promise<{
    root: string;
    served: Served;
    counter: ChangeCounter;
    problemsOf: (name: string) => Promise<ProblemEntry[]>;
  }> => {
    const root = tempDir('problems');
    writeSkill(root, 'good', 'A valid skill.');
    mkdirSync(join(root, 'broken'));
    writeFileSync(join(root, 'broken', 'SKILL.md'), '---\nname: broken\ndescription: "unterminated\n---\n');
    const served = await serve({ ...DEBUG, SKILLS_DIR: root }, era);
    await served.waitForStderr(WATCHING);
    if (era.versionNegotiation) await served.client.listen({ resourcesListChanged: true, promptsListChanged: true });
    const counter = new ChangeCounter(served.client);
    // Problem paths start with the root's folder name.
    const problemsOf = async (name: string) => (await skillList(served.client)).problems.filter((p) => p.path.split('/').includes(name));
    return { root, served, counter, problemsOf };
  };

  test('a change to the problems alone is announced: a folder that is not a valid skill appears, a broken SKILL.md breaks differently', async () => {
    const { root, served, counter, problemsOf } = await start();
    try {
      const before = await problemsOf('broken');
      expect(before).toEqual([expect.objectContaining({ reason: 'malformed-frontmatter' })]);

      // No skill is added, removed or changed: only a problem comes.
      const staging = tempDir('staging');
      mkdirSync(join(staging, 'also-broken'));
      writeFileSync(join(staging, 'also-broken', 'SKILL.md'), 'no frontmatter at all\n');
      await counter.after(() => renameSync(join(staging, 'also-broken'), join(root, 'also-broken')));
      expect(await problemsOf('also-broken')).toEqual([expect.objectContaining({ reason: 'malformed-frontmatter' })]);

      // Broken the other way: only the problem's detail changes.
      await counter.after(() => writeFileSync(join(root, 'broken', 'SKILL.md'), '---\nname: [unclosed\n---\n'));
      const after = await problemsOf('broken');
      expect(after).toEqual([expect.objectContaining({ reason: 'malformed-frontmatter' })]);
      expect(after[0]!.detail).not.toBe(before[0]!.detail);
      expect((await skillList(served.client)).skills.map((s) => s.name)).toEqual(['good']);
    } finally {
      await served.close();
    }
  });

  test('a skill whose SKILL.md breaks (it turns into a problem) is announced, and so is its mending', async () => {
    const { root, served, counter } = await start();
    try {
      await counter.after(() => writeFileSync(join(root, 'good', 'SKILL.md'), '---\nname: good\ndescription: [unclosed\n---\n'));
      let list = await skillList(served.client);
      expect(list.skills.map((s) => s.name)).toEqual([]);
      expect(list.problems).toContainEqual(
        expect.objectContaining({ path: expect.stringContaining('/good'), reason: 'malformed-frontmatter' }),
      );
      expect(((await rpc(served.client, 'prompts/list'))['prompts'] as unknown[]).length).toBe(0);
      await counter.after(() => writeSkill(root, 'good', 'A valid skill again.'));
      list = await skillList(served.client);
      expect(list.skills.map((s) => s.name)).toEqual(['good']);
      expect(list.problems.filter((p) => p.path.split('/').includes('good'))).toEqual([]);
      expect(((await rpc(served.client, 'prompts/list'))['prompts'] as { name: string }[]).map((p) => p.name)).toEqual(['good']);
    } finally {
      await served.close();
    }
  });
});
