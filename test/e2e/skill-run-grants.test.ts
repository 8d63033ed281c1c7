/**
 * Who may run what (docs/architecture.md §6) as a client sees it, where a script really runs:
 * `MCP_SKILL_RUN` only narrows; standalone takes the declaration and warns. And the preview's
 * `envNames` are exactly the variables the script really received.
 *
 * Tier `level`: these tests run a script and compare the environment it received with the preview's
 * `envNames`, which differ with bubblewrap (PWD; `BASE_ENV_NAMES` branches on it), and the runner
 * hands the environment to the script by a different path with and without bubblewrap. The hosted
 * refusals decided before any runner is reached are in skill-run-grants-once.test.ts (front).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startRunner, type RunnerHandle } from '../runner/harness.js';
import { ERAS, baseEnv, callTool, expectNoLeftovers, hostedRunnerArgs, serve, skillList, tempDir, type Served } from './harness.js';
import { SET_VALUE, SET_VAR, UNSET_VAR, askToken, refusal, reported, runsStarted, writeRunSkills } from './run-skills.js';
import { BASE_ENV_NAMES } from '../levels.js';

let root: string;
beforeAll(() => {
  root = writeRunSkills();
});
afterAll(expectNoLeftovers);

const NOT_ASKED = 'E2E_NOT_ASKED_FOR';

/** Phase 1 then phase 2 of the token path; returns the preview and the completed run. */
async function runWithToken(client: Served['client'], name: string, script: string) {
  const preview = await askToken(client, { name, script });
  const ran = await callTool(client, 'skill_run', { name, script, args: [], confirmToken: preview.confirmToken });
  return { willRun: preview.preview.willRun, ran };
}

describe('hosted with its own runner (started on its own) and MCP_SKILL_RUN narrowing', () => {
  // The grant is the owner's: one of four declared scripts, plus a variable it never asked for.
  const grant = JSON.stringify([{ skill: 'reporter', script: 'scripts/env.js', env: [SET_VAR, NOT_ASKED] }]);
  let runner: RunnerHandle;
  let served: Served;

  beforeAll(async () => {
    const hostEnv = { MCP_SKILLS_PATH: root, MCP_SKILL_RUN: grant, [SET_VAR]: SET_VALUE, [NOT_ASKED]: 'must-not-reach-the-script' };
    runner = await startRunner({ env: { ...baseEnv(), ...hostEnv }, base: tempDir('runner'), args: hostedRunnerArgs() });
    served = await serve({ MCP_SKILLS_PATH: root, MCP_SKILL_RUN: grant, SKILL_MCP_RUNNER_SOCKET: runner.socketPath }, ERAS[0]!);
  });
  afterAll(async () => {
    await served?.close();
    await runner?.stop();
  });

  test('only the granted script is runnable; the other declared scripts are listed as ungranted', async () => {
    const list = await skillList(served.client);
    expect(list.grantFrom).toBe('MCP_SKILL_RUN');
    expect(list.isolation.level).not.toBe('unavailable');
    const reporter = list.skills.find((s) => s.name === 'reporter')!;
    expect(reporter.scripts.map((s) => s.script)).toEqual(['scripts/env.js']);
    expect(reporter.ungrantedScripts!.map((s) => s.script)).toEqual(['scripts/report.js', 'scripts/other.js', 'scripts/sleep.js']);
    expect(refusal(await callTool(served.client, 'skill_run', { name: 'reporter', script: 'scripts/report.js', args: [] })).code).toBe(
      'NOT_GRANTED',
    );
  });

  test('a grant row naming a variable the script did not ask for is a grant problem, and the variable is not given', async () => {
    const list = await skillList(served.client);
    expect(list.problems.filter((p) => p.path === 'MCP_SKILL_RUN/reporter/scripts/env.js')).toMatchObject([
      { reason: 'grant', detail: expect.stringContaining(NOT_ASKED) },
    ]);
    const before = runsStarted(runner.stateDir);
    const { willRun, ran } = await runWithToken(served.client, 'reporter', 'scripts/env.js');
    const received = reported(ran).env;
    expect(received).not.toContain(NOT_ASKED);
    // Asked for but not granted by the owner: not given either, and not "not set".
    expect(received).not.toContain(UNSET_VAR);
    expect(received).toContain(SET_VAR);
    expect(received).toEqual(willRun.envNames);
    expect(willRun.envWarning).toBeUndefined();
    expect(ran.text).not.toContain('must-not-reach-the-script');
    expect(runsStarted(runner.stateDir)).toBe(before + 1);
  });
});

describe('standalone self-grant: envNames are what the script really gets', () => {
  let served: Served;

  beforeAll(async () => {
    served = await serve({ SKILLS_DIR: root, [SET_VAR]: SET_VALUE, SKILL_MCP_STATE_DIR: join(tempDir('state'), 'state') }, ERAS[0]!);
  });
  afterAll(async () => {
    await served?.close();
  });

  test('a declared variable set in the server env is passed and named in envWarning; an unset one is only in envNotSet', async () => {
    const { willRun, ran } = await runWithToken(served.client, 'reporter', 'scripts/env.js');
    expect(willRun.envNames).toEqual([SET_VAR, ...BASE_ENV_NAMES].sort());
    expect(willRun.envNotSet).toEqual([UNSET_VAR]);
    expect(willRun.envWarning).toContain(SET_VAR);
    expect(willRun.envWarning).not.toContain(UNSET_VAR);
    expect(reported(ran).env).toEqual(willRun.envNames);
    // Names only, anywhere the model looks.
    expect(JSON.stringify(willRun)).not.toContain(SET_VALUE);
    const listed = (await skillList(served.client)).skills
      .find((s) => s.name === 'reporter')!
      .scripts.find((s) => s.script === 'scripts/env.js')!;
    expect(listed).toMatchObject({ envNames: willRun.envNames, envNotSet: [UNSET_VAR], envWarning: willRun.envWarning });
  });

  test('a script that asks for nothing gets only the allowlist, none of the server environment', async () => {
    const { willRun, ran } = await runWithToken(served.client, 'reporter', 'scripts/report.js');
    expect(reported(ran).env).toEqual(willRun.envNames);
    expect(willRun.envNames).toEqual(BASE_ENV_NAMES);
  });
});
