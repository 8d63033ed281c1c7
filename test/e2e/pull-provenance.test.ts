/**
 * Where a pulled skill came from, as a client sees it (issue 26, item 3): skills pulled from a
 * file:// git repository with the built bin, then served by the built bin over stdio to the SDK's
 * Client. skill_list's `pulledFrom`, the SEP-2640 entry's `_meta` and the run preview's
 * `willRun.provenance` name the repository and the commit; a skill edited after the pull shows
 * "modified since pull" and never the stale commit.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { callTool, ERAS, serve, tempDir, type Served } from './harness.js';
import { runPull } from './pull-run.js';
import { askToken } from './run-skills.js';

const GIT_ENV = {
  PATH: process.env['PATH'] ?? '/usr/bin:/bin',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 't',
  GIT_AUTHOR_EMAIL: 't@t',
  GIT_COMMITTER_NAME: 't',
  GIT_COMMITTER_EMAIL: 't@t',
};

/** A repository (with a work tree) holding `files`, committed; returns its URL and commit. */
function gitRepo(files: Record<string, string>): { dir: string; url: string; commit: string } {
  const dir = tempDir('prov-repo');
  const git = (...args: string[]): string =>
    execFileSync('git', ['-C', dir, ...args], { env: { ...GIT_ENV, HOME: dir } })
      .toString('utf8')
      .trim();
  git('init', '-q', '-b', 'main');
  for (const [path, body] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), body);
  }
  git('add', '-A');
  git('commit', '-q', '-m', 'c');
  return { dir, url: `file://${dir}`, commit: git('rev-parse', 'HEAD') };
}

const TOOL_MD =
  '---\nname: tool\ndescription: A tool skill.\nmcp-host:\n  version: 1\n  run:\n    - script: scripts/hello.js\n      interpreter: node\n      timeout: 20\n---\nRun it.\n';
const PLAIN_MD = '---\nname: plain\ndescription: A plain skill.\n---\n# plain\n';

interface Listed {
  name: string;
  pulledFrom?: Record<string, unknown>;
}

async function listed(served: Served, name: string): Promise<Listed | undefined> {
  const answer = await callTool(served.client, 'skill_list', { limit: 200 });
  return (answer.value['skills'] as Listed[]).find((s) => s.name === name);
}

/** Asks until `check` holds: the catalog follows the folder on its own schedule. */
async function eventually<T>(ask: () => Promise<T>, check: (value: T) => boolean): Promise<T> {
  for (let i = 0; ; i++) {
    const value = await ask();
    if (check(value) || i >= 300) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('provenance of pulled skills, as a client sees it', () => {
  let served: Served;
  let repo: ReturnType<typeof gitRepo>;
  let dir: string;

  beforeAll(async () => {
    repo = gitRepo({
      'skills/tool/SKILL.md': TOOL_MD,
      'skills/tool/scripts/hello.js': "console.log('hi');\n",
      'skills/plain/SKILL.md': PLAIN_MD,
    });
    dir = join(tempDir('prov-to'), 'skills');
    const run = await runPull(['--to', dir, '--git', repo.url]);
    expect(run.code, run.stderr + run.stdout).toBe(0);
    mkdirSync(join(dir, 'own'));
    writeFileSync(join(dir, 'own', 'SKILL.md'), '---\nname: own\ndescription: Not pulled.\n---\n');
    served = await serve({ SKILLS_DIR: dir, SKILL_MCP_STATE_DIR: join(tempDir('prov-state'), 'state') }, ERAS[0]!);
  });
  afterAll(async () => {
    await served?.close();
  });

  test('skill_list, the SEP-2640 entry and the run preview name the repository and the commit', async () => {
    const want = { source: 'git', from: repo.url, ref: 'HEAD', commit: repo.commit, state: 'as-pulled' };
    expect((await listed(served, 'tool'))?.pulledFrom).toMatchObject(want);
    expect((await listed(served, 'plain'))?.pulledFrom).toMatchObject(want);
    expect((await listed(served, 'own'))?.pulledFrom, 'a skill pull did not write has none').toBeUndefined();
    const entry = (await served.skills.get('skill://tool/SKILL.md')).skill as { _meta?: Record<string, unknown> };
    expect(entry._meta?.['io.github.skill-mcp/provenance']).toMatchObject(want);
    const preview = await askToken(served.client, { name: 'tool', script: 'scripts/hello.js' });
    expect(preview.preview.willRun['provenance' as keyof typeof preview.preview.willRun]).toMatchObject(want);
  });

  test('a skill edited after the pull shows "modified since pull" and no commit, everywhere', async () => {
    appendFileSync(join(dir, 'plain', 'SKILL.md'), 'edited here\n');
    const plain = await eventually(
      () => listed(served, 'plain'),
      (s) => s?.pulledFrom?.['state'] !== 'as-pulled',
    );
    expect(plain?.pulledFrom).toMatchObject({
      source: 'git',
      from: repo.url,
      state: 'modified since pull',
      detail: expect.stringContaining('"SKILL.md" was edited'),
    });
    expect(plain?.pulledFrom?.['commit']).toBeUndefined();
    writeFileSync(join(dir, 'tool', 'scripts', 'hello.js'), "console.log('changed');\n");
    const preview = await askToken(served.client, { name: 'tool', script: 'scripts/hello.js' });
    const provenance = preview.preview.willRun['provenance' as keyof typeof preview.preview.willRun] as unknown as Record<string, unknown>;
    expect(provenance).toMatchObject({ state: 'modified since pull', detail: expect.stringContaining('"scripts/hello.js" was edited') });
    expect(provenance['commit']).toBeUndefined();
  });
});
