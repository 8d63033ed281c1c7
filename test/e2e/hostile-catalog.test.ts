/**
 * Bad input gets a clear answer and nothing leaks: a folder of broken and hostile skills (built at
 * test time in a temp dir, see hostile-tree.ts) served over real stdio in both eras. Every problem
 * reason the catalog produces, every refusal of the read tools, and no byte from outside a skill.
 */
import { readFileSync, rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { PROBLEM_REASONS } from '../../shared/problems.js';
import {
  ERAS,
  callTool,
  expectNoLeftovers,
  rpc,
  rpcErrorCode,
  rssKiB,
  serve,
  skillList,
  type ProblemEntry,
  type Served,
  type SkillListValue,
} from './harness.js';
import { buildHostileTree, type HostileTree } from './hostile-tree.js';

// Reported from the runner's describe (start-hygiene and hosted-recipe tests), not by the catalog.
const RUNNER_ONLY_REASONS = ['environ-unscrubbed', 'config-mismatch', 'content-mismatch'];

const PASSWD_LINE = readFileSync('/etc/passwd', 'utf8').split('\n')[0]!;

const GRANT = [
  { skill: 'good', script: 'scripts/run.js', env: ['NOT_ASKED_FOR'] },
  { skill: 'good', script: 'scripts/undeclared.js' },
  { skill: 'ghost', script: 'x.js' },
];

let tree: HostileTree;
beforeAll(() => {
  tree = buildHostileTree();
});
afterAll(() => {
  rmSync(tree.base, { recursive: true, force: true });
});
afterAll(expectNoLeftovers);

function problemsAt(list: SkillListValue, path: string): ProblemEntry[] {
  return list.problems.filter((p) => p.path === path);
}

describe.each(ERAS)('hostile folder, $name', (era) => {
  let served: Served;
  let list: SkillListValue;
  const seen: string[] = [];

  beforeAll(async () => {
    served = await serve(
      {
        MCP_SKILLS_PATH: [tree.main, tree.second, tree.missingRoot, tree.fileRoot].join(':'),
        MCP_SKILL_RUN: JSON.stringify(GRANT),
      },
      era,
    );
    list = await skillList(served.client);
    seen.push(JSON.stringify(list));
  });
  afterAll(async () => {
    await served?.close();
  });

  const file = async (name: string, paths: string[]): Promise<{ isError: boolean; files: Record<string, unknown>[]; text: string }> => {
    const answer = await callTool(served.client, 'skill_file', { name, paths });
    seen.push(answer.text);
    return { isError: answer.isError, files: (answer.value['files'] ?? []) as Record<string, unknown>[], text: answer.text };
  };

  test('every problem reason the catalog can produce is reported, each with a path and a detail', () => {
    const reasons = new Set(list.problems.map((p) => p.reason));
    for (const reason of PROBLEM_REASONS) {
      if (RUNNER_ONLY_REASONS.includes(reason) || reason === 'skill-limit' || reason === 'config') continue; // separate servers below
      expect(reasons, reason).toContain(reason);
    }
    for (const p of list.problems) expect(p.detail.length).toBeGreaterThan(10);
  });

  test('the server keeps serving everything that is not broken', () => {
    expect(list.skills.map((s) => s.name)).toEqual([
      'Bad_Name',
      'big-files',
      'bom-skill',
      'broken-decl',
      'full-batch',
      'future-decl',
      'good',
      'long-desc',
      'many-files',
      'mismatch',
      'missing-script',
      'odd-interpreter',
      'only-second',
      'stored-skill',
      'unknown-keys',
    ]);
  });

  test('unreadable roots (missing, a regular file) are root-unreadable and named by folder name only', () => {
    expect(problemsAt(list, 'no-such-root')).toMatchObject([{ reason: 'root-unreadable' }]);
    expect(problemsAt(list, 'a-file-root')).toMatchObject([{ reason: 'root-unreadable' }]);
  });

  test('broken SKILL.md files: YAML anchors, duplicate keys and missing frontmatter are malformed-frontmatter with a position', () => {
    expect(problemsAt(list, 'main-root/anchors/SKILL.md')).toMatchObject([
      { reason: 'malformed-frontmatter', detail: expect.stringMatching(/anchors.*line 3/) },
    ]);
    expect(problemsAt(list, 'main-root/dup-keys/SKILL.md')).toMatchObject([
      { reason: 'malformed-frontmatter', detail: expect.stringMatching(/unique.*line 4/) },
    ]);
    expect(problemsAt(list, 'main-root/no-frontmatter/SKILL.md')).toMatchObject([{ reason: 'malformed-frontmatter' }]);
  });

  test('a folder without SKILL.md is no-skill-md; a SKILL.md that is a folder or a link to /etc/passwd is unreadable-skill-md', () => {
    expect(problemsAt(list, 'main-root/empty-dir')).toMatchObject([{ reason: 'no-skill-md' }]);
    expect(problemsAt(list, 'main-root/skill-md-dir/SKILL.md')).toMatchObject([{ reason: 'unreadable-skill-md' }]);
    expect(problemsAt(list, 'main-root/skill-md-link/SKILL.md')).toMatchObject([{ reason: 'unreadable-skill-md' }]);
  });

  test('a directory name the tools cannot carry is unusable-name', () => {
    expect(problemsAt(list, 'main-root/100%')).toMatchObject([{ reason: 'unusable-name' }]);
  });

  test('one name in two roots: both refused (duplicate-name), never first-wins', async () => {
    expect(problemsAt(list, 'main-root/dup-skill')).toMatchObject([{ reason: 'duplicate-name' }]);
    expect(problemsAt(list, 'second-root/dup-skill')).toMatchObject([{ reason: 'duplicate-name' }]);
    expect((await callTool(served.client, 'skill_load', { name: 'dup-skill' })).value['error']).toMatchObject({ code: 'UNKNOWN_SKILL' });
  });

  test('linked skill folders: an in-root link serves the target under its own name, an alias counts once, a link out of the root or dangling is symlink-escape', async () => {
    expect(problemsAt(list, 'main-root/aliased')).toMatchObject([{ reason: 'name-mismatch' }]);
    expect(list.skills.filter((s) => s.name === 'good')).toHaveLength(1);
    expect(problemsAt(list, 'main-root/escape-link')).toMatchObject([{ reason: 'symlink-escape' }]);
    expect(problemsAt(list, 'main-root/dangling-skill')).toMatchObject([{ reason: 'symlink-escape' }]);
    expect(list.skills.map((s) => s.name)).not.toContain('outside-skill');
    expect((await callTool(served.client, 'skill_load', { name: 'outside-skill' })).isError).toBe(true);
  });

  test('declarations: a broken block costs only the scripts, unknown keys are named, an unknown major version is rejected, a missing script is not runnable', async () => {
    const byName = new Map(list.skills.map((s) => [s.name, s]));
    expect(problemsAt(list, 'main-root/broken-decl/SKILL.md')).toMatchObject([
      { reason: 'declaration', detail: expect.stringContaining('line') },
    ]);
    // Served by the tools, but a strict host parses the whole frontmatter: not published.
    expect(problemsAt(list, 'main-root/broken-decl')).toMatchObject([
      { reason: 'not-published', detail: expect.stringContaining('mcp-host') },
    ]);
    expect(byName.get('broken-decl')).toMatchObject({ scripts: [], runnable: false });
    expect((await callTool(served.client, 'skill_load', { name: 'broken-decl' })).isError).toBe(false);
    expect(problemsAt(list, 'main-root/unknown-keys/SKILL.md')).toMatchObject([
      { reason: 'declaration', detail: expect.stringMatching(/mcp-host\.sandbox.*mcp-host\.run\[0\]\.sudo/) },
    ]);
    expect(problemsAt(list, 'main-root/future-decl/SKILL.md')).toMatchObject([
      { reason: 'declaration', detail: expect.stringContaining('version 2') },
    ]);
    expect(byName.get('future-decl')).toMatchObject({ scripts: [], runnable: false });
    expect(problemsAt(list, 'main-root/missing-script/scripts/gone.js')).toMatchObject([{ reason: 'declared-script-missing' }]);
    expect(byName.get('missing-script')!.ungrantedScripts!.map((s) => s.script)).toEqual(['scripts/here.js']);
    expect(byName.get('odd-interpreter')!.unavailableScripts).toMatchObject([{ script: 'run.sh', interpreter: 'bash' }]);
  });

  test('MCP_SKILL_RUN rows naming an undeclared script, an unserved skill or an unasked variable grant nothing (grant)', () => {
    expect(list.grantFrom).toBe('MCP_SKILL_RUN');
    expect(problemsAt(list, 'MCP_SKILL_RUN/good/scripts/undeclared.js')).toMatchObject([{ reason: 'grant' }]);
    expect(problemsAt(list, 'MCP_SKILL_RUN/ghost/x.js')).toMatchObject([{ reason: 'grant' }]);
    expect(problemsAt(list, 'MCP_SKILL_RUN/good/scripts/run.js')).toMatchObject([
      { reason: 'grant', detail: expect.stringContaining('NOT_ASKED_FOR') },
    ]);
    // Granted, but this hosted server has no runner (no SKILL_MCP_RUNNER_SOCKET): unavailable, and why.
    const good = list.skills.find((s) => s.name === 'good')!;
    expect(good.scripts).toEqual([]);
    expect(good.unavailableScripts).toEqual([
      { script: 'scripts/run.js', interpreter: 'node', why: expect.stringContaining('SKILL_MCP_RUNNER_SOCKET') },
    ]);
  });

  test('2,100 files in one skill: file-limit, the manifest lists the 2,000 walked, and the skill is served but unpublished', async () => {
    expect(
      problemsAt(list, 'main-root/many-files')
        .map((p) => p.reason)
        .sort(),
    ).toEqual(['file-limit', 'not-published']);
    expect(list.skills.find((s) => s.name === 'many-files')!.fileCount).toBe(2000);
    expect(await rpcErrorCode(rpc(served.client, 'skills/get', { uri: 'skill://many-files/SKILL.md' }))).toBe(-32602);
  });

  test('skills a strict host cannot load (bad dir name, name mismatch, BOM, long description) are served by tools and prompts but absent from skill://', async () => {
    const published = (await served.skills.list()).skills.map((s) => s.uri);
    const resources = (await served.client.listResources()).resources.map((r) => r.uri);
    for (const name of ['Bad_Name', 'mismatch', 'bom-skill', 'long-desc']) {
      expect(
        problemsAt(list, `main-root/${name}`).map((p) => p.reason),
        name,
      ).toContain('not-published');
      const load = await callTool(served.client, 'skill_load', { name });
      expect(load.isError, name).toBe(false);
      expect((await served.client.getPrompt({ name })).messages).toHaveLength(1);
      const uri = `skill://${name}/SKILL.md`;
      expect(published).not.toContain(uri);
      expect(resources).not.toContain(uri);
      if (name !== 'Bad_Name') {
        expect(await rpcErrorCode(rpc(served.client, 'skills/get', { uri })), name).toBe(-32602);
        expect(await rpcErrorCode(rpc(served.client, 'resources/read', { uri })), name).toBe(-32602);
      }
    }
    expect(
      problemsAt(list, 'main-root/mismatch')
        .map((p) => p.reason)
        .sort(),
    ).toEqual(['name-mismatch', 'not-published']);
    expect(problemsAt(list, 'main-root/bom-skill')[0]!.detail).toContain('byte-order mark');
    // The refusal gives the actual length, so the author knows how much to cut.
    expect(problemsAt(list, 'main-root/long-desc')[0]!.detail).toContain(
      'the description is 1100 characters long; strict hosts accept at most 1024',
    );
    expect(published).toContain('skill://good/SKILL.md');
  });

  test('traversal strings, absolute paths, %2e%2e, backslashes, NUL, empty segments: each its own INVALID_PATH, in request order', async () => {
    const attacks = [
      '../good/SKILL.md',
      'references/../../../etc/passwd',
      '/etc/passwd',
      '%2e%2e/%2e%2e/etc/passwd',
      '..\\..\\etc\\passwd',
      'SKILL.md\u0000.txt',
      './SKILL.md',
      'references//a.md',
    ];
    const { isError, files } = await file('good', attacks);
    expect(isError).toBe(false);
    expect(files.map((f) => f['path'])).toEqual(attacks);
    for (const f of files) expect(f['error'], String(f['path'])).toMatchObject({ code: 'INVALID_PATH' });
    const more = await file('good', ['references/', '', 'a'.repeat(2000)]);
    for (const f of more.files) expect(f['error']).toMatchObject({ code: 'INVALID_PATH' });
  });

  test('one bad path fails only its own entry, and answers keep request order', async () => {
    const { files } = await file('good', ['references/b.md', '../x', 'SKILL.md', 'nope.md', 'references/a.md']);
    expect(files.map((f) => [f['path'], f['error'] ? (f['error'] as { code: string }).code : f['text']])).toEqual([
      ['references/b.md', '# B\n'],
      ['../x', 'INVALID_PATH'],
      ['SKILL.md', expect.stringContaining('name: good')],
      ['nope.md', 'NOT_FOUND'],
      ['references/a.md', '# A\n'],
    ]);
  });

  test('a link planted inside a skill pointing at /etc/passwd is not listed, not served, and its content never appears', async () => {
    expect(problemsAt(list, 'main-root/good/leak')).toMatchObject([{ reason: 'symlink-escape' }]);
    const load = await callTool(served.client, 'skill_load', { name: 'good' });
    seen.push(load.text);
    const paths = (load.value['files'] as { path: string }[]).map((f) => f.path);
    expect(paths).not.toContain('leak');
    expect(paths).not.toContain('neighbour-link');
    const { files } = await file('good', ['leak', 'neighbour-link', 'self-loop/SKILL.md', 'dangling']);
    for (const f of files) expect(f['error']).toMatchObject({ code: 'NOT_FOUND' });
    for (const uri of [
      'skill://good/leak',
      'skill://good/../../../etc/passwd',
      'skill://good/%2e%2e/%2e%2e/etc/passwd',
      'skill://good/neighbour-link',
    ]) {
      expect(await rpcErrorCode(rpc(served.client, 'resources/read', { uri })), uri).toBe(-32602);
    }
  });

  test('links inside the skill are served as aliases; a link back to an ancestor is reported as a loop, not followed', async () => {
    const { files } = await file('good', ['alias-of-a.md', 'refs-link/a.md']);
    expect(files.map((f) => f['text'])).toEqual(['# A\n', '# A\n']);
    expect(problemsAt(list, 'main-root/good/self-loop')).toMatchObject([
      { reason: 'unusable-path', detail: expect.stringContaining('loop') },
    ]);
  });

  test('a FIFO is never listed nor opened (the call returns), and a control character in a name is unusable-path', async () => {
    expect(problemsAt(list, 'main-root/good/pipe')).toMatchObject([{ reason: 'unusable-path' }]);
    expect(problemsAt(list, 'main-root/good/tab\there.txt')).toMatchObject([{ reason: 'unusable-path' }]);
    const { files } = await file('good', ['pipe']);
    expect(files[0]!['error']).toMatchObject({ code: 'NOT_FOUND' });
  });

  test('hidden files (.env, .git/config, nested dotfiles) are never listed, never served, even when named exactly', async () => {
    const load = await callTool(served.client, 'skill_load', { name: 'good' });
    expect(load.text).not.toMatch(/\.env|\.git|hidden-notes/);
    const dir = await served.skills.readDirectory('skill://good');
    expect(dir.resources.map((r) => r.name).filter((n) => n.startsWith('.'))).toEqual([]);
    const { files } = await file('good', ['.env', '.git/config', 'references/.hidden-notes.md']);
    for (const f of files) expect(f['error']).toMatchObject({ code: 'NOT_FOUND' });
    for (const uri of ['skill://good/.env', 'skill://good/.git/config', 'skill://good/.git']) {
      expect(await rpcErrorCode(rpc(served.client, 'resources/read', { uri }))).toBe(-32602);
    }
    expect(await rpcErrorCode(rpc(served.client, 'resources/directory/read', { uri: 'skill://good/.git' }))).toBe(-32602);
  });

  test('a 256 MiB file comes back truncated at 1 MiB (never silently), with memory bounded', async () => {
    const before = rssKiB(served.pid);
    const { files } = await file('big-files', ['huge.bin', 'huge.bin', 'huge.bin', 'small.txt']);
    for (const f of files.slice(0, 3)) {
      expect(f).toMatchObject({ size: 256 * 1024 * 1024, truncated: true, returnedBytes: 1024 * 1024 });
      expect(Buffer.from(f['base64'] as string, 'base64').length).toBe(1024 * 1024);
    }
    expect(files[3]).toMatchObject({ text: 'small\n', truncated: false });
    expect(rssKiB(served.pid) - before).toBeLessThan(96 * 1024);
  });

  test('a truncated text file is cut at a whole character and says how many bytes came back', async () => {
    const { files } = await file('big-files', ['long.txt']);
    expect(files[0]).toMatchObject({ truncated: true, returnedBytes: 1024 * 1024 - 1 });
    expect((files[0]!['text'] as string).endsWith('x')).toBe(true);
  });

  test('9 paths or none: the whole call is refused with what to do', async () => {
    const nine = await file('good', Array(9).fill('SKILL.md'));
    expect(nine.isError).toBe(true);
    expect(nine.text).toContain('BATCH_LIMIT');
    expect((await file('good', [])).isError).toBe(true);
  });

  test('the 4 MiB budget is decided from file sizes before reading, the same in any order', async () => {
    const parts = ['part-1.bin', 'part-2.bin', 'part-3.bin', 'part-4.bin', 'part-5.bin'];
    const forward = await file('big-files', parts);
    const backward = await file('big-files', [...parts].reverse());
    expect(forward.isError).toBe(true);
    expect(backward.isError).toBe(true);
    expect(forward.text).toContain('4608000 bytes');
    expect(backward.text).toContain('4608000 bytes');
    // A 256 MiB file counts 1 MiB: with four parts it is over, whatever position it takes.
    for (const paths of [
      ['huge.bin', ...parts.slice(0, 4)],
      [...parts.slice(0, 4), 'huge.bin'],
    ])
      expect((await file('big-files', paths)).isError).toBe(true);
    expect((await file('big-files', parts.slice(0, 4))).isError).toBe(false);
  });

  test('the largest batch allowed (4 x 1 MiB of binary) reaches the SDK client intact', async () => {
    const { isError, files } = await file('full-batch', ['mib-1.bin', 'mib-2.bin', 'mib-3.bin', 'mib-4.bin']);
    expect(isError).toBe(false);
    for (const [i, f] of files.entries()) {
      const bytes = Buffer.from(f['base64'] as string, 'base64');
      expect(bytes.length).toBe(1024 * 1024);
      expect(bytes[5]).toBe((5 * 131 + i + 1) & 0xff);
    }
  });

  test('no answer carries a host path, a secret from a dotfile, or a line of /etc/passwd', () => {
    for (const text of seen) {
      expect(text).not.toContain(tree.base);
      expect(text).not.toContain(tree.secret);
      expect(text).not.toContain(PASSWD_LINE);
    }
  });
});

describe.each(ERAS)('limits and configuration, $name', (era) => {
  test('40 skills over a limit of 32: 32 served, each of the rest a skill-limit problem, and the crossing said on stderr at start and by skill_list', async () => {
    const served = await serve({ SKILLS_DIR: tree.crowded, SKILL_MCP_MAX_SKILLS: '32' }, era);
    try {
      const list = await skillList(served.client);
      expect(list.skills).toHaveLength(32);
      expect(list.problems.filter((p) => p.reason === 'skill-limit').map((p) => p.path)).toEqual(
        Array.from({ length: 8 }, (_, i) => `crowded-root/crowd-${32 + i}`),
      );
      expect((await served.skills.list()).skills).toHaveLength(32);
      const notice =
        /40 skill folders found, over the limit of 32 \(SKILL_MCP_MAX_SKILLS\): the first 32 by name are served, the other 8 are not/;
      expect((list as unknown as { limitNotice: string }).limitNotice).toMatch(notice);
      await served.waitForStderr(notice);
    } finally {
      await served.close();
    }
  });

  test('the default limit (5,000) serves all 40 and says nothing about a limit', async () => {
    const served = await serve({ SKILLS_DIR: tree.crowded }, era);
    try {
      const list = await skillList(served.client);
      expect(list.skills).toHaveLength(40);
      expect(list).not.toHaveProperty('limitNotice');
      expect(served.stderr()).not.toMatch(/SKILL_MCP_MAX_SKILLS/);
    } finally {
      await served.close();
    }
  });

  test('a limit variable that is not a positive integer is a config problem and the default holds; a valid one is obeyed', async () => {
    const served = await serve({ SKILLS_DIR: tree.crowded, SKILL_MCP_MAX_SKILLS: 'lots', SKILL_MCP_MAX_FILES: '0' }, era);
    try {
      const list = await skillList(served.client);
      expect(list.problems.filter((p) => p.reason === 'config').map((p) => p.detail)).toEqual([
        expect.stringContaining('SKILL_MCP_MAX_SKILLS'),
        expect.stringContaining('SKILL_MCP_MAX_FILES'),
      ]);
      expect(list.skills).toHaveLength(40);
    } finally {
      await served.close();
    }
    const lowered = await serve({ SKILLS_DIR: tree.crowded, SKILL_MCP_MAX_SKILLS: '35' }, era);
    try {
      expect((await skillList(lowered.client)).skills).toHaveLength(35);
    } finally {
      await lowered.close();
    }
  });
});
