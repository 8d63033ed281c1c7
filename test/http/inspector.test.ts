/**
 * A verifier nobody here wrote, over HTTP: MCP Inspector 2.12.0's CLI lists the skills through
 * `/mcp`, reads every file and checks sizes, digests and frontmatter (`--verify
 * --require-digests`), in both protocol eras, without and with a bearer token.
 * Exit 0 = verified, 7 = nonconformant.
 */
import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { REPO, startHttp, type HttpServer } from './harness.js';
import { inspectorCommand } from '../verifiers.js';

const [INSPECTOR_NODE, INSPECTOR] = inspectorCommand();
const VARIED_SKILLS = `${REPO}test/fixtures/varied-skills`;
const TOKEN = 'inspector-token-0123456789abcdef';

function inspect(url: string, era: string, extra: string[] = []): Promise<{ code: number; stdout: string; stderr: string }> {
  const args = ['--cli', url, '--protocol-era', era, '--method', 'skills/list', '--verify', '--require-digests', ...extra];
  return new Promise((resolve) => {
    execFile(INSPECTOR_NODE, [INSPECTOR, ...args], { cwd: REPO, timeout: 60_000, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
    });
  });
}

function verified(stdout: string): { uri: string; ok: boolean }[] {
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}

let bundled: HttpServer;
let varied: HttpServer;
let guarded: HttpServer;
beforeAll(async () => {
  [bundled, varied, guarded] = await Promise.all([
    startHttp(),
    startHttp({ SKILLS_DIR: VARIED_SKILLS }),
    startHttp({ SKILL_MCP_HTTP_TOKEN: TOKEN }),
  ]);
});
afterAll(async () => {
  await Promise.all([bundled, varied, guarded].map((s) => s?.stop()));
});

describe.each(['legacy', 'modern'])('Inspector --verify --require-digests over HTTP, --protocol-era %s', (era) => {
  test('the bundled skills verify (exit 0)', async () => {
    const run = await inspect(bundled.url, era);
    expect(run.code, run.stderr).toBe(0);
    expect(verified(run.stdout).map((r) => [r.uri, r.ok])).toEqual([['skill://commit-message/SKILL.md', true]]);
  });

  test('the varied fixture folder verifies (exit 0), every skill checked', async () => {
    const run = await inspect(varied.url, era);
    expect(run.code, run.stderr).toBe(0);
    const all = verified(run.stdout);
    expect(all.length).toBeGreaterThan(1);
    for (const report of all) expect(report.ok, report.uri).toBe(true);
  });

  test('behind a bearer token: refused without it, verified with it', async () => {
    expect((await inspect(guarded.url, era)).code).not.toBe(0);
    const run = await inspect(guarded.url, era, ['--header', `Authorization: Bearer ${TOKEN}`]);
    expect(run.code, run.stderr).toBe(0);
  });
});
