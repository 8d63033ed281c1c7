/**
 * A skill's data folder as a client sees it, through the SDK's Client over real stdio against the
 * standalone launcher (front + runner): skill_list names the folder and its quota, the preview
 * binds it and shows what it holds, and the result says what the run left there; and the hosted
 * pair (a front and a runner of its own) with the host's MCP_DATA_DIR writing below <base>/<skill>/.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startRunner } from '../runner/harness.js';
import { baseEnv, callTool, ERAS, hostedRunnerArgs, serve, skillList, tempDir, type Served } from './harness.js';
import { askToken } from './run-skills.js';

const COUNT_JS = `const fs = require('node:fs');
const p = require('node:path').join(process.env.MCP_DATA_DIR, 'count');
const n = fs.existsSync(p) ? Number(fs.readFileSync(p, 'utf8')) + 1 : 1;
fs.writeFileSync(p, String(n));
process.stdout.write(String(n));
`;

let served: Served;
let root: string;
beforeAll(async () => {
  root = tempDir('data-skills');
  mkdirSync(join(root, 'counter'), { mode: 0o755 });
  writeFileSync(
    join(root, 'counter', 'SKILL.md'),
    '---\nname: counter\ndescription: Counts its runs. Use when testing data folders.\n---\nCounts.\n',
    { mode: 0o644 },
  );
  writeFileSync(
    join(root, 'counter', 'mcp-host.yaml'),
    'version: 1\nrun:\n  - script: count.js\n    interpreter: node\n    timeout: 20\ndata:\n  bytes: 1M\n  files: 10\n',
    { mode: 0o644 },
  );
  writeFileSync(join(root, 'counter', 'count.js'), COUNT_JS, { mode: 0o644 });
  served = await serve(
    { SKILLS_DIR: root, SKILL_MCP_STATE_DIR: join(tempDir('data-state'), 'state'), SKILL_MCP_DATA_GID_RANGE: '60200-60231' },
    ERAS[0]!,
  );
}, 60_000);
afterAll(async () => {
  await served?.close();
});

describe('a data folder through a real client', () => {
  test('skill_list names it, the preview binds it and shows what it holds, the result says what the run left', async () => {
    const listed = await skillList(served.client);
    const dataOf = (list: typeof listed): unknown =>
      (list.skills.find((s) => s.name === 'counter') as Record<string, unknown> | undefined)?.['data'];
    expect(dataOf(listed)).toEqual({ folder: 'counter/anyone', bytes: 1024 * 1024, files: 10 });
    const first = await askToken(served.client, { name: 'counter', script: 'count.js' });
    expect((first.preview.willRun as Record<string, unknown>)['data']).toEqual({ folder: 'counter/anyone', bytes: 1024 * 1024, files: 10 });
    expect((first.preview.willRun as { envNames: string[] }).envNames).toContain('MCP_DATA_DIR');
    const ran = await callTool(served.client, 'skill_run', {
      name: 'counter',
      script: 'count.js',
      args: [],
      confirmToken: first.confirmToken,
    });
    expect(ran.isError, ran.text).toBe(false);
    expect(ran.value['stdout']).toBe('1');
    expect(ran.value['data']).toEqual({ bytes: 1, entries: 1 });
    const second = await askToken(served.client, { name: 'counter', script: 'count.js' });
    expect((second.preview as Record<string, unknown>)['dataUsed']).toEqual({ bytes: 1, entries: 1, full: false });
    const again = await callTool(served.client, 'skill_run', {
      name: 'counter',
      script: 'count.js',
      args: [],
      confirmToken: second.confirmToken,
    });
    expect(again.value['stdout']).toBe('2');
    const relisted = await skillList(served.client);
    expect(dataOf(relisted)).toMatchObject({ used: { bytes: 1, entries: 1, full: false } });
  }, 90_000);
});

describe("the hosted pair with the host's MCP_DATA_DIR", () => {
  test('a granted skill writes below <base>/<skill>/, through the front and a runner of its own', async () => {
    const base = tempDir('host-data');
    const shared = {
      MCP_SKILLS_PATH: root,
      MCP_SKILL_RUN: JSON.stringify([{ skill: 'counter', script: 'count.js' }]),
      MCP_DATA_DIR: base,
      SKILL_MCP_DATA_GID_RANGE: '60232-60263',
    };
    const runner = await startRunner({ env: { ...baseEnv(), ...shared }, base: tempDir('data-runner'), args: hostedRunnerArgs() });
    const front = await serve({ ...shared, SKILL_MCP_RUNNER_SOCKET: runner.socketPath }, ERAS[0]!);
    try {
      const preview = await askToken(front.client, { name: 'counter', script: 'count.js' });
      expect((preview.preview.willRun as Record<string, unknown>)['data']).toMatchObject({ folder: 'counter/anyone' });
      const ran = await callTool(front.client, 'skill_run', {
        name: 'counter',
        script: 'count.js',
        args: [],
        confirmToken: preview.confirmToken,
      });
      expect(ran.isError, ran.text).toBe(false);
      expect(ran.value['stdout']).toBe('1');
      expect(readFileSync(join(base, 'counter', 'anyone', 'count'), 'utf8')).toBe('1');
      // The host path of the base reaches neither the model nor the script.
      expect(ran.text).not.toContain(base);
    } finally {
      await front.close();
      await runner.stop();
    }
  }, 90_000);
});
