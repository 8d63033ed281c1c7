/**
 * `skill-mcp pull --git` against local bare repositories made here and read over file://: the
 * happy path (two skills under skills/, --path, --skill) with the commit and digests in the lock;
 * a new commit moving the pin, --locked holding it; a force-push that removes the pinned commit;
 * and hostile repositories (dot and backslash names built with `git mktree`, a link to
 * /etc/passwd, a submodule, an LFS pointer, a huge file, a filter and a checkout hook).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { tempDir } from './harness.js';
import { filesUnder, readLockFile, runPull, sha256 } from './pull-run.js';

const ENV = {
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 't',
  GIT_AUTHOR_EMAIL: 't@t',
  GIT_COMMITTER_NAME: 't',
  GIT_COMMITTER_EMAIL: 't@t',
};
const git = (gitDir: string, args: string[], input?: string | Buffer): string =>
  execFileSync('git', args, {
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: gitDir, GIT_DIR: gitDir, ...ENV },
    input,
    maxBuffer: 64 * 1024 * 1024,
  })
    .toString('utf8')
    .trim();

const md = (name: string): string => `---\nname: ${name}\ndescription: The ${name} skill.\n---\n# ${name}\n`;

/** A tree made from `entries` (path -> bytes, or [mode, oid] for links and gitlinks), built bottom-up with mktree. */
function tree(gitDir: string, entries: Record<string, string | Buffer | [string, string]>): string {
  const top: Record<string, string | Buffer | [string, string]> = {};
  const sub = new Map<string, Record<string, string | Buffer | [string, string]>>();
  for (const [path, value] of Object.entries(entries)) {
    const slash = path.indexOf('/');
    if (slash < 0) top[path] = value;
    else {
      const dir = path.slice(0, slash);
      if (!sub.has(dir)) sub.set(dir, {});
      sub.get(dir)![path.slice(slash + 1)] = value;
    }
  }
  const lines: string[] = [];
  for (const [name, value] of Object.entries(top)) {
    if (Array.isArray(value)) lines.push(`${value[0]} ${value[0] === '160000' ? 'commit' : 'blob'} ${value[1]}\t${name}`);
    else lines.push(`100644 blob ${git(gitDir, ['hash-object', '-w', '--stdin'], value)}\t${name}`);
  }
  for (const [name, inner] of sub) lines.push(`040000 tree ${tree(gitDir, inner)}\t${name}`);
  return git(gitDir, ['mktree', '-z'], lines.map((l) => `${l}\0`).join(''));
}

/** A bare repository with one commit of `entries` on main (HEAD); returns its dir and URL. */
function repoWith(entries: Record<string, string | Buffer | [string, string]>): {
  dir: string;
  url: string;
  commit: (e: typeof entries, parent?: string) => string;
} {
  const dir = join(tempDir('pull-git-src'), 'repo.git');
  git(dir, ['init', '--bare', '-q', '-b', 'main', dir]);
  const commit = (e: typeof entries, parent?: string): string => {
    const sha = git(dir, ['commit-tree', tree(dir, e), '-m', 'c', ...(parent ? ['-p', parent] : [])]);
    git(dir, ['update-ref', 'refs/heads/main', sha]);
    return sha;
  };
  commit(entries);
  return { dir, url: `file://${dir}`, commit };
}

const TWO = {
  'README.md': '# a collection\n',
  'skills/alpha/SKILL.md': md('alpha'),
  'skills/alpha/refs/notes.md': 'alpha notes\n',
  'skills/beta/SKILL.md': md('beta'),
  'skills/beta/run.sh': '#!/bin/sh\necho beta\n',
};

