/**
 * The runner guard is a Node process, and booting it beside the front slowed the front's first
 * answer (a second Node on 2 cores). Until the runner is first needed, or until the front's start
 * is well past (2 s), a shell holds its place: spawned at start (before a root front drops root,
 * with the launcher's whole environment), it turns into the guard in place (same pid). Either way
 * nothing outlives the front, and a root-started guard is still root.
 */
import { expectedLevel } from '../levels.js';
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { ERAS, expectNoLeftovers, FRONT_UID, processesNaming, rpc, serve, skillList, SUITE_TMP } from './harness.js';
import { childrenOf, cmdline } from './run-skills.js';

const isRoot = process.getuid?.() === 0;
afterAll(expectNoLeftovers);

function uid(pid: number): number {
  return Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
}

function exe(pid: number): string {
  return readlinkSync(`/proc/${pid}/exe`);
}

/** The launcher's private socket folders in this file's temp tree. */
function privateFolders(): string[] {
  return readdirSync(SUITE_TMP).filter((name) => /^skill-mcp-[A-Za-z0-9]{6}$/.test(name));
}

async function until(check: () => boolean, what: string, withinMs = 5_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

// The shell is /bin/sh; without one the guard is spawned at once (and this describes nothing).
describe.skipIf(!existsSync('/bin/sh'))('the runner guard starts on first need', () => {
  test('answering skills/list starts no second Node: the front has one child, a shell, until a tool needs the runner', async () => {
    // The guard would boot on its own 2 s after the start; here it waits for need alone
    // (SKILL_MCP_GUARD_BOOT_MS), so what is seen does not depend on how busy the machine is.
    const served = await serve({ SKILL_MCP_GUARD_BOOT_MS: '3600000' }, ERAS[0]!);
    await rpc(served.client, 'skills/list');
    await rpc(served.client, 'resources/read', { uri: 'skill://commit-message/SKILL.md' });
    const children = childrenOf(served.pid);
    expect(children).toHaveLength(1);
    expect(exe(children[0]!)).not.toBe(exe(served.pid));
    expect(cmdline(children[0]!)).toMatch(/^\/bin\/sh -c /);
    expect(childrenOf(children[0]!)).toEqual([]);
    try {
      const [holder] = childrenOf(served.pid) as [number];

      const list = await skillList(served.client);
      // The same pid is now the guard (a Node), with the runner under it.
      expect(childrenOf(served.pid)).toEqual([holder]);
      expect(exe(holder)).toBe(exe(served.pid));
      expect(cmdline(holder)).toMatch(/ runner-guard /);
      const runner = childrenOf(holder).find((pid) => / runner --socket /.test(cmdline(pid)));
      expect(runner).toBeDefined();
      expect(list.isolation.level).toBe(expectedLevel(isRoot));
      if (isRoot) {
        // Security: the guard was spawned before the drop and kept root; the front did not.
        expect([uid(served.pid), uid(holder), uid(runner!)]).toEqual([FRONT_UID, 0, 0]);
      }
    } finally {
      await served.close();
    }
  });

  test('left idle, the guard boots ahead of need (same pid, now a Node, no runner yet), as root still root', async () => {
    // Soon after the start (SKILL_MCP_GUARD_BOOT_MS; 2 s by default), and waited for as long as a busy machine needs.
    const served = await serve({ SKILL_MCP_GUARD_BOOT_MS: '200' }, ERAS[1]!);
    try {
      await rpc(served.client, 'skills/list');
      const [holder] = childrenOf(served.pid) as [number];
      await until(() => exe(holder) === exe(served.pid) && cmdline(holder).includes(' runner-guard '), 'the guard to boot', 30_000);
      expect(childrenOf(served.pid)).toEqual([holder]);
      expect(childrenOf(holder)).toEqual([]);
      if (isRoot) expect(uid(holder)).toBe(0);
      expect((await skillList(served.client)).isolation.level).toBe(expectedLevel(isRoot));
    } finally {
      await served.close();
    }
  });

  test.each(ERAS)('a front killed before its runner was needed leaves no process and no private folder behind ($name)', async (era) => {
    const before = new Set(privateFolders());
    const served = await serve({}, era);
    await rpc(served.client, 'skills/list');
    const [holder] = childrenOf(served.pid);
    const mine = privateFolders().filter((name) => !before.has(name));
    expect(mine).toHaveLength(1);
    expect(holder).toBeDefined();
    process.kill(served.pid, 'SIGKILL');
    await until(
      () => !existsSync(`/proc/${holder}`) || /^State:\s+Z/m.test(readFileSync(`/proc/${holder}/status`, 'utf8')),
      'the holder to exit',
    );
    await until(() => !existsSync(join(SUITE_TMP, mine[0]!)), 'the private folder to go');
    expect(processesNaming(mine[0]!)).toEqual([]);
    await served.close();
  });
});
