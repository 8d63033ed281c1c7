/**
 * The token flow from a one-shot client nobody here wrote: MCP Inspector 2.12.0's CLI declares no
 * elicitation and starts a new server (front + runner) for every call. With no MCP_CONFIRM_SECRET,
 * a token minted by one server process must run in the next one, exactly once: the runner's key
 * and spent-token ledger persist in the state dir.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { REPO, SERVER_JS, SUITE_TMP, expectNoLeftovers, tempDir } from './harness.js';
import { audit } from './run-skills.js';
import { inspectorCommand } from '../verifiers.js';

afterAll(expectNoLeftovers);

const [INSPECTOR_NODE, INSPECTOR] = inspectorCommand();

interface CliCall {
  code: number;
  result: { isError?: boolean; structuredContent?: Record<string, unknown> };
  stderr: string;
}

/** One `inspector --cli ... --method tools/call --tool-name skill_run` with `toolArgs` as key=value. */
function skillRunOnce(stateDir: string, toolArgs: string[]): Promise<CliCall> {
  const args = [
    '--cli',
    // Only where its state lives (and TMPDIR, for the leftover check): no MCP_CONFIRM_SECRET.
    '-e',
    `TMPDIR=${SUITE_TMP}`,
    '-e',
    `SKILL_MCP_STATE_DIR=${stateDir}`,
    process.execPath,
    SERVER_JS,
    '--method',
    'tools/call',
    '--tool-name',
    'skill_run',
    ...toolArgs.flatMap((a) => ['--tool-arg', a]),
    '--format',
    'json',
  ];
  const env = { ...process.env };
  delete env['MCP_CONFIRM_SECRET'];
  return new Promise((resolve) => {
    execFile(INSPECTOR_NODE, [INSPECTOR, ...args], { cwd: REPO, env, timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      let parsed: { result?: CliCall['result'] } = {};
      try {
        parsed = JSON.parse(stdout) as typeof parsed;
      } catch {
        // left empty: the assertions below show stdout and stderr
      }
      resolve({ code, result: parsed.result ?? {}, stderr: `${stderr}\n--- stdout ---\n${stdout}` });
    });
  });
}

describe('Inspector CLI: the token flow as separate one-shot calls', () => {
  test('preview in one process, run with the token in the next, and a third use of it is TOKEN_REUSED', async () => {
    const stateDir = join(tempDir('inspector-state'), 'state');
    const request = ['name=commit-message', 'script=scripts/check-message.js', 'args=["feat: x"]'];

    const first = await skillRunOnce(stateDir, request);
    expect(first.code, first.stderr).toBe(0);
    expect(first.result.structuredContent, first.stderr).toMatchObject({
      status: 'confirmation-required',
      preview: { willRun: { skill: 'commit-message', argv: ['scripts/check-message.js', 'feat: x'] } },
    });
    const token = String(first.result.structuredContent!['confirmToken']);
    expect(audit(stateDir).filter((l) => l.event === 'run.accept')).toEqual([]);

    const second = await skillRunOnce(stateDir, [...request, `confirmToken=${token}`]);
    expect(second.result.isError, second.stderr).not.toBe(true);
    expect(second.result.structuredContent).toMatchObject({ status: 'completed', exitCode: 0, timedOut: false });

    const third = await skillRunOnce(stateDir, [...request, `confirmToken=${token}`]);
    expect(third.result.isError, third.stderr).toBe(true);
    expect(third.result.structuredContent).toMatchObject({ error: { code: 'TOKEN_REUSED' } });
    expect(audit(stateDir).filter((l) => l.event === 'run.accept')).toHaveLength(1);
    // Three Inspector processes in a row, each a Node 22 start plus a server and its runner: a
    // backstop against a hang, not a speed limit (each call has its own 60 s).
  }, 200_000);
});
