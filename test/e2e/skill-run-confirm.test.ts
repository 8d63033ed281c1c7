/**
 * skill_run's confirmation (docs/architecture.md §7) through the SDK's own Client over real stdio, in both eras,
 * against the standalone launcher (front + runner guard + runner): a client that can show a prompt
 * is asked, showing the exact run; one that cannot gets a preview and a one-time token. What ran
 * and what did not is proven from the runner's audit log, never from the front's word.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ERAS, callTool, expectNoLeftovers, serve, tempDir, type Era, type ServeOptions, type Served } from './harness.js';
import { askToken, audit, refusal, reported, runsStarted, writeRunSkills } from './run-skills.js';
import { BASE_ENV_NAMES } from '../levels.js';

let root: string;
beforeAll(() => {
  root = writeRunSkills();
});
afterAll(expectNoLeftovers);

/** A standalone server on the run skills with its own state dir (so its audit log is its own). */
async function start(
  era: Era,
  env: Record<string, string> = {},
  onElicit?: ServeOptions['onElicit'],
): Promise<{ served: Served; stateDir: string }> {
  const stateDir = join(tempDir('state'), 'state');
  const served = await serve({ SKILLS_DIR: root, SKILL_MCP_STATE_DIR: stateDir, ...env }, era, onElicit ? { onElicit } : {});
  return { served, stateDir };
}

describe.each(ERAS)('a client that can show a prompt (form elicitation), $name', (era) => {
  let served: Served;
  let stateDir: string;
  let answer: 'accept' | 'decline' | 'cancel' = 'accept';
  const asked: string[] = [];

  beforeAll(async () => {
    ({ served, stateDir } = await start(era, {}, ({ message }) => {
      asked.push(message);
      return answer === 'accept' ? { action: 'accept', content: {} } : { action: answer };
    }));
  });
  afterAll(async () => {
    await served?.close();
  });

  test('accept runs the script exactly once and returns its exit code, output and timing', async () => {
    answer = 'accept';
    const before = runsStarted(stateDir);
    const result = await callTool(served.client, 'skill_run', {
      name: 'reporter',
      script: 'scripts/report.js',
      args: ['fail', 'two words', '--x=$HOME'],
    });
    expect(result.isError, result.text).toBe(false);
    expect(result.value).toMatchObject({
      status: 'completed',
      exitCode: 3,
      signal: null,
      stderr: 'report ran\n',
      truncated: false,
      timedOut: false,
    });
    expect(reported(result).args).toEqual(['fail', 'two words', '--x=$HOME']);
    expect(result.value['durationMs']).toBeTypeOf('number');
    expect(result.value['runId']).toBeTypeOf('string');
    expect(runsStarted(stateDir)).toBe(before + 1);
    expect(audit(stateDir).filter((l) => l.event === 'run.exit' && l.run_id === result.value['runId'])).toHaveLength(1);
  });

  test('the prompt shows the exact run: skill, interpreter, argv with the args as passed, cwd, timeout, variables', async () => {
    answer = 'accept';
    asked.length = 0;
    await callTool(served.client, 'skill_run', { name: 'reporter', script: 'scripts/report.js', args: ['a "quoted" arg', ''] });
    expect(asked).toHaveLength(1);
    const message = asked[0]!;
    expect(message).toContain('reporter/scripts/report.js');
    expect(message).toContain(`argv: ${JSON.stringify(['scripts/report.js', 'a "quoted" arg', ''])}`);
    // Names, not host paths: the interpreter by name, the cwd relative to its skill root.
    expect(message).toContain('interpreter: node\n');
    expect(message).toMatch(/cwd: a fresh workspace of this run \(the skill run-skills-\w+\/reporter is read-only in SKILL_DIR\)\n/);
    expect(message).toMatch(/isolation: \S+/);
    expect(message).toContain('timeout: 20 s');
    expect(message).toContain(`variables the script receives: ${BASE_ENV_NAMES.join(', ')}`);
  });

  test.each(['decline', 'cancel'] as const)('%s returns cancelled and nothing runs', async (action) => {
    answer = action;
    asked.length = 0;
    const before = audit(stateDir).length;
    const result = await callTool(served.client, 'skill_run', { name: 'reporter', script: 'scripts/report.js', args: [] });
    expect(result.isError, result.text).toBe(false);
    expect(result.value['status']).toBe('cancelled');
    expect(result.value).not.toHaveProperty('exitCode');
    expect(asked).toHaveLength(1);
    // The runner prepared a preview but accepted no run.
    expect(
      audit(stateDir)
        .slice(before)
        .map((l) => l.event),
    ).not.toContain('run.accept');
  });

  test('a refusal that needs no person comes before any prompt (undeclared script)', async () => {
    asked.length = 0;
    const result = await callTool(served.client, 'skill_run', { name: 'reporter', script: 'scripts/undeclared.js', args: [] });
    expect(refusal(result).code).toBe('NOT_DECLARED');
    expect(asked).toHaveLength(0);
  });
});

