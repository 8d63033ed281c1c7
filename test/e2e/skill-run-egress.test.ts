/**
 * Declared egress as a client sees it, through the SDK's real Client and the built bin: the
 * person is shown the destinations (and, standalone, that the skill granted them to itself), the
 * token binds them, a python3 script (urllib) and a node script reach a declared 127.0.0.1:<port>
 * through the run's proxy, an undeclared port is refused with the proxy's explanation, and a
 * hosted grant narrower than the declaration wins. Needs the bubblewrap sandbox (the level that
 * enforces egress). Network: only a test HTTP server on this machine's loopback.
 *
 * Tiers: `level` (skipped without bubblewrap, the only levels that give a run a proxy) and `node`:
 * each test's outcome is the proxy's answer to a real client's request (node:http, node:net). What
 * a client that shows a prompt is told is skill-run-egress-prompt.test.ts (front).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { bwrapWorks, expectedLevel, isRoot } from '../levels.js';
import { startRunner, type RunnerHandle } from '../runner/harness.js';
import { fetcherSkill } from './fetcher-skill.js';
import { ERAS, baseEnv, callTool, hostedRunnerArgs, serve, tempDir, type Served } from './harness.js';
import { askToken, audit } from './run-skills.js';

const fetcher = fetcherSkill();

async function runOnce(client: Served['client'], script: string, url: string) {
  const preview = await askToken(client, { name: 'fetcher', script, args: [url] });
  const ran = await callTool(client, 'skill_run', { name: 'fetcher', script, args: [url], confirmToken: preview.confirmToken });
  expect(ran.value['status'], ran.text).toBe('completed');
  return {
    willRun: preview.preview.willRun as typeof preview.preview.willRun & { egress?: string[]; egressWarning?: string; egressNote?: string },
    out: JSON.parse(String(ran.value['stdout'])) as { status?: number; body?: string; error?: string },
  };
}

describe.skipIf(!bwrapWorks)('standalone: the declaration is the grant, and the person is told', () => {
  let served: Served;
  let stateDir: string;

  beforeAll(async () => {
    stateDir = join(tempDir('state'), 'state');
    served = await serve({ SKILLS_DIR: fetcher.root(), SKILL_MCP_STATE_DIR: stateDir, MCP_CONFIRM_ELICITATION: 'off' }, ERAS[0]!);
  });
  afterAll(async () => {
    await served?.close();
  });

  test('the preview lists the destinations with a standalone warning; python urllib reaches the declared port through the proxy', async () => {
    const { willRun, out } = await runOnce(served.client, 'fetch.py', `http://127.0.0.1:${fetcher.port()}/python`);
    expect(willRun.isolation).toBe(expectedLevel(isRoot));
    expect(willRun.egress).toEqual([`127.0.0.1:${fetcher.port()}`, `127.0.0.1:${fetcher.otherPort()}`].sort());
    expect(willRun.egressWarning).toContain('No owner grant (standalone)');
    expect(willRun.envNames).toEqual(expect.arrayContaining(['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY']));
    expect(out).toEqual({ status: 200, body: 'hello /python' });
    const listed = (
      (await callTool(served.client, 'skill_list')).value['skills'] as { name: string; scripts: Record<string, unknown>[] }[]
    ).find((s) => s.name === 'fetcher')!;
    expect(listed.scripts.find((s) => s['script'] === 'fetch.py')).toMatchObject({
      egress: willRun.egress,
      egressWarning: willRun.egressWarning,
    });
  });

  test('a node script reaches it by sending its request to HTTP_PROXY', async () => {
    const { out } = await runOnce(served.client, 'fetch.js', `http://127.0.0.1:${fetcher.port()}/node`);
    expect(out).toEqual({ status: 200, body: 'hello /node' });
  });

  test('an undeclared port is refused by the proxy, whose answer names the missing entry; the audit has a line per connection', async () => {
    const port = fetcher.port();
    const undeclared = port > 2 ? port - 1 : port + 2;
    const { out } = await runOnce(served.client, 'fetch.py', `http://127.0.0.1:${undeclared}/nope`);
    expect(out.status).toBe(403);
    expect(out.body).toContain(`"127.0.0.1:${undeclared}" is missing`);
    const egressLines = audit(stateDir).filter((l) => l.event === 'egress');
    expect(egressLines.map((l) => [l['destination'], l['decision']])).toEqual([
      [`127.0.0.1:${fetcher.port()}`, 'allowed'],
      [`127.0.0.1:${fetcher.port()}`, 'allowed'],
      [`127.0.0.1:${undeclared}`, 'refused'],
    ]);
  });
});

describe.skipIf(!bwrapWorks)('hosted: MCP_SKILL_RUN egress only narrows', () => {
  let runner: RunnerHandle;
  let served: Served;

  beforeAll(async () => {
    const grant = JSON.stringify([
      { skill: 'fetcher', script: 'fetch.py', egress: [`127.0.0.1:${fetcher.otherPort()}`, 'not-declared.example'] },
    ]);
    const hostEnv = { MCP_SKILLS_PATH: fetcher.root(), MCP_SKILL_RUN: grant };
    runner = await startRunner({ env: { ...baseEnv(), ...hostEnv }, base: tempDir('runner'), args: hostedRunnerArgs() });
    served = await serve({ ...hostEnv, SKILL_MCP_RUNNER_SOCKET: runner.socketPath }, ERAS[0]!);
  });
  afterAll(async () => {
    await served?.close();
    await runner?.stop();
  });

  test('the run gets only the granted declared destination; the declared-but-ungranted one is refused; a granted undeclared one is a grant problem', async () => {
    const before = fetcher.hits.length;
    const { willRun, out } = await runOnce(served.client, 'fetch.py', `http://127.0.0.1:${fetcher.port()}/not-granted`);
    expect(willRun.egress).toEqual([`127.0.0.1:${fetcher.otherPort()}`]);
    // No self-grant warning (the owner granted it); the loopback address is still named as such.
    expect(willRun.egressWarning).toBe(
      `The script may connect to addresses that are not on the public internet: 127.0.0.1:${fetcher.otherPort()} is this machine (loopback).`,
    );
    expect(out.status).toBe(403);
    expect(fetcher.hits.length).toBe(before);
    const list = await callTool(served.client, 'skill_list');
    const problems = list.value['problems'] as { path: string; reason: string; detail: string }[];
    expect(problems).toContainEqual(
      expect.objectContaining({
        path: 'MCP_SKILL_RUN/fetcher/fetch.py',
        reason: 'grant',
        detail: expect.stringContaining('not-declared.example'),
      }),
    );
  });
});