describe('pull --git: the happy path', () => {
  test('two skills under skills/ arrive byte for byte; the lock records the source, the commit and every digest', async () => {
    const repo = repoWith({ ...TWO });
    const head = git(repo.dir, ['rev-parse', 'main']);
    const to = join(tempDir('pull-git-to'), 'skills');
    const run = await runPull(['--to', to, '--git', repo.url]);
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(run.lines.map((l) => `${l.kind} ${l.name}`)).toEqual(['added alpha', 'added beta']);
    expect(filesUnder(to)).toEqual(['.skill-mcp-lock.json', 'alpha/SKILL.md', 'alpha/refs/notes.md', 'beta/SKILL.md', 'beta/run.sh']);
    expect(readFileSync(join(to, 'beta/run.sh'), 'utf8')).toBe(TWO['skills/beta/run.sh']);
    const lock = readLockFile(to) as unknown as {
      skills: Record<string, { source: unknown; commit: string; via: string; uri: string; files: Record<string, string> }>;
    };
    expect(lock.skills['alpha']!.source).toEqual({ git: repo.url, ref: 'HEAD', path: '' });
    expect(lock.skills['alpha']!.commit).toBe(head);
    expect(lock.skills['alpha']!.via).toBe('git');
    expect(lock.skills['alpha']!.uri).toBe('skills/alpha/SKILL.md');
    expect(lock.skills['alpha']!.files).toEqual({
      'SKILL.md': sha256(Buffer.from(md('alpha'))),
      'refs/notes.md': sha256(Buffer.from('alpha notes\n')),
    });
  });

  test('--path and --skill pick one skill of a folder; --ref names a branch', async () => {
    const repo = repoWith({
      'packs/one/alpha/SKILL.md': md('alpha'),
      'packs/one/beta/SKILL.md': md('beta'),
      'other/gamma/SKILL.md': md('gamma'),
    });
    const to = join(tempDir('pull-git-to'), 'skills');
    const run = await runPull(['--to', to, '--git', repo.url, '--ref', 'main', '--path', 'packs/one', '--skill', 'beta']);
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(filesUnder(to)).toEqual(['.skill-mcp-lock.json', 'beta/SKILL.md']);
    expect(readLockFile(to).skills['beta']!.source as unknown).toEqual({ git: repo.url, ref: 'main', path: 'packs/one' });
  });

  test('credentials in an https URL never reach the report or the disk when the fetch fails', async () => {
    const to = join(tempDir('pull-git-to'), 'skills');
    const run = await runPull(['--to', to, '--git', 'https://user:SECRET-TOKEN@127.0.0.1:1/x.git']);
    expect(run.code).toBe(1);
    expect(run.stdout + run.stderr).not.toContain('SECRET-TOKEN');
    expect(existsSync(join(to, '.skill-mcp-lock.json'))).toBe(false);
  });
});

describe('pull --git: SKILL_MCP_PULL_ALLOW', () => {
  test('a repository outside the allow-list is refused before any fetch; a URL prefix at a "/" boundary allows it', async () => {
    const repo = repoWith({ ...TWO });
    const to = join(tempDir('pull-git-to'), 'skills');
    const parent = repo.url.slice(0, repo.url.lastIndexOf('/'));
    const denied = await runPull(['--to', to, '--git', repo.url], { SKILL_MCP_PULL_ALLOW: `github.com, ${parent}-other/` });
    expect(denied.code).toBe(1);
    expect(denied.stderr).toContain(`${repo.url} is not allowed by SKILL_MCP_PULL_ALLOW`);
    expect(existsSync(to)).toBe(false);
    const allowed = await runPull(['--to', to, '--git', repo.url], { SKILL_MCP_PULL_ALLOW: `github.com, ${parent}/` });
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(filesUnder(to)).toContain('alpha/SKILL.md');
  });
});

describe('pull --git: pins', () => {
  test('a new commit moves the pin without --locked; --locked installs the locked commit', async () => {
    const repo = repoWith({ ...TWO });
    const first = git(repo.dir, ['rev-parse', 'main']);
    const to = join(tempDir('pull-git-to'), 'skills');
    expect((await runPull(['--to', to, '--git', repo.url])).code).toBe(0);
    const second = repo.commit({ ...TWO, 'skills/alpha/SKILL.md': `${md('alpha')}\nv2\n` }, first);
    // --locked while upstream has moved: the old commit is what is installed (unchanged here).
    const locked = await runPull(['--to', to, '--git', repo.url, '--locked']);
    expect(locked.code, locked.stderr + locked.stdout).toBe(0);
    expect(locked.lines.map((l) => `${l.kind} ${l.name}`)).toEqual(['unchanged alpha', 'unchanged beta']);
    expect(readLockFile(to).skills['alpha']!['commit' as 'uri']).toBe(first);
    // Without --locked the ref is resolved again: alpha updates, the pin moves to the new commit.
    const moved = await runPull(['--to', to, '--git', repo.url]);
    expect(moved.code, moved.stderr + moved.stdout).toBe(0);
    expect(moved.lines.map((l) => `${l.kind} ${l.name}`)).toEqual(['updated alpha', 'unchanged beta']);
    expect(readFileSync(join(to, 'alpha/SKILL.md'), 'utf8')).toContain('v2');
    expect(readLockFile(to).skills['alpha']!['commit' as 'uri']).toBe(second);
    expect(readLockFile(to).skills['beta']!['commit' as 'uri']).toBe(second);
    // A fresh folder with the first lock and --locked gets the first commit's bytes.
    const other = join(tempDir('pull-git-to'), 'skills');
    mkdirSync(other);
    const oldLock = readLockFile(to);
    for (const s of Object.values(oldLock.skills)) Object.assign(s, { commit: first, files: s.files });
    oldLock.skills['alpha']!.files['SKILL.md'] = sha256(Buffer.from(md('alpha')));
    writeFileSync(join(other, '.skill-mcp-lock.json'), JSON.stringify(oldLock));
    const again = await runPull(['--to', other, '--git', repo.url, '--locked', '--force']);
    expect(again.code, again.stderr + again.stdout).toBe(0);
    expect(readFileSync(join(other, 'alpha/SKILL.md'), 'utf8')).toBe(md('alpha'));
  });

  test('a force-push that removes the pinned commit: --locked fails clearly and the folder is unchanged', async () => {
    const repo = repoWith({ ...TWO });
    const first = git(repo.dir, ['rev-parse', 'main']);
    const to = join(tempDir('pull-git-to'), 'skills');
    expect((await runPull(['--to', to, '--git', repo.url])).code).toBe(0);
    const before = filesUnder(to).map((f) => `${f}:${sha256(readFileSync(join(to, f)))}`);
    repo.commit({ 'skills/alpha/SKILL.md': md('rewritten') });
    git(repo.dir, ['reflog', 'expire', '--expire=now', '--all']);
    git(repo.dir, ['gc', '-q', '--prune=now']);
    expect(() => git(repo.dir, ['cat-file', '-e', first])).toThrow();
    const run = await runPull(['--to', to, '--git', repo.url, '--locked']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`the locked commit ${first} is gone from ${repo.url}`);
    expect(filesUnder(to).map((f) => `${f}:${sha256(readFileSync(join(to, f)))}`)).toEqual(before);
  });
});