describe.each(ERAS)('MCP_CONFIRM_ELICITATION=off, $name', (era) => {
  test('a client that could show a prompt takes the token path and is never asked', async () => {
    const asked: string[] = [];
    const { served, stateDir } = await start(era, { MCP_CONFIRM_ELICITATION: 'off' }, ({ message }) => {
      asked.push(message);
      return { action: 'accept', content: {} };
    });
    try {
      const preview = await askToken(served.client, { name: 'reporter', script: 'scripts/report.js' });
      expect(preview.mode).toBe('ask-user');
      expect(runsStarted(stateDir)).toBe(0);
      const ran = await callTool(served.client, 'skill_run', {
        name: 'reporter',
        script: 'scripts/report.js',
        args: [],
        confirmToken: preview.confirmToken,
      });
      expect(ran.value['status'], ran.text).toBe('completed');
      expect(asked).toEqual([]);
    } finally {
      await served.close();
    }
  });
});

describe.each(ERAS)('a client without a prompt: the token path, $name', (era) => {
  let served: Served;
  let stateDir: string;
  const run = (args: Record<string, unknown>) => callTool(served.client, 'skill_run', { args: [], ...args });

  beforeAll(async () => {
    ({ served, stateDir } = await start(era));
  });
  afterAll(async () => {
    await served?.close();
  });

  test('phase 1 runs nothing and returns the preview a person approves, bound to a token', async () => {
    const before = runsStarted(stateDir);
    const preview = await askToken(served.client, { name: 'reporter', script: 'scripts/report.js', args: ['x', 'y z'] });
    expect(preview.mode).toBe('ask-user');
    expect(preview.instructions).toMatch(/approve/i);
    expect(preview.preview.willRun).toMatchObject({
      skill: 'reporter',
      argv: ['scripts/report.js', 'x', 'y z'],
      timeoutMs: 20_000,
      envNames: BASE_ENV_NAMES,
    });
    expect(preview.confirmToken.length).toBeGreaterThan(20);
    expect(preview.expiresAt).toBeDefined();
    expect(runsStarted(stateDir)).toBe(before);
  });

  test('phase 2 with the same arguments and the token runs it once; a replay is TOKEN_REUSED and runs nothing', async () => {
    const preview = await askToken(served.client, { name: 'reporter', script: 'scripts/report.js', args: ['once'] });
    const before = runsStarted(stateDir);
    const ran = await run({ name: 'reporter', script: 'scripts/report.js', args: ['once'], confirmToken: preview.confirmToken });
    expect(ran.value).toMatchObject({ status: 'completed', exitCode: 0 });
    expect(reported(ran).args).toEqual(['once']);
    const replay = await run({ name: 'reporter', script: 'scripts/report.js', args: ['once'], confirmToken: preview.confirmToken });
    expect(refusal(replay).code).toBe('TOKEN_REUSED');
    expect(runsStarted(stateDir)).toBe(before + 1);
  });

  test('changed args: DRAFT_CHANGED with a fresh preview of the new run and a fresh token that works', async () => {
    const preview = await askToken(served.client, { name: 'reporter', script: 'scripts/report.js', args: ['approved'] });
    const before = runsStarted(stateDir);
    const changed = await run({
      name: 'reporter',
      script: 'scripts/report.js',
      args: ['approved', '--and-more'],
      confirmToken: preview.confirmToken,
    });
    expect(changed.isError).toBe(true);
    expect(changed.value).toMatchObject({ status: 'draft-changed', error: { code: 'DRAFT_CHANGED' } });
    const fresh = changed.value as unknown as { preview: { willRun: { argv: string[] } }; confirmToken: string };
    expect(fresh.preview.willRun.argv).toEqual(['scripts/report.js', 'approved', '--and-more']);
    expect(fresh.confirmToken).not.toBe(preview.confirmToken);
    expect(runsStarted(stateDir)).toBe(before);
    const ran = await run({
      name: 'reporter',
      script: 'scripts/report.js',
      args: ['approved', '--and-more'],
      confirmToken: fresh.confirmToken,
    });
    expect(reported(ran).args).toEqual(['approved', '--and-more']);
  });

  test('changed script or skill: DRAFT_CHANGED with a fresh token for what would run now; nothing ran', async () => {
    const preview = await askToken(served.client, { name: 'reporter', script: 'scripts/report.js' });
    const before = runsStarted(stateDir);
    const otherScript = await run({ name: 'reporter', script: 'scripts/other.js', confirmToken: preview.confirmToken });
    expect(otherScript.value).toMatchObject({
      status: 'draft-changed',
      error: { code: 'DRAFT_CHANGED' },
      preview: { willRun: { skill: 'reporter', argv: ['scripts/other.js'] } },
    });
    expect(otherScript.value['confirmToken']).toBeTypeOf('string');
    const otherSkill = await run({ name: 'reporter-two', script: 'scripts/report.js', confirmToken: preview.confirmToken });
    expect(otherSkill.value).toMatchObject({
      status: 'draft-changed',
      error: { code: 'DRAFT_CHANGED' },
      preview: { willRun: { skill: 'reporter-two' } },
    });
    expect(runsStarted(stateDir)).toBe(before);
  });

  test('a token presented for an undeclared script is NOT_DECLARED (no fresh token for what can never run)', async () => {
    const preview = await askToken(served.client, { name: 'reporter', script: 'scripts/report.js' });
    const answer = await run({ name: 'reporter', script: 'scripts/undeclared.js', confirmToken: preview.confirmToken });
    expect(refusal(answer).code).toBe('NOT_DECLARED');
    expect(answer.value).not.toHaveProperty('confirmToken');
  });

  test('a forged token is TOKEN_INVALID: made up, or a real one with a flipped character', async () => {
    const before = runsStarted(stateDir);
    expect(refusal(await run({ name: 'reporter', script: 'scripts/report.js', confirmToken: 'made-up' })).code).toBe('TOKEN_INVALID');
    const real = (await askToken(served.client, { name: 'reporter', script: 'scripts/report.js' })).confirmToken;
    const at = Math.floor(real.length / 2);
    const flipped = `${real.slice(0, at)}${real[at] === 'A' ? 'B' : 'A'}${real.slice(at + 1)}`;
    expect(refusal(await run({ name: 'reporter', script: 'scripts/report.js', confirmToken: flipped })).code).toBe('TOKEN_INVALID');
    expect(runsStarted(stateDir)).toBe(before);
  });
});

