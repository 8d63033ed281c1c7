/**
 * Declared egress (issue #11) at the levels without the bubblewrap sandbox: a root runner
 * (`uid-sandbox`: its own network namespace, no bridge) fails closed and its preview says the run
 * reaches none of its destinations; a runner as an ordinary uid (`same-uid`: no network namespace)
 * says honestly that nothing enforces the list, and its script reaches an undeclared place.
 *
 * Tier `uid`: each runner here is started with SKILL_MCP_BWRAP=off whatever the pass, so the level
 * it gets depends only on whether the test runs as root (the uid-sandbox test needs root); the
 * passes without bubblewrap would run the same thing again. Not `node`: no request goes through a
 * proxy here (neither level gives the run one).
 *
 * Network: only this machine's loopback (a test server on 127.0.0.1 that the test starts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probe, scripts, serveOnLoopback } from './egress-probe.js';
import type { Served } from './egress-probe.js';
import { isRoot, prepareAndRun, text, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';
import { startRunnerAs } from './runner-as.js';

describe('egress at the levels without the bubblewrap sandbox (SKILL_MCP_BWRAP=off)', () => {
  let server: Served;
  let skills: string;
  const runners: RunnerHandle[] = [];

  beforeAll(async () => {
    server = await serveOnLoopback('host');
    skills = writeSkills({ reach: { run: scripts, files: probe, egress: [`127.0.0.1:${server.port}`] } });
  });
  afterAll(async () => {
    for (const runner of runners) await runner.stop();
    server?.server.close();
  });

  async function runnerAs(uid: number | undefined): Promise<RunnerHandle> {
    const runner = await startRunnerAs(uid, { SKILLS_DIR: skills, SKILL_MCP_BWRAP: 'off' }, 'egress-off', 61);
    runners.push(runner);
    return runner;
  }

  it.skipIf(!isRoot)(
    'uid-sandbox (root, own network namespace, no bridge): fails closed — the preview says the run reaches none of its destinations, and it does not',
    async () => {
      const runner = await runnerAs(undefined);
      const { willRun, result } = await prepareAndRun(runner.client, 'reach', 'fetch.py', [`http://127.0.0.1:${server.port}/uid-sandbox`]);
      expect(willRun.isolation).toBe('uid-sandbox');
      expect(willRun.egress).toEqual([`127.0.0.1:${server.port}`]);
      expect(willRun.egressNote).toContain('reaches none of these destinations');
      expect(willRun.envNames.filter((n) => /proxy/i.test(n))).toEqual([]);
      // Its namespace's loopback is not even up: nothing is reachable at all.
      expect((JSON.parse(text(result.stdout)) as { error: string }).error).toMatch(/Network is unreachable|Connection refused/);
      expect(server.hits).not.toContain('/uid-sandbox');
    },
  );

  it('same-uid (no network namespace): the preview says honestly that nothing enforces the list — the script reaches undeclared places too', async () => {
    const runner = await runnerAs(isRoot ? 40211 : undefined);
    const { willRun, result } = await prepareAndRun(runner.client, 'reach', 'raw.py', [String(server.port)]);
    expect(willRun.isolation).toBe('same-uid');
    expect(willRun.egressNote).toContain('can reach any host, not only these');
    expect(text(result.stdout).trim()).toBe('connected');
  });
});
