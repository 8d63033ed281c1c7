/**
 * A skill's data folder as a client sees it, through the SDK's Client over real stdio against the
 * standalone launcher (front + runner): skill_list names the folder and its quota, the preview
 * binds it and shows what it holds, and the result says what the run left there; and the hosted
 * pair (a front and a runner of its own) with the host's MCP_DATA_DIR writing below <base>/<skill>/.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { awaitAuditLine, startRunner } from '../runner/harness.js';
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
let stateDir: string;
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
  stateDir = join(tempDir('data-state'), 'state');
  served = await serve({ SKILLS_DIR: root, SKILL_MCP_STATE_DIR: stateDir, SKILL_MCP_DATA_GID_RANGE: '60200-60231' }, ERAS[0]!);
}, 60_000);
afterAll(async () => {
  await served?.close();
});

const dataOf = (list: Awaited<ReturnType<typeof skillList>>): unknown =>
  (list.skills.find((s) => s.name === 'counter') as Record<string, unknown> | undefined)?.['data'];

describe('a data folder through a real client', () => {
  test('skill_list names it, the preview binds it and shows what it holds, the result says what the run left', async () => {
    const listed = await skillList(served.client);
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
    // At once after the run's answer (the list before it was a moment ago): the usage that run left.
    expect(dataOf(await skillList(served.client))).toMatchObject({ used: { bytes: 1, entries: 1, full: false } });
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

  test('skill_data_clear: a preview and a token, then the folder emptied — a planted link removed, its target kept — and the next run counts from 1', async () => {
    const folder = join(stateDir, 'data', 'counter', 'anyone');
    expect(readFileSync(join(folder, 'count'), 'utf8')).toBe('2');
    const outside = join(tempDir('data-outside'), 'precious.txt');
    writeFileSync(outside, 'keep me');
    symlinkSync(outside, join(folder, 'link-out'));
    const preview = await callTool(served.client, 'skill_data_clear', { name: 'counter' });
    expect(preview.isError, preview.text).toBe(false);
    expect(preview.value).toMatchObject({
      status: 'confirmation-required',
      mode: 'ask-user',
      preview: { skill: 'counter', folder: 'counter/anyone', used: { bytes: 1, entries: 1, full: false } },
    });
    // Nothing is removed before the token comes back.
    expect(readdirSync(folder).sort()).toEqual(['count', 'link-out']);
    const cleared = await callTool(served.client, 'skill_data_clear', { name: 'counter', confirmToken: preview.value['confirmToken'] });
    expect(cleared.isError, cleared.text).toBe(false);
    expect(cleared.value).toMatchObject({
      status: 'cleared',
      folder: 'counter/anyone',
      removed: { bytes: 1, entries: 2 },
      left: { bytes: 0, entries: 0 },
    });
    expect(readdirSync(folder)).toEqual([]);
    expect(readFileSync(outside, 'utf8')).toBe('keep me');
    // No host path reaches the model.
    expect(preview.text + cleared.text).not.toContain(stateDir);
    // The token clears once.
    const reused = await callTool(served.client, 'skill_data_clear', { name: 'counter', confirmToken: preview.value['confirmToken'] });
    expect(reused.isError).toBe(true);
    expect(reused.value['error']).toMatchObject({ code: 'TOKEN_REUSED' });
    expect(dataOf(await skillList(served.client))).toMatchObject({ used: { bytes: 0, entries: 0, full: false } });
    const token = await askToken(served.client, { name: 'counter', script: 'count.js' });
    const ran = await callTool(served.client, 'skill_run', {
      name: 'counter',
      script: 'count.js',
      args: [],
      confirmToken: token.confirmToken,
    });
    expect(ran.value['stdout']).toBe('1');
    const line = await awaitAuditLine(stateDir, (l) => l['event'] === 'data.clear' && l['entries_removed'] !== undefined);
    expect(line).toMatchObject({ skill: 'counter', data_folder: 'counter/anyone', entries_removed: 2, bytes_removed: 1, entries_left: 0 });
  }, 90_000);

  test("attack: a run's token does not clear the folder, and a clear's token does not run a script", async () => {
    const runToken = await askToken(served.client, { name: 'counter', script: 'count.js' });
    const asClear = await callTool(served.client, 'skill_data_clear', { name: 'counter', confirmToken: runToken.confirmToken });
    expect(asClear.isError).toBe(true);
    expect(asClear.value['error']).toMatchObject({ code: 'TOKEN_INVALID' });
    const clearToken = (await callTool(served.client, 'skill_data_clear', { name: 'counter' })).value['confirmToken'];
    const asRun = await callTool(served.client, 'skill_run', { name: 'counter', script: 'count.js', args: [], confirmToken: clearToken });
    expect(asRun.isError).toBe(true);
    expect(JSON.stringify(asRun.value)).toMatch(/DRAFT_CHANGED|TOKEN_INVALID/);
    expect(readFileSync(join(stateDir, 'data', 'counter', 'anyone', 'count'), 'utf8')).toBe('1');
  }, 90_000);
});

describe('skill_data_clear confirmed in the client', () => {
  test('a declined prompt removes nothing; an accepted one empties the folder', async () => {
    let answer: 'accept' | 'decline' = 'decline';
    const asked: string[] = [];
    const own = join(tempDir('data-elicit'), 'state');
    const client = await serve({ SKILLS_DIR: root, SKILL_MCP_STATE_DIR: own, SKILL_MCP_DATA_GID_RANGE: '60264-60295' }, ERAS[1]!, {
      onElicit: ({ message }) => {
        asked.push(message);
        return answer === 'accept' || /^Run /.test(message) ? { action: 'accept', content: {} } : { action: 'decline' };
      },
    });
    try {
      const ran = await callTool(client.client, 'skill_run', { name: 'counter', script: 'count.js', args: [] });
      expect(ran.value['stdout'], ran.text).toBe('1');
      const folder = join(own, 'data', 'counter', 'anyone');
      const declined = await callTool(client.client, 'skill_data_clear', { name: 'counter' });
      expect(declined.value).toMatchObject({ status: 'cancelled' });
      expect(asked.at(-1)).toMatch(/^Empty the data folder counter\/anyone of skill counter\?.*1 bytes in 1 entries/);
      expect(readFileSync(join(folder, 'count'), 'utf8')).toBe('1');
      answer = 'accept';
      const cleared = await callTool(client.client, 'skill_data_clear', { name: 'counter' });
      expect(cleared.value, cleared.text).toMatchObject({ status: 'cleared', removed: { entries: 1, bytes: 1 } });
      expect(existsSync(join(folder, 'count'))).toBe(false);
      const line = await awaitAuditLine(own, (l) => l['event'] === 'data.clear' && l['entries_removed'] === 1);
      expect(line).toMatchObject({ approval: { channel: 'elicitation-form' } });
    } finally {
      await client.close();
    }
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