describe.each(ERAS)('MCP_CONFIRM_MODE and MCP_CONFIRM_TTL_SECONDS, $name', (era) => {
  test('an expired token is TOKEN_EXPIRED and runs nothing (MCP_CONFIRM_TTL_SECONDS=1)', async () => {
    const { served, stateDir } = await start(era, { MCP_CONFIRM_TTL_SECONDS: '1' });
    try {
      const preview = await askToken(served.client, { name: 'reporter', script: 'scripts/report.js' });
      const expiresAt = typeof preview.expiresAt === 'number' ? preview.expiresAt : Date.parse(preview.expiresAt);
      expect(expiresAt - Date.now()).toBeLessThanOrEqual(1_000);
      // Expiry is a time, not an event: wait it out (just over one second).
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt - Date.now()) + 1_100));
      const late = await callTool(served.client, 'skill_run', {
        name: 'reporter',
        script: 'scripts/report.js',
        args: [],
        confirmToken: preview.confirmToken,
      });
      expect(refusal(late).code).toBe('TOKEN_EXPIRED');
      expect(runsStarted(stateDir)).toBe(0);
    } finally {
      await served.close();
    }
  });

  test.each(['refuse', 'yes-please'])(
    'MCP_CONFIRM_MODE=%s: CONFIRM_REFUSED before anything is prepared, saying what would make it work',
    async (mode) => {
      const { served, stateDir } = await start(era, { MCP_CONFIRM_MODE: mode });
      try {
        const answer = await callTool(served.client, 'skill_run', { name: 'reporter', script: 'scripts/report.js', args: [] });
        const { code, message } = refusal(answer);
        expect(code).toBe('CONFIRM_REFUSED');
        expect(message).toMatch(/elicitation/);
        expect(answer.value).not.toHaveProperty('confirmToken');
        expect(audit(stateDir).filter((l) => l.event.startsWith('run.'))).toEqual([]);
      } finally {
        await served.close();
      }
    },
  );

  test('MCP_CONFIRM_MODE=auto: a token the model may use itself (different instructions), still one run per token', async () => {
    const { served, stateDir } = await start(era, { MCP_CONFIRM_MODE: 'auto' });
    try {
      const preview = await askToken(served.client, { name: 'reporter', script: 'scripts/report.js' });
      expect(preview.mode).toBe('auto');
      expect(preview.instructions).not.toMatch(/approve/i);
      expect(runsStarted(stateDir)).toBe(0);
      const args = { name: 'reporter', script: 'scripts/report.js', args: [], confirmToken: preview.confirmToken };
      expect((await callTool(served.client, 'skill_run', args)).value['status']).toBe('completed');
      expect(refusal(await callTool(served.client, 'skill_run', args)).code).toBe('TOKEN_REUSED');
    } finally {
      await served.close();
    }
  });
});
