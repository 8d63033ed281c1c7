/**
 * The catalog follows its folders while a stdio server runs, in both protocol eras: changes are
 * announced (`notifications/resources/list_changed` and `.../prompts/list_changed`; in the
 * 2026-07-28 era on the client's `subscriptions/listen` stream), listings and digests follow the
 * disk, and cursors never cut a page from a list that changed. `SKILL_MCP_WATCH=off` and the
 * polling fallback do what they say.
 */
import { mkdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { ERAS, expectNoLeftovers, rpc, rpcErrorCode, serve, tempDir } from './harness.js';
import { ChangeCounter, defineLiveScenario, writeSkill } from './live-scenario.js';

afterAll(expectNoLeftovers);

// An internal note (SKILL_MCP_LOG_LEVEL=debug): the watch is set up.
const WATCHING = /debug: watching the skill folders for changes/;
const DEBUG = { SKILL_MCP_LOG_LEVEL: 'debug' };

for (const era of ERAS) {
  defineLiveScenario(
    `a live catalog over stdio, ${era.name}`,
    () => tempDir('live'),
    async (root) => {
      const served = await serve({ ...DEBUG, SKILLS_DIR: root, SKILL_MCP_PAGE_SIZE: '3' }, era);
      await served.waitForStderr(WATCHING);
      if (era.versionNegotiation) {
        const subscription = await served.client.listen({ resourcesListChanged: true, promptsListChanged: true });
        expect(subscription.honoredFilter).toEqual({ resourcesListChanged: true, promptsListChanged: true });
      }
      return { client: served.client, close: () => served.close() };
    },
  );
}

describe.each(ERAS)('cursors and settings of a live catalog, $name', (era) => {
  test('a skills/list or prompts/list cursor taken before skills were added is refused with -32602 ("list again"); after an edit of contents it stays valid', async () => {
    const root = tempDir('cursor');
    for (const name of ['a-one', 'b-two', 'c-three', 'd-four']) writeSkill(root, name, `Skill ${name}.`);
    const served = await serve({ ...DEBUG, SKILLS_DIR: root, SKILL_MCP_PAGE_SIZE: '2' }, era);
    try {
      await served.waitForStderr(WATCHING);
      if (era.versionNegotiation) await served.client.listen({ resourcesListChanged: true, promptsListChanged: true });
      const counter = new ChangeCounter(served.client);
      const first = await rpc(served.client, 'skills/list');
      const prompts = await rpc(served.client, 'prompts/list');
      await counter.after(() => writeSkill(root, 'b-two', 'Skill b-two, edited.'));
      // The same names: the cursor still cuts the same list.
      const second = await rpc(served.client, 'skills/list', { cursor: first['nextCursor'] });
      expect((second['skills'] as { uri: string }[]).map((s) => s.uri)).toEqual(['skill://c-three/SKILL.md', 'skill://d-four/SKILL.md']);
      const staging = tempDir('staging');
      writeSkill(staging, '0-new', 'Skill 0-new.');
      await counter.after(() => renameSync(join(staging, '0-new'), join(root, '0-new')));
      expect(await rpcErrorCode(rpc(served.client, 'skills/list', { cursor: first['nextCursor'] }))).toBe(-32602);
      await expect(rpc(served.client, 'skills/list', { cursor: first['nextCursor'] })).rejects.toThrow(/catalog changed/);
      expect(await rpcErrorCode(rpc(served.client, 'prompts/list', { cursor: prompts['nextCursor'] }))).toBe(-32602);
      expect(((await rpc(served.client, 'skills/list'))['skills'] as { uri: string }[])[0]!.uri).toBe('skill://0-new/SKILL.md');
    } finally {
      await served.close();
    }
  });

  test('SKILL_MCP_WATCH=off: scanned once, stderr says so, listChanged is not advertised', async () => {
    const root = tempDir('off');
    writeSkill(root, 'only', 'The only skill.');
    const served = await serve({ ...DEBUG, SKILLS_DIR: root, SKILL_MCP_WATCH: 'off' }, era);
    try {
      await served.waitForStderr(/SKILL_MCP_WATCH=off: the skill folders were scanned once/);
      const capabilities = served.client.getServerCapabilities();
      expect(capabilities?.resources?.listChanged).toBe(false);
      expect(capabilities?.prompts?.listChanged).toBe(false);
      expect(served.stderr()).not.toMatch(WATCHING);
    } finally {
      await served.close();
    }
  });

  test('SKILL_MCP_WATCH=poll rescans every SKILL_MCP_WATCH_POLL_SECONDS (stated on stderr) and announces what changed', async () => {
    const root = tempDir('poll');
    writeSkill(root, 'first', 'The first skill.');
    const served = await serve({ SKILLS_DIR: root, SKILL_MCP_WATCH: 'poll', SKILL_MCP_WATCH_POLL_SECONDS: '1' }, era);
    try {
      await served.waitForStderr(/SKILL_MCP_WATCH=poll; rescanning it every 1 s/);
      if (era.versionNegotiation) await served.client.listen({ resourcesListChanged: true, promptsListChanged: true });
      const counter = new ChangeCounter(served.client);
      mkdirSync(join(root, 'second'));
      await counter.after(() => writeSkill(root, 'second', 'The second skill.'));
      expect(((await rpc(served.client, 'skills/list'))['skills'] as { uri: string }[]).map((s) => s.uri)).toEqual([
        'skill://first/SKILL.md',
        'skill://second/SKILL.md',
      ]);
    } finally {
      await served.close();
    }
  });
});
