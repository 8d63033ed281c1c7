/**
 * The hosted pair, through the real front and the real runner. A runner started without the
 * front's `MCP_SKILLS_PATH` and `MCP_SKILL_RUN` (the recipe as the README used to give it) served
 * the package's bundled skills in standalone mode: a person approved the front's `commit-message`
 * and the runner ran the *bundled* one. Now the front's hello carries its view and the runner
 * refuses prepare and run `CONFIG_MISMATCH`, saying what differs and what to do; with the same
 * variables (the recipe as it is now, plus an operator's front secret) the front's copy runs.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { randomBytes } from 'node:crypto';
import { startRunner, type RunnerHandle } from '../runner/harness.js';
import {
  baseEnv,
  BUNDLED_SKILLS,
  callTool,
  ERAS,
  expectNoLeftovers,
  hostedRunnerArgs,
  REPO,
  serve,
  skillList,
  tempDir,
  type Served,
} from './harness.js';
import { audit, askToken, refusal } from './run-skills.js';

const FRONT_COPY = 'the front copy of check-message.js ran';
const GRANT = JSON.stringify([{ skill: 'commit-message', script: 'scripts/check-message.js' }]);
let root: string;

/** A skill with the bundled skill's name and script path, whose script says which copy ran. */
function writeLookalike(): string {
  const dir = tempDir('hosted-skills');
  mkdirSync(join(dir, 'commit-message', 'scripts'), { recursive: true, mode: 0o755 });
  writeFileSync(
    join(dir, 'commit-message', 'SKILL.md'),
    "---\nname: commit-message\ndescription: The operator's own commit-message skill.\nmcp-host:\n  version: 1\n  run:\n    - script: scripts/check-message.js\n      interpreter: node\n      timeout: 10\n---\nCheck a message.\n",
    { mode: 0o644 },
  );
  writeFileSync(join(dir, 'commit-message', 'scripts', 'check-message.js'), `process.stdout.write(${JSON.stringify(FRONT_COPY)});\n`, {
    mode: 0o644,
  });
  return dir;
}

beforeAll(() => {
  root = writeLookalike();
});
afterAll(expectNoLeftovers);

describe("runner started without the front's MCP_SKILLS_PATH and MCP_SKILL_RUN (the old recipe)", () => {
  let runner: RunnerHandle;
  let served: Served;
  beforeAll(async () => {
    runner = await startRunner({ env: baseEnv(), base: tempDir('runner'), args: hostedRunnerArgs() });
    served = await serve({ MCP_SKILLS_PATH: root, MCP_SKILL_RUN: GRANT, SKILL_MCP_RUNNER_SOCKET: runner.socketPath }, ERAS[0]!);
  });
  afterAll(async () => {
    await served?.close();
    await runner?.stop();
  });

  test('skill_run is refused CONFIG_MISMATCH naming what differs and what to do, with no host path; nothing is prepared or run', async () => {
    const answer = await callTool(served.client, 'skill_run', {
      name: 'commit-message',
      script: 'scripts/check-message.js',
      args: ['feat: x'],
    });
    const { code, message } = refusal(answer);
    expect(code).toBe('CONFIG_MISMATCH');
    expect(message).toMatch(/skill folders/);
    expect(message).toMatch(/hosted or standalone/);
    expect(message).toMatch(/MCP_SKILL_RUN/);
    expect(message).toMatch(/same MCP_SKILLS_PATH/);
    for (const path of [root, REPO, BUNDLED_SKILLS, runner.socketPath]) expect(answer.text).not.toContain(path);
    expect(audit(runner.stateDir).filter((l) => l.event === 'run.prepare' || l.event === 'run.accept')).toEqual([]);
    // The operator's side names the runner's own folders.
    expect(runner.stderr()).toMatch(/configuration differs from this runner's \(roots, mode, grant\)/);
  });

  test('skill_list shows it: a config-mismatch problem, the runner section says what differs, the script is unavailable with why', async () => {
    const list = await skillList(served.client);
    expect(list.problems).toContainEqual({
      path: 'runner',
      reason: 'config-mismatch',
      detail: expect.stringMatching(/same MCP_SKILLS_PATH/),
    });
    expect((list.isolation as { configMismatch?: { differs: string[] } }).configMismatch?.differs).toEqual(['roots', 'mode', 'grant']);
    const skill = list.skills.find((s) => s.name === 'commit-message')!;
    expect(skill.runnable).toBe(false);
    expect(skill.unavailableScripts).toEqual([
      { script: 'scripts/check-message.js', interpreter: 'node', why: expect.stringMatching(/CONFIG_MISMATCH|another configuration/) },
    ]);
    expect(JSON.stringify(list)).not.toContain(BUNDLED_SKILLS);
  });
});

describe('the recipe as documented: the runner gets the same MCP_SKILLS_PATH and MCP_SKILL_RUN, and both a front secret file', () => {
  let runner: RunnerHandle;
  let served: Served;
  beforeAll(async () => {
    const secretFile = join(tempDir('secret'), 'front.secret');
    writeFileSync(secretFile, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
    const shared = { MCP_SKILLS_PATH: root, MCP_SKILL_RUN: GRANT, SKILL_MCP_FRONT_SECRET_FILE: secretFile };
    runner = await startRunner({ env: { ...baseEnv(), ...shared }, base: tempDir('runner'), args: hostedRunnerArgs() });
    served = await serve({ ...shared, SKILL_MCP_RUNNER_SOCKET: runner.socketPath }, ERAS[0]!);
  });
  afterAll(async () => {
    await served?.close();
    await runner?.stop();
  });

  test('the approved copy is the one that runs', async () => {
    const list = await skillList(served.client);
    expect(list.problems.filter((p) => p.reason === 'config-mismatch')).toEqual([]);
    const preview = await askToken(served.client, { name: 'commit-message', script: 'scripts/check-message.js', args: ['feat: x'] });
    const ran = await callTool(served.client, 'skill_run', {
      name: 'commit-message',
      script: 'scripts/check-message.js',
      args: ['feat: x'],
      confirmToken: preview.confirmToken,
    });
    expect(ran.isError, ran.text).toBe(false);
    expect(ran.value['stdout']).toBe(FRONT_COPY);
  });
});
