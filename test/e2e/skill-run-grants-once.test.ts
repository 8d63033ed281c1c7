/**
 * Who may run what (docs/architecture.md §6), the hosted default: nothing is granted without
 * `MCP_SKILL_RUN`, and a grant without a reachable runner is RUNNER_UNAVAILABLE, while reads keep
 * working.
 *
 * Tier `front`: every answer here is decided by the front before any runner is reached (no runner
 * is started, no script runs), so it is the same at every isolation level and uid. The grant tests
 * that run a script are in skill-run-grants.test.ts (level).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ERAS, callTool, expectNoLeftovers, serve, skillList } from './harness.js';
import { refusal, writeRunSkills } from './run-skills.js';

let root: string;
beforeAll(() => {
  root = writeRunSkills();
});
afterAll(expectNoLeftovers);

describe.each(ERAS)('hosted default: nothing is granted, reads keep working, $name', (era) => {
  test('without MCP_SKILL_RUN every script is NOT_GRANTED (saying how to grant), listed as ungranted with a grantNote', async () => {
    const served = await serve({ MCP_SKILLS_PATH: root }, era);
    try {
      const list = await skillList(served.client);
      expect(list.grantNote).toContain('MCP_SKILL_RUN');
      const reporter = list.skills.find((s) => s.name === 'reporter')!;
      expect(reporter.runnable).toBe(false);
      expect(reporter.ungrantedScripts!.map((s) => s.script)).toEqual([
        'scripts/report.js',
        'scripts/other.js',
        'scripts/env.js',
        'scripts/sleep.js',
      ]);
      const { code, message } = refusal(
        await callTool(served.client, 'skill_run', { name: 'reporter', script: 'scripts/report.js', args: [] }),
      );
      expect(code).toBe('NOT_GRANTED');
      expect(message).toContain('MCP_SKILL_RUN');
      expect((await callTool(served.client, 'skill_load', { name: 'reporter' })).isError).toBe(false);
    } finally {
      await served.close();
    }
  });

  test.each<[string, Record<string, string>]>([
    ['no SKILL_MCP_RUNNER_SOCKET', {}],
    ['a socket nobody listens on', { SKILL_MCP_RUNNER_SOCKET: '/nonexistent/runner.sock' }],
  ])('granted, but %s: RUNNER_UNAVAILABLE with the reason, and reads keep working', async (_label, extra) => {
    const grant = JSON.stringify([{ skill: 'reporter', script: 'scripts/report.js' }]);
    const served = await serve({ MCP_SKILLS_PATH: root, MCP_SKILL_RUN: grant, ...extra }, era);
    try {
      const { code, message } = refusal(
        await callTool(served.client, 'skill_run', { name: 'reporter', script: 'scripts/report.js', args: [] }),
      );
      expect(code).toBe('RUNNER_UNAVAILABLE');
      expect(message).toMatch(extra['SKILL_MCP_RUNNER_SOCKET'] ? /cannot be reached/ : /SKILL_MCP_RUNNER_SOCKET/);
      const list = await skillList(served.client);
      expect(list.isolation.level).toBe('unavailable');
      expect(list.skills.find((s) => s.name === 'reporter')!.unavailableScripts).toMatchObject([{ script: 'scripts/report.js' }]);
      expect((await callTool(served.client, 'skill_file', { name: 'reporter', paths: ['scripts/report.js'] })).isError).toBe(false);
    } finally {
      await served.close();
    }
  });
});
