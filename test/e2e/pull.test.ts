/**
 * `skill-mcp pull` against real servers: our own bin over stdio and over HTTP (with a bearer
 * token), and a bare SDK server built on `loadSkills` (bench/ref-server.ts). Skills arrive byte
 * for byte; the lockfile records source and digests; a rerun updates only what changed and says
 * so; a folder pull did not write, one changed here since, or a link is never replaced silently.
 * The hostile server's attacks are in pull-hostile.test.ts.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startHttp, type HttpServer } from '../http/harness.js';
import { REPO, VARIED_SKILLS, tempDir } from './harness.js';
import { OUR_SERVER, differenceBetween, filesUnder, fixtureSkills, readLockFile, runPull, sha256 } from './pull-run.js';

function expectAllByteExact(dir: string, fixture = fixtureSkills()): void {
  for (const [name, source] of fixture) expect(differenceBetween(source, join(dir, name)), name).toBeUndefined();
  expect(
    filesUnder(dir).filter((f) => !f.includes('/')),
    'nothing but the skills and the lock at the top',
  ).toEqual(['.skill-mcp-lock.json']);
}

describe('pull from our own server over stdio', () => {
  test('every varied skill arrives byte for byte; the lock records the command, the route and every digest; a big skill reports progress on stderr', async () => {
    const dir = join(tempDir('pull-stdio'), 'skills');
    const run = await runPull(['--to', dir, '--', ...OUR_SERVER], { SKILLS_DIR: VARIED_SKILLS });
    expect(run.code, run.stderr).toBe(0);
    expect(
      run.lines
        .filter((l) => l.kind === 'added')
        .map((l) => l.name)
        .sort(),
    ).toEqual([...fixtureSkills().keys()].sort());
    expect(run.stdout).toMatch(/^pull: 21 added, 0 updated, 0 unchanged, 0 refused$/m);
    expectAllByteExact(dir);
    const lock = readLockFile(dir);
    expect(Object.keys(lock.skills).sort()).toEqual([...fixtureSkills().keys()].sort());
    for (const [name, source] of fixtureSkills()) {
      const entry = lock.skills[name]!;
      expect(entry).toMatchObject({ source: { command: OUR_SERVER }, uri: `skill://${name}/SKILL.md`, via: 'skills-extension' });
      expect(entry.files).toEqual(Object.fromEntries(filesUnder(source).map((f) => [f, sha256(readFileSync(join(source, f)))])));
    }
    expect(run.stderr).toMatch(/pull: many-files: 16\/61 files/);
    expect(run.stderr).toMatch(/pull: many-files: 61\/61 files/);
    expect(run.stderr, 'small skills report no progress').not.toMatch(/pull: api-docs:/);
  });

  test('--skill pulls only the named skills; a name the server does not publish is refused (exit 1) and the rest still arrive', async () => {
    const dir = tempDir('pull-named');
    const run = await runPull(
      ['--skill', 'unicode-text', '--skill', 'no-such-skill', '--skill', 'layout-three', '--to', dir, '--', ...OUR_SERVER],
      { SKILLS_DIR: VARIED_SKILLS },
    );
    expect(run.code).toBe(1);
    expect(run.lines.map((l) => [l.kind, l.name]).sort()).toEqual([
      ['added', 'layout-three'],
      ['added', 'unicode-text'],
      ['refused', 'no-such-skill'],
    ]);
    expect(run.lines.find((l) => l.name === 'no-such-skill')?.text).toMatch(/does not publish a skill of that name/);
    expect(filesUnder(dir).filter((f) => !f.includes('/'))).toEqual(['.skill-mcp-lock.json']);
    expect(differenceBetween(fixtureSkills().get('unicode-text')!, join(dir, 'unicode-text'))).toBeUndefined();
  });
});

describe('running pull again', () => {
  let root: string;
  let dir: string;
  const pullAgain = (...extra: string[]) => runPull([...extra, '--to', dir, '--', ...OUR_SERVER], { SKILLS_DIR: root });

  beforeAll(async () => {
    root = tempDir('pull-source');
    cpSync(VARIED_SKILLS, root, { recursive: true });
    dir = join(tempDir('pull-again'), 'skills');
    const first = await pullAgain();
    expect(first.code, first.stderr).toBe(0);
  });

  test('with nothing changed: every skill unchanged, no folder rewritten', async () => {
    const before = statSync(join(dir, 'api-docs')).ino;
    const lockBefore = readFileSync(join(dir, '.skill-mcp-lock.json'), 'utf8');
    const run = await pullAgain();
    expect(run.code, run.stderr).toBe(0);
    expect(run.lines.every((l) => l.kind === 'unchanged')).toBe(true);
    expect(run.stdout).toMatch(/^pull: 0 added, 0 updated, 21 unchanged, 0 refused$/m);
    expect(statSync(join(dir, 'api-docs')).ino, 'the folder was not replaced').toBe(before);
    expect(readFileSync(join(dir, '.skill-mcp-lock.json'), 'utf8')).toBe(lockBefore);
  });

  test('after changes at the source: only the changed skills are updated and the report says what changed; a skill gone from the server is left in place', async () => {
    writeFileSync(join(root, 'api-docs', 'references', 'style.md'), '# Style\n\n- Shorter sentences.\n');
    writeFileSync(join(root, 'crlf-notes', 'references', 'added.txt'), 'a new file\r\n');
    rmSync(join(root, 'skills', 'zz-last'), { recursive: true });
    const untouched = statSync(join(dir, 'unicode-text')).ino;
    const run = await pullAgain();
    expect(run.code, run.stderr).toBe(0);
    const byName = Object.fromEntries(run.lines.map((l) => [l.name, l]));
    expect(byName['api-docs']).toMatchObject({ kind: 'updated', text: expect.stringMatching(/^1 of 4 files new or changed/) });
    expect(byName['crlf-notes']).toMatchObject({ kind: 'updated', text: expect.stringMatching(/^1 of 4 files new or changed/) });
    expect(byName['zz-last']).toMatchObject({
      kind: 'gone',
      text: expect.stringMatching(/no longer published by this server; .* is left as it is/),
    });
    expect(run.lines.filter((l) => l.kind === 'unchanged')).toHaveLength(18);
    expect(statSync(join(dir, 'unicode-text')).ino).toBe(untouched);
    expect(differenceBetween(join(root, 'api-docs'), join(dir, 'api-docs'))).toBeUndefined();
    expect(differenceBetween(join(root, 'crlf-notes'), join(dir, 'crlf-notes'))).toBeUndefined();
    expect(readLockFile(dir).skills['api-docs']!.files['references/style.md']).toBe(
      sha256(readFileSync(join(root, 'api-docs', 'references', 'style.md'))),
    );
    expect(existsSync(join(dir, 'zz-last', 'SKILL.md'))).toBe(true);
  });

  test('a copy edited here since the last pull is not replaced (exit 1, the edit kept); --force replaces it', async () => {
    writeFileSync(join(root, 'edge-files', 'empty.txt'), 'no longer empty\n');
    writeFileSync(join(dir, 'edge-files', 'whitespace.txt'), 'my local edit\n');
    const run = await pullAgain();
    expect(run.code).toBe(1);
    expect(run.lines.find((l) => l.name === 'edge-files')).toMatchObject({
      kind: 'refused',
      text: expect.stringMatching(/changed here since the last pull \("whitespace.txt" was edited\); --force replaces it/),
    });
    expect(readFileSync(join(dir, 'edge-files', 'whitespace.txt'), 'utf8')).toBe('my local edit\n');
    const forced = await pullAgain('--force');
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.lines.find((l) => l.name === 'edge-files')?.kind).toBe('updated');
    expect(differenceBetween(join(root, 'edge-files'), join(dir, 'edge-files'))).toBeUndefined();
  });

  test('a file added or deleted here counts as a local change too', async () => {
    writeFileSync(join(root, 'python-tool', 'examples', 'sample.csv'), 'a,b\n1,2\n');
    writeFileSync(join(dir, 'python-tool', 'mine.md'), 'my notes\n');
    rmSync(join(dir, 'deep-folders', 'a', 'top.md'));
    writeFileSync(join(root, 'deep-folders', 'a', 'b', 'c', 'd', 'mid.md'), '# mid, changed\n');
    const run = await pullAgain();
    expect(run.lines.find((l) => l.name === 'python-tool')?.text).toMatch(/\("mine.md" was added\)/);
    expect(run.lines.find((l) => l.name === 'deep-folders')?.text).toMatch(/\("a\/top.md" was deleted\)/);
    expect(readFileSync(join(dir, 'python-tool', 'mine.md'), 'utf8')).toBe('my notes\n');
  });
});

describe('what is already in the target folder', () => {
  test('a skill folder pull did not write is refused and kept; --force replaces it', async () => {
    const dir = tempDir('pull-unowned');
    mkdirSync(join(dir, 'api-docs'));
    writeFileSync(join(dir, 'api-docs', 'SKILL.md'), 'my own skill\n');
    const run = await runPull(['--skill', 'api-docs', '--to', dir, '--', ...OUR_SERVER], { SKILLS_DIR: VARIED_SKILLS });
    expect(run.code).toBe(1);
    expect(run.lines[0]).toMatchObject({
      kind: 'refused',
      name: 'api-docs',
      text: expect.stringMatching(/exists and was not written by pull .*--force replaces it/),
    });
    expect(readFileSync(join(dir, 'api-docs', 'SKILL.md'), 'utf8')).toBe('my own skill\n');
    const forced = await runPull(['--force', '--skill', 'api-docs', '--to', dir, '--', ...OUR_SERVER], { SKILLS_DIR: VARIED_SKILLS });
    expect(forced.code, forced.stderr).toBe(0);
    expect(differenceBetween(fixtureSkills().get('api-docs')!, join(dir, 'api-docs'))).toBeUndefined();
  });

  test('attack: DIR/<name> is a link to a folder elsewhere; it is never replaced or written through, even with --force', async () => {
    const dir = tempDir('pull-link');
    const elsewhere = tempDir('pull-link-target');
    writeFileSync(join(elsewhere, 'precious.txt'), 'keep me\n');
    symlinkSync(elsewhere, join(dir, 'api-docs'));
    const run = await runPull(['--force', '--skill', 'api-docs', '--to', dir, '--', ...OUR_SERVER], { SKILLS_DIR: VARIED_SKILLS });
    expect(run.code).toBe(1);
    expect(run.lines[0]).toMatchObject({
      kind: 'refused',
      name: 'api-docs',
      text: expect.stringMatching(/is a symbolic link pull did not make; pull never replaces such a link or writes through one/),
    });
    expect(filesUnder(elsewhere)).toEqual(['precious.txt']);
    expect(existsSync(join(dir, '.skill-mcp-lock.json'))).toBe(false);
  });

  test('a lockfile that is not ours stops the pull before anything is written', async () => {
    const dir = tempDir('pull-badlock');
    writeFileSync(join(dir, '.skill-mcp-lock.json'), '{"lockfileVersion": 9}');
    const run = await runPull(['--to', dir, '--', ...OUR_SERVER], { SKILLS_DIR: VARIED_SKILLS });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/is not a lockfile this version of skill-mcp writes .*move it away and pull again/);
    expect(filesUnder(dir)).toEqual(['.skill-mcp-lock.json']);
  });
});

describe('pull over Streamable HTTP with a bearer token', () => {
  const TOKEN = 'pull-test-token-0123456789';
  let http: HttpServer;
  beforeAll(async () => {
    http = await startHttp({ SKILLS_DIR: VARIED_SKILLS, SKILL_MCP_HTTP_TOKEN: TOKEN });
  });
  afterAll(async () => {
    await http?.stop();
  });

  test('without the header the server refuses the connection: exit 1, nothing written', async () => {
    const dir = tempDir('pull-http-noauth');
    const run = await runPull(['--to', dir, '--url', http.url]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/could not connect to http:\/\/127\.0\.0\.1:\d+\/mcp/);
    expect(filesUnder(dir)).toEqual([]);
  });

  test('nothing listening: the output says why the connection failed (the cause under "fetch failed"), not only that it did', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const dir = tempDir('pull-http-closed');
    const run = await runPull(['--to', dir, '--url', `http://127.0.0.1:${port}/mcp`]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`could not connect to http://127.0.0.1:${port}/mcp: fetch failed: connect ECONNREFUSED 127.0.0.1:${port}`);
    expect(filesUnder(dir)).toEqual([]);
  });

  test('with --header every varied skill arrives byte for byte; the lock records the URL and never the token', async () => {
    const dir = tempDir('pull-http');
    const run = await runPull(['--to', dir, '--url', http.url, '--header', `Authorization: Bearer ${TOKEN}`]);
    expect(run.code, run.stderr).toBe(0);
    expectAllByteExact(dir);
    const lockText = readFileSync(join(dir, '.skill-mcp-lock.json'), 'utf8');
    expect(readLockFile(dir).skills['api-docs']!.source).toEqual({ url: http.url });
    expect(lockText).not.toContain(TOKEN);
  });
});

describe('pull from a bare SDK server (loadSkills, bench/ref-server.ts)', () => {
  let refServer: string;
  beforeAll(async () => {
    refServer = join(tempDir('ref-server'), 'ref-server.mjs');
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

  test('every varied skill arrives byte for byte through skills/list and resources/read, its nested URIs (skill://skills/<name>/) included', async () => {
    const dir = tempDir('pull-ref');
    const run = await runPull(['--to', dir, '--', process.execPath, refServer], { SKILLS_DIR: VARIED_SKILLS });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(
      run.lines
        .filter((l) => l.kind === 'added')
        .map((l) => l.name)
        .sort(),
    ).toEqual([...fixtureSkills().keys()].sort());
    expectAllByteExact(dir);
    const lock = readLockFile(dir);
    expect(lock.skills['layout-three']).toMatchObject({ via: 'skills-extension', uri: 'skill://skills/layout-three/SKILL.md' });
  });
});

describe('usage', () => {
  test('--help prints the usage on stdout and exits 0; a missing --to or server is a usage error (exit 2)', async () => {
    const help = await runPull(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/skill-mcp pull \[--skill NAME\]\.\.\. --to DIR/);
    const noTo = await runPull(['--url', 'http://127.0.0.1:1/mcp']);
    expect([noTo.code, noTo.stderr]).toEqual([2, expect.stringMatching(/--to DIR is required/)]);
    const noServer = await runPull(['--to', tempDir('pull-usage')]);
    expect([noServer.code, noServer.stderr]).toEqual([2, expect.stringMatching(/name one server/)]);
    const badName = await runPull(['--skill', '../x', '--to', tempDir('pull-usage'), '--url', 'http://127.0.0.1:1/mcp']);
    expect([badName.code, badName.stderr]).toEqual([2, expect.stringMatching(/--skill: the skill name "..\/x" is not usable/)]);
  });
});
