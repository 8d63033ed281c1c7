/**
 * The two processes read one configuration (shared/settings.ts) and so agree on it: a value that
 * stops the runner stops the front too, at start and with the same message — never a front that
 * carries on while its runner exits and `skill_run` fails RUNNER_UNAVAILABLE 15 s later. What they
 * carry on without (a tuning value, an unreadable grant, a missing skill folder) both say on stderr
 * at start, where operators look, and a grant that failed to parse is named in every NOT_GRANTED.
 */
import { DEFAULT_CATALOG_LIMITS } from '../../shared/limits.js';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, describe, expect, test, vi } from 'vitest';
import { startRunner } from '../runner/harness.js';
import {
  baseEnv,
  callTool,
  ERAS,
  expectNoLeftovers,
  hostedRunnerArgs,
  processesNaming,
  serve,
  SERVER_JS,
  skillList,
  tempDir,
} from './harness.js';
import { writeRunSkills } from './run-skills.js';

afterAll(async () => {
  await expectNoLeftovers();
});

/** The standalone bin under the SDK's Client over stdio: whether the handshake succeeded, and all it wrote on stderr. */
async function connectStandalone(env: Record<string, string>): Promise<{ connected: boolean; stderr: string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [SERVER_JS],
    env: { ...baseEnv(), ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  const ended = new Promise<void>((resolve) => {
    transport.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    transport.stderr!.once('end', resolve);
  });
  const client = new Client({ name: 'config-agreement', version: '0.0.0' });
  let connected = true;
  try {
    await client.connect(transport);
  } catch {
    connected = false;
  }
  await client.close().catch(() => undefined);
  await ended;
  return { connected, stderr };
}

/** `skill-mcp runner` on its own with `env` (the hosted recipe), when it exits at start. */
function runnerRefusal(env: Record<string, string>): { status: number | null; stderr: string } {
  const base = tempDir('runner');
  const r = spawnSync(
    process.execPath,
    [SERVER_JS, 'runner', '--socket', join(base, 'sock', 'runner.sock'), '--state-dir', join(base, 'state'), ...hostedRunnerArgs()],
    {
      env: { ...baseEnv(), ...env },
      encoding: 'utf8',
      timeout: 30_000,
    },
  );
  return { status: r.status, stderr: r.stderr };
}

describe('a value that stops one process stops both, with the same message', () => {
  test.each([
    [
      'MCP_CONFIRM_TTL_SECONDS',
      'abc',
      /MCP_CONFIRM_TTL_SECONDS="abc" is not a whole number of seconds from 1 to 604800 \(default 600\); skill-mcp does not start with it/,
    ],
    ['MCP_CONFIRM_TTL_SECONDS', '60s', /MCP_CONFIRM_TTL_SECONDS="60s" is not a whole number of seconds/],
    ['MCP_CONFIRM_SECRET', 'too-short-to-be-a-key', /MCP_CONFIRM_SECRET \(a value of 21 characters\) is not at least 32 characters/],
  ])(
    '%s=%s: the standalone front refuses the handshake and starts no runner; the runner alone exits; both say why',
    async (name, value, message) => {
      const stateDir = join(tempDir('state'), 'state');
      const front = await connectStandalone({ [name]: value, SKILL_MCP_STATE_DIR: stateDir });
      expect(front.connected).toBe(false);
      expect(front.stderr).toMatch(message);
      // Refused before its runner guard was started: nothing of this front is left to reach.
      expect(processesNaming(stateDir)).toEqual([]);

      const runner = runnerRefusal({ [name]: value });
      expect(runner.status).toBe(1);
      expect(runner.stderr).toMatch(message);
      const line = (text: string): string | undefined => text.split('\n').find((l) => message.test(l));
      expect(line(runner.stderr)).toBe(line(front.stderr));
      if (name === 'MCP_CONFIRM_SECRET') expect(front.stderr + runner.stderr).not.toContain(value);
    },
  );

  test('a runner-only value (SKILL_MCP_RUN_NPROC=lots) stops the standalone launcher before it starts a runner that would exit', async () => {
    const front = await connectStandalone({ SKILL_MCP_RUN_NPROC: 'lots' });
    expect(front.connected).toBe(false);
    expect(front.stderr).toContain('SKILL_MCP_RUN_NPROC="lots" is not an integer from 8 to 4096');
    expect(runnerRefusal({ SKILL_MCP_RUN_NPROC: 'lots' })).toMatchObject({
      status: 1,
      stderr: expect.stringContaining('SKILL_MCP_RUN_NPROC="lots" is not an integer from 8 to 4096'),
    });
  });
});

describe('what both carry on without, both say on stderr at start', () => {
  test('a tuning value (SKILL_MCP_MAX_SKILLS=lots): front and its runner both report the default they use, and runs work', async () => {
    const root = writeRunSkills();
    const served = await serve({ SKILLS_DIR: root, SKILL_MCP_MAX_SKILLS: 'lots', MCP_CONFIRM_MODE: 'auto' }, ERAS[0]!);
    try {
      const said = `SKILL_MCP_MAX_SKILLS="lots" is not a positive integer; using ${DEFAULT_CATALOG_LIMITS.maxSkills}`;
      await vi.waitFor(() => expect(served.stderr()).toContain(`skill-mcp: ${said}`), { timeout: 10_000 });
      const list = await skillList(served.client); // wakes the runner
      expect(list.problems).toContainEqual({ path: 'configuration', reason: 'config', detail: said });
      await vi.waitFor(() => expect(served.stderr()).toContain(`skill-mcp runner: ${said}`), { timeout: 20_000 });
      const preview = await callTool(served.client, 'skill_run', { name: 'reporter', script: 'scripts/report.js', args: [] });
      expect(preview.isError).toBe(false);
    } finally {
      await served.close();
    }
  });

  test('a missing skill folder and a file as a skill folder are on stderr at start, from the front and from the runner', async () => {
    const dir = tempDir('roots');
    const missing = join(dir, 'no-such-folder');
    const file = join(dir, 'a-file');
    writeFileSync(file, 'not a folder\n');
    const roots = `${missing}:${file}`;
    const served = await serve({ SKILLS_DIR: roots }, ERAS[0]!);
    try {
      await vi.waitFor(
        () => {
          expect(served.stderr()).toContain(
            `skill-mcp: SKILLS_DIR: the skill folder ${missing} does not exist; no skill is served from it`,
          );
          expect(served.stderr()).toContain(
            `skill-mcp: SKILLS_DIR: the skill folder ${file} is a file, not a folder: SKILLS_DIR names a folder of skills, or one skill's folder (the one holding SKILL.md); no skill is served from it`,
          );
        },
        { timeout: 10_000 },
      );
    } finally {
      await served.close();
    }
    const runner = await startRunner({ env: { ...baseEnv(), SKILLS_DIR: roots }, base: tempDir('runner'), args: hostedRunnerArgs() });
    try {
      expect(runner.stderr()).toContain(
        `skill-mcp runner: SKILLS_DIR: the skill folder ${missing} does not exist; no skill is served from it`,
      );
    } finally {
      await runner.stop();
    }
  });
});

describe('an MCP_SKILL_RUN that is not JSON grants nothing, and says so', () => {
  const bad = '[{"skill":"reporter","script":"scripts/report.js"'; // cut off: not JSON

  test('on stderr at start; skill_list says why; skill_run is NOT_GRANTED because the grant failed to parse', async () => {
    const root = writeRunSkills();
    const served = await serve({ SKILLS_DIR: root, MCP_SKILL_RUN: bad }, ERAS[0]!);
    try {
      await vi.waitFor(() => expect(served.stderr()).toContain('skill-mcp: MCP_SKILL_RUN is not valid JSON; it grants nothing'), {
        timeout: 10_000,
      });
      const list = await skillList(served.client);
      expect(list.grantNote).toMatch(/could not be read: MCP_SKILL_RUN is not valid JSON/);
      const answer = await callTool(served.client, 'skill_run', { name: 'reporter', script: 'scripts/report.js', args: [] });
      expect(answer.isError).toBe(true);
      expect(answer.text).toContain('NOT_GRANTED');
      expect(answer.text).toMatch(
        /MCP_SKILL_RUN could not be read \(MCP_SKILL_RUN is not valid JSON; it grants nothing\); the owner must fix it/,
      );
      expect(answer.text).not.toMatch(/does not grant it/);
    } finally {
      await served.close();
    }
  });

  test('the runner says the same at start and in its own NOT_GRANTED', async () => {
    const root = writeRunSkills();
    const runner = await startRunner({
      env: { ...baseEnv(), SKILLS_DIR: root, MCP_SKILL_RUN: bad },
      base: tempDir('runner'),
      args: hostedRunnerArgs(),
    });
    try {
      expect(runner.stderr()).toContain('skill-mcp runner: MCP_SKILL_RUN is not valid JSON; it grants nothing');
      const answer = await runner.client.prepare({ skill: 'reporter', script: 'scripts/report.js', args: [] });
      expect(answer).toMatchObject({
        ok: false,
        error: { code: 'NOT_GRANTED', message: expect.stringMatching(/MCP_SKILL_RUN could not be read \(MCP_SKILL_RUN is not valid JSON/) },
      });
    } finally {
      await runner.stop();
    }
  });
});