describe('pull --git: a hostile repository', () => {
  test('attack: dot, backslash and control-character names, a link to /etc/passwd, a submodule, an LFS pointer, a huge file', async () => {
    const repo = repoWith({});
    const link = git(repo.dir, ['hash-object', '-w', '--stdin'], '/etc/passwd');
    const huge = Buffer.alloc(17 * 1024 * 1024, 'a');
    repo.commit({
      'good/SKILL.md': md('good'),
      'good/.hidden': 'hidden\n',
      'good/passwd': ['120000', link],
      'good/vendor': ['160000', git(repo.dir, ['rev-parse', 'main'])],
      'good/big.bin': `version https://git-lfs.github.com/spec/v1\noid sha256:${'0'.repeat(64)}\nsize 123\n`,
      '.hidden/SKILL.md': md('hidden'),
      'back\\slash/SKILL.md': md('back'),
      'ctl/SKILL.md': md('ctl'),
      'ctl/a\u0001b.md': 'x',
      'huge/SKILL.md': md('huge'),
      'huge/blob.bin': huge,
      'linked/SKILL.md': ['120000', link],
    });
    const base = tempDir('pull-git-to');
    const to = join(base, 'skills');
    const run = await runPull(['--to', to, '--git', repo.url]);
    expect(run.code).toBe(1);
    const line = (name: string): string | undefined =>
      run.stdout
        .split('\n')
        .map((l) => /^(?:refused|skipped)\s+(.+?): (.*)$/.exec(l))
        .find((m) => m?.[1] === name)?.[2];
    expect(filesUnder(to)).toEqual(['.skill-mcp-lock.json', 'good/SKILL.md']);
    expect(line('good/passwd')).toMatch(/a symbolic link; links are never materialised/);
    expect(line('good/vendor')).toMatch(/a submodule \(gitlink\); submodules are never fetched/);
    expect(line('good/big.bin')).toMatch(/a Git LFS pointer/);
    expect(line('good/.hidden')).toMatch(/a dot-file; hidden files are never pulled/);
    expect(line('.hidden')).toMatch(/hidden directories are not served/);
    expect(line('back\\slash')).toMatch(/is not usable/);
    expect(line('ctl')).toMatch(/refused/);
    expect(line('huge')).toMatch(/more than 16777216 bytes .*nothing was read/);
    expect(line('linked')).toMatch(/lists no SKILL.md/);
    expect(run.stdout).toMatch(/^pull: 1 added, 0 updated, 0 unchanged, 5 refused, 4 files not pulled$/m);
    expect(filesUnder(base)).toEqual(filesUnder(to).map((f) => `skills/${f}`));
  });

  test('attack: a .gitattributes filter and a post-checkout hook in the repository never run', async () => {
    const marker = join(tempDir('pull-git-marker'), 'ran');
    const repo = repoWith({
      '.gitattributes': '* filter=evil\n',
      'evil/SKILL.md': md('evil'),
      'evil/.gitattributes': '* filter=evil\n',
    });
    const hook = `#!/bin/sh\necho ran > ${marker}\n`;
    for (const name of ['post-checkout', 'post-merge', 'reference-transaction', 'pre-upload']) {
      writeFileSync(join(repo.dir, 'hooks', name), hook, { mode: 0o755 });
    }
    git(repo.dir, ['config', 'filter.evil.smudge', `sh -c 'echo ran > ${marker}; cat'`]);
    git(repo.dir, ['config', 'filter.evil.process', `sh -c 'echo ran > ${marker}'`]);
    const to = join(tempDir('pull-git-to'), 'skills');
    const run = await runPull(['--to', to, '--git', repo.url]);
    expect(run.code).toBe(1); // the dot-file is reported as not pulled
    expect(readFileSync(join(to, 'evil/SKILL.md'), 'utf8')).toBe(md('evil'));
    expect(existsSync(marker)).toBe(false);
  });
});
