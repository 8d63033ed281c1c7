/**
 * A verifier nobody here wrote: MCP Inspector 2.12.0's CLI lists the skills, reads every file and
 * checks sizes, digests and frontmatter (`--verify --require-digests`), in both protocol eras.
 * Exit 0 = verified, 7 = nonconformant. Each run spawns its own server, as the CLI does.
 */
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BUNDLED_SKILLS, REPO, SERVER_JS, SUITE_TMP, VARIED_SKILLS, expectNoLeftovers } from './harness.js';
import { buildHostileTree, type HostileTree } from './hostile-tree.js';
import { inspectorCommand } from '../verifiers.js';

const [INSPECTOR_NODE, INSPECTOR] = inspectorCommand();
const TAMPER_PROXY = `${REPO}test/e2e/tamper-proxy.mjs`;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function inspect(serverJs: string, skillsDir: string, era: string): Promise<Run> {
  // TMPDIR and the state dir in the suite's tree: whatever the server starts is found by the leftover check.
  const args = [
    '--cli',
    '-e',
    `SKILLS_DIR=${skillsDir}`,
    '-e',
    `TMPDIR=${SUITE_TMP}`,
    '-e',
    `SKILL_MCP_STATE_DIR=${SUITE_TMP}/state`,
    process.execPath,
    serverJs,
    '--protocol-era',
    era,
    '--method',
    'skills/list',
    '--verify',
    '--require-digests',
  ];
  return new Promise((resolve) => {
    execFile(INSPECTOR_NODE, [INSPECTOR, ...args], { cwd: REPO, timeout: 60_000, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** One JSON report per skill on stdout. */
function reports(run: Run): { uri: string; ok: boolean; outcome: string }[] {
  return run.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}

let hostile: HostileTree;
beforeAll(() => {
  hostile = buildHostileTree();
});
afterAll(() => {
  rmSync(hostile.base, { recursive: true, force: true });
});
afterAll(expectNoLeftovers);

describe.each(['legacy', 'modern'])('Inspector --verify --require-digests, --protocol-era %s', (era) => {
  test('the bundled skills verify (exit 0)', async () => {
    const run = await inspect(SERVER_JS, BUNDLED_SKILLS, era);
    expect(run.code, run.stderr).toBe(0);
    expect(reports(run).map((r) => [r.uri, r.ok])).toEqual([['skill://commit-message/SKILL.md', true]]);
  });

  test('the varied fixture folder verifies (exit 0), every skill and file checked', async () => {
    const run = await inspect(SERVER_JS, VARIED_SKILLS, era);
    expect(run.code, run.stderr).toBe(0);
    const all = reports(run);
    expect(all).toHaveLength(21);
    for (const report of all) expect(report, report.uri).toMatchObject({ ok: true, outcome: 'verified' });
  });

  test('the published part of a hostile folder verifies (exit 0): what a strict host cannot load is left out, not served broken', async () => {
    const run = await inspect(SERVER_JS, hostile.main, era);
    expect(run.code, run.stderr).toBe(0);
    const uris = reports(run).map((r) => r.uri);
    expect(uris).toContain('skill://good/SKILL.md');
    for (const unpublished of ['bom-skill', 'mismatch', 'long-desc', 'many-files', 'big-files'])
      expect(uris).not.toContain(`skill://${unpublished}/SKILL.md`);
  });

  test('a tampered byte between server and Inspector is caught (exit 7)', async () => {
    const run = await inspect(TAMPER_PROXY, BUNDLED_SKILLS, era);
    expect(run.code, run.stderr).toBe(7);
  });
});
