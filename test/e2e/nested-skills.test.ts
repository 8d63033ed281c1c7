/**
 * A SKILL.md nested inside another skill's folder (issue 26, item 5; docs/nested-skills.md): the
 * SDK's `loadSkills` serves it as a skill of its own as well as a file of the outer skill; we
 * serve it as a file only, and `check` and every pull source agree. Each through what a user
 * runs: the built bin serving over stdio to the SDK's Client, `skill-mcp check`, and
 * `skill-mcp pull` from a bare loadSkills server and from a file:// git repository.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { checkJson, ofRule } from '../check/harness.js';
import { callTool, ERAS, REPO, serve, tempDir, type Served } from './harness.js';
import { filesUnder, runPull } from './pull-run.js';

const OUTER = '---\nname: outer\ndescription: The outer skill; see sub/inner/SKILL.md.\n---\n# outer\n';
const INNER = '---\nname: inner\ndescription: A skill-looking file inside outer.\n---\n# inner\n';
const FILES: Record<string, string> = { 'outer/SKILL.md': OUTER, 'outer/sub/inner/SKILL.md': INNER, 'outer/sub/inner/notes.md': 'notes\n' };

function folder(): string {
  const root = tempDir('nested-src');
  for (const [path, body] of Object.entries(FILES)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), body);
  }
  return root;
}

describe('a SKILL.md inside a skill is one of its files, everywhere', () => {
  let root: string;
  let served: Served;
  let refServer: string;

  beforeAll(async () => {
    root = folder();
    served = await serve({ SKILLS_DIR: root, SKILL_MCP_STATE_DIR: join(tempDir('nested-state'), 'state') }, ERAS[0]!);
    refServer = join(tempDir('nested-ref'), 'ref-server.mjs');
    await build({
      entryPoints: [`${REPO}bench/ref-server.ts`],
      outfile: refServer,
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      banner: { js: "import { createRequire as __c } from 'node:module'; const require = __c(import.meta.url);" },
      logLevel: 'warning',
    });
  });
  afterAll(async () => {
    await served?.close();
  });

  test('serve: one skill, outer; the nested SKILL.md is listed and read as its file; skills/list has no "inner"', async () => {
    const list = await callTool(served.client, 'skill_list', {});
    expect((list.value['skills'] as { name: string }[]).map((s) => s.name)).toEqual(['outer']);
    const load = await callTool(served.client, 'skill_load', { name: 'outer' });
    expect((load.value['files'] as { path: string }[]).map((f) => f.path).sort()).toEqual([
      'SKILL.md',
      'sub/inner/SKILL.md',
      'sub/inner/notes.md',
    ]);
    const file = await callTool(served.client, 'skill_file', { name: 'outer', paths: ['sub/inner/SKILL.md'] });
    expect((file.value['files'] as { text: string }[])[0]?.text).toBe(INNER);
    const listed = await served.skills.list();
    expect(listed.skills.map((s) => s.uri)).toEqual(['skill://outer/SKILL.md']);
  });

  test('check: a note at the nested SKILL.md, saying it is a file of outer; nothing fails', () => {
    const report = checkJson(root, ['.', '--format', 'json']);
    const notes = ofRule(report, 'advice/nested-skill');
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatchObject({ level: 'note', skill: 'outer' });
    expect(notes[0]!.path).toMatch(/outer\/sub\/inner\/SKILL\.md$/);
    expect(report.status).toBe(0);
  });

  test('pull from a loadSkills server (which publishes "inner" too): outer arrives with the nested files; inner is reported "nested", not made a folder', async () => {
    const to = join(tempDir('nested-to'), 'skills');
    const run = await runPull(['--to', to, '--', process.execPath, refServer], { SKILLS_DIR: root });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^nested\s+inner: skill:\/\/outer\/sub\/inner\/SKILL.md lies inside the skill "outer"/m);
    expect(run.lines.map((l) => `${l.kind} ${l.name}`)).toEqual(['added outer']);
    expect(filesUnder(to)).toEqual(['.skill-mcp-lock.json', 'outer/SKILL.md', 'outer/sub/inner/SKILL.md', 'outer/sub/inner/notes.md']);
    expect(existsSync(join(to, 'inner'))).toBe(false);
  });

  test('pull from git: the same: one skill, the nested SKILL.md a file of it', async () => {
    const repo = folder();
    const env = {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: repo,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@t',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@t',
    };
    for (const args of [
      ['init', '-q'],
      ['add', '-A'],
      ['commit', '-q', '-m', 'c'],
    ])
      execFileSync('git', ['-C', repo, ...args], { env });
    const to = join(tempDir('nested-to'), 'skills');
    const run = await runPull(['--to', to, '--git', `file://${repo}`]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.lines.map((l) => `${l.kind} ${l.name}`)).toEqual(['added outer']);
    expect(readFileSync(join(to, 'outer/sub/inner/SKILL.md'), 'utf8')).toBe(INNER);
  });
});
