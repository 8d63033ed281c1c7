/**
 * `skill-mcp pull --index` against a discovery index served on loopback by a small HTTP server
 * made here: both v0.2.0 shapes (`$schema` with skill-md, .tar.gz and .zip artifacts; `version` with a
 * file list, fetched one by one or as a package), the lock's digests and --locked; and the
 * hostile cases: a digest that does not match (the whole pull refused, nothing written), links
 * and traversal in archives (tar and zip), a zip whose local headers tell another story, dot names, a huge answer, plain http elsewhere, redirects outside
 * SKILL_MCP_PULL_ALLOW, indexes without digests.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { skillLevelDigest } from '../../cli/pull/index-plan.js';
import { tgz, type TarEntry } from '../pull/tar-write.js';
import { zip as makeZip } from '../pull/zip-write.js';
import { tempDir } from './harness.js';
import { filesUnder, readLockFile, runPull } from './pull-run.js';

const sha = (b: string | Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;
const md = (name: string, extra = ''): string => `---\nname: ${name}\ndescription: The ${name} skill.\n---\n# ${name}\n${extra}`;
const SCHEMA = 'https://schemas.agentskills.io/discovery/0.2.0/schema.json';
const WK = '/.well-known/agent-skills';

interface Route {
  status?: number;
  body?: string | Buffer;
  type?: string;
  location?: string;
  /** Send a Content-Length header (otherwise the body is streamed chunked). */
  declare?: boolean;
}
const routes = new Map<string, Route>();
const hits = new Map<string, number>();
let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const route = routes.get(path);
    if (!route) return void res.writeHead(404).end('no');
    if (route.location) return void res.writeHead(route.status ?? 302, { location: route.location }).end();
    const length = route.declare ? { 'content-length': String(Buffer.byteLength(route.body ?? '')) } : {};
    res.writeHead(route.status ?? 200, { 'content-type': route.type ?? 'application/octet-stream', ...length });
    res.end(route.body ?? '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  routes.clear();
  hits.clear();
});

/** Publishes an index of `$schema` form: a skill-md skill and archive skills. */
function publish(skills: { name: string; md?: string; archive?: Buffer; zip?: Buffer; digest?: string; type?: string }[]): void {
  const entries = skills.map((s) => {
    if (s.archive) {
      routes.set(`${WK}/${s.name}.tar.gz`, { body: s.archive, type: 'application/gzip' });
      return {
        name: s.name,
        type: s.type ?? 'archive',
        description: 'x',
        url: `${WK}/${s.name}.tar.gz`,
        digest: s.digest ?? sha(s.archive),
      };
    }
    if (s.zip) {
      routes.set(`${WK}/${s.name}.zip`, { body: s.zip, type: 'application/zip' });
      return { name: s.name, type: s.type ?? 'archive', description: 'x', url: `${WK}/${s.name}.zip`, digest: s.digest ?? sha(s.zip) };
    }
    const text = s.md ?? md(s.name);
    routes.set(`${WK}/${s.name}/SKILL.md`, { body: text, type: 'text/markdown' });
    return { name: s.name, type: s.type ?? 'skill-md', description: 'x', url: `${WK}/${s.name}/SKILL.md`, digest: s.digest ?? sha(text) };
  });
  routes.set(`${WK}/index.json`, { body: JSON.stringify({ $schema: SCHEMA, skills: entries }), type: 'application/json' });
}

const BIG: TarEntry[] = [
  { name: './', type: '5' },
  { name: './SKILL.md', body: md('big') },
  { name: './scripts/', type: '5' },
  { name: './scripts/run.sh', body: '#!/bin/sh\necho big\n' },
  { name: './references/notes.md', body: 'notes\n' },
];

const snapshot = (dir: string): string[] => (existsSync(dir) ? filesUnder(dir).map((f) => `${f}:${sha(readFileSync(join(dir, f)))}`) : []);

describe('pull --index: the $schema form (skill-md and .tar.gz archives)', () => {
  test('both kinds arrive byte for byte; the lock records the index, the digest and every file; a rerun downloads nothing', async () => {
    const archive = tgz(BIG);
    publish([{ name: 'big', archive }, { name: 'small' }]);
    const to = join(tempDir('pull-index'), 'skills');
    const run = await runPull(['--to', to, '--index', base]);
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(run.lines.map((l) => `${l.kind} ${l.name}`)).toEqual(['added big', 'added small']);
    expect(filesUnder(to).filter((f) => !f.startsWith('.skill-mcp-store/'))).toEqual(expect.arrayContaining(['.skill-mcp-lock.json']));
    expect(readFileSync(join(to, 'big/scripts/run.sh'), 'utf8')).toBe('#!/bin/sh\necho big\n');
    expect(readFileSync(join(to, 'small/SKILL.md'), 'utf8')).toBe(md('small'));
    const lock = readLockFile(to).skills as unknown as Record<
      string,
      { source: unknown; via: string; digest: string; uri: string; files: Record<string, string> }
    >;
    expect(lock['big']).toMatchObject({
      source: { index: `${base}${WK}/index.json` },
      via: 'well-known-index',
      digest: sha(archive),
      uri: `${base}${WK}/big.tar.gz`,
    });
    expect(lock['big']!.files).toEqual({
      'SKILL.md': sha(md('big')),
      'references/notes.md': sha('notes\n'),
      'scripts/run.sh': sha('#!/bin/sh\necho big\n'),
    });
    expect(lock['small']!.digest).toBe(sha(md('small')));
    hits.clear();
    const again = await runPull(['--to', to, '--index', base]);
    expect(again.code, again.stderr + again.stdout).toBe(0);
    expect(again.lines.map((l) => `${l.kind} ${l.name}`)).toEqual(['unchanged big', 'unchanged small']);
    expect([...hits.keys()], 'only the index is read when the digests are the locked ones').toEqual([`${WK}/index.json`]);
  });

  test('--index https://host/some/path is a usage error; a URL ending in .json is the index itself', async () => {
    publish([{ name: 'small' }]);
    const to = join(tempDir('pull-index'), 'skills');
    const bad = await runPull(['--to', to, '--index', `${base}/docs`]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('give the site');
    routes.set('/elsewhere/skills.json', routes.get(`${WK}/index.json`)!);
    const run = await runPull(['--to', to, '--index', `${base}/elsewhere/skills.json`]);
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(join(to, 'small/SKILL.md'), 'utf8')).toBe(md('small'));
  });
});

describe('pull --index: the file-list form (version 0.2.0)', () => {
  const FILES = { 'SKILL.md': md('listed'), 'refs/a.md': 'a\n' };
  const entry = (over: Record<string, unknown> = {}) => {
    const files = Object.entries(FILES).map(([path, body]) => ({ path, digest: sha(body) }));
    return { name: 'listed', description: 'x', digest: skillLevelDigest(files), files, ...over };
  };

  test('files fetched one by one, each digest and the skill-level digest checked', async () => {
    for (const [path, body] of Object.entries(FILES)) routes.set(`${WK}/listed/${path}`, { body });
    routes.set(`${WK}/index.json`, { body: JSON.stringify({ version: '0.2.0', skills: [entry()] }) });
    const to = join(tempDir('pull-index'), 'skills');
    const run = await runPull(['--to', to, '--index', base]);
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(readFileSync(join(to, 'listed/refs/a.md'), 'utf8')).toBe('a\n');
    expect((readLockFile(to).skills['listed'] as unknown as { digest: string }).digest).toBe(entry().digest);
  });

  test('the worked example of the draft gives its skill-level digest', () => {
    expect(
      skillLevelDigest([
        { path: 'scripts/run.sh', digest: sha('#!/bin/sh\n') },
        { path: 'SKILL.md', digest: sha('# Hello\n') },
      ]),
    ).toBe('sha256:34f7a8c484e9991f3e71a309f31332d6335efc01f544105c4185a7c4ab12eb1e');
  });

  test('a package is unpacked and must hold exactly the listed files', async () => {
    const pkg = tgz(Object.entries(FILES).map(([name, body]) => ({ name, body })));
    routes.set(`${WK}/listed.tar.gz`, { body: pkg });
    routes.set(`${WK}/index.json`, {
      body: JSON.stringify({ version: '0.2.0', skills: [entry({ package: { url: `${WK}/listed.tar.gz`, digest: sha(pkg) } })] }),
    });
    const to = join(tempDir('pull-index'), 'skills');
    const run = await runPull(['--to', to, '--index', base]);
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(hits.get(`${WK}/listed/SKILL.md`)).toBeUndefined();
    const extra = tgz([...Object.entries(FILES).map(([name, body]) => ({ name, body })), { name: 'unlisted.sh', body: 'x' }]);
    routes.set(`${WK}/listed.tar.gz`, { body: extra });
    routes.set(`${WK}/index.json`, {
      body: JSON.stringify({ version: '0.2.0', skills: [entry({ package: { url: `${WK}/listed.tar.gz`, digest: sha(extra) } })] }),
    });
    const refused = await runPull(['--to', join(tempDir('pull-index'), 'skills'), '--index', base]);
    expect(refused.code).toBe(1);
    expect(refused.lines.find((l) => l.name === 'listed')?.text).toMatch(/holds "unlisted.sh", which the index does not list/);
  });

  test('attack: file digests that do not add up to the skill-level digest are refused before any file is fetched', async () => {
    for (const [path, body] of Object.entries(FILES)) routes.set(`${WK}/listed/${path}`, { body });
    routes.set(`${WK}/index.json`, { body: JSON.stringify({ version: '0.2.0', skills: [entry({ digest: sha('other') })] }) });
    const to = join(tempDir('pull-index'), 'skills');
    const run = await runPull(['--to', to, '--index', base]);
    expect(run.code).toBe(1);
    expect(run.lines[0]?.text).toMatch(/files' digests give the skill digest/);
    expect(hits.get(`${WK}/listed/SKILL.md`)).toBeUndefined();
  });
});

describe('pull --index: a hostile index', () => {
  test('attack: one digest that does not match refuses the whole pull; the folder (and the lock) stay as they were', async () => {
    publish([{ name: 'good' }, { name: 'other' }]);
    const to = join(tempDir('pull-index'), 'skills');
    expect((await runPull(['--to', to, '--index', base])).code).toBe(0);
    const before = snapshot(to);
    publish([
      { name: 'good', md: md('good', 'v2\n') },
      { name: 'other', md: md('other', 'v2\n'), digest: sha('not these bytes') },
      { name: 'new' },
    ]);
    const run = await runPull(['--to', to, '--index', base]);
    expect(run.code).toBe(1);
    expect(run.lines.find((l) => l.name === 'other')?.text).toMatch(/does not match its digest in the index/);
    expect(run.stdout).toMatch(/^held\s+good: fetched and checked, not written/m);
    expect(run.stdout).toMatch(/nothing was written/);
    expect(snapshot(to)).toEqual(before);
  });

  test.each([
    [
      'a symbolic link to /etc/passwd',
      [
        { name: 'SKILL.md', body: md('a') },
        { name: 'passwd', type: '2', linkname: '/etc/passwd' },
      ],
      /"passwd" is a symbolic link/,
    ],
    [
      'a hard link',
      [
        { name: 'SKILL.md', body: md('a') },
        { name: 'h', type: '1', linkname: 'SKILL.md' },
      ],
      /"h" is a hard link/,
    ],
    [
      'a device',
      [
        { name: 'SKILL.md', body: md('a') },
        { name: 'null', type: '3' },
      ],
      /"null" is a character device/,
    ],
    [
      'traversal',
      [
        { name: 'SKILL.md', body: md('a') },
        { name: '../../evil.sh', body: 'x' },
      ],
      /the archive's the file path "..\/..\/evil.sh" is refused/,
    ],
    [
      'an absolute path',
      [
        { name: 'SKILL.md', body: md('a') },
        { name: '/etc/cron.d/x', body: 'x' },
      ],
      /"\/etc\/cron.d\/x" is refused/,
    ],
    [
      'a backslash name',
      [
        { name: 'SKILL.md', body: md('a') },
        { name: 'a\\..\\b', body: 'x' },
      ],
      /is refused/,
    ],
  ] as [string, TarEntry[], RegExp][])(
    'attack: an archive holding %s is refused whole and nothing is written',
    async (_what, entries, why) => {
      publish([{ name: 'a', archive: tgz(entries) }, { name: 'fine' }]);
      const base2 = tempDir('pull-index');
      const to = join(base2, 'skills');
      const run = await runPull(['--to', to, '--index', base]);
      expect(run.code).toBe(1);
      expect(run.lines.find((l) => l.name === 'a')?.text).toMatch(why);
      expect(snapshot(base2).filter((f) => !f.startsWith('skills/.skill-mcp-store/'))).toEqual([]);
      expect(existsSync(join(base2, 'evil.sh'))).toBe(false);
    },
  );

  test('a dot-file in an archive is reported and not written; dot and traversal names are refused', async () => {
    publish([
      {
        name: 'a',
        archive: tgz([
          { name: 'SKILL.md', body: md('a') },
          { name: '.env', body: 'SECRET=1' },
        ]),
      },
    ]);
    const to = join(tempDir('pull-index'), 'skills');
    const run = await runPull(['--to', to, '--index', base]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^skipped\s+a\/\.env: a dot-file; hidden files are never pulled/m);
    expect(filesUnder(join(to, 'a'))).toEqual(['SKILL.md']);
    routes.set(`${WK}/index.json`, {
      body: JSON.stringify({
        $schema: SCHEMA,
        skills: [
          { name: '..', type: 'skill-md', url: '/x', digest: sha('x') },
          { name: '.skill-mcp-lock.json', type: 'skill-md', url: '/x', digest: sha('x') },
        ],
      }),
    });
    const names = await runPull(['--to', join(tempDir('pull-index'), 'skills'), '--index', base]);
    expect(names.code).toBe(1);
    expect(names.lines.map((l) => l.kind)).toEqual(['refused', 'refused']);
  });

  test('attack: a huge answer stops at the cap, declared or streamed', async () => {
    const huge = Buffer.alloc(17 * 1024 * 1024, 'a');
    publish([{ name: 'a', md: huge.toString() }]);
    const to = join(tempDir('pull-index'), 'skills');
    const streamed = await runPull(['--to', to, '--index', base]);
    expect(streamed.code).toBe(1);
    expect(streamed.lines[0]?.text).toMatch(/SKILL.md is over the 16777216 bytes a pull accepts/);
    routes.get(`${WK}/a/SKILL.md`)!.declare = true;
    const declared = await runPull(['--to', to, '--index', base]);
    expect(declared.lines[0]?.text).toMatch(/SKILL.md is 17825792 bytes, over the 16777216 a pull accepts; nothing was read/);
    expect(existsSync(join(to, 'a'))).toBe(false);
  });

  test('plain http is refused off loopback, before anything is fetched', async () => {
    const to = join(tempDir('pull-index'), 'skills');
    const run = await runPull(['--to', to, '--index', 'http://skills.example.com']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('is plain http; only https is fetched');
  });

  test('SKILL_MCP_PULL_ALLOW: an index host outside it is refused; a redirect to a URL outside it is refused', async () => {
    publish([{ name: 'a' }]);
    const to = join(tempDir('pull-index'), 'skills');
    const denied = await runPull(['--to', to, '--index', base], { SKILL_MCP_PULL_ALLOW: 'github.com' });
    expect(denied.code).toBe(1);
    expect(denied.stderr).toContain('is not allowed by SKILL_MCP_PULL_ALLOW');
    expect(hits.size).toBe(0);
    routes.set(`${WK}/a/SKILL.md`, { location: `${base}/other/SKILL.md` });
    routes.set('/other/SKILL.md', { body: md('a') });
    const redirected = await runPull(['--to', to, '--index', base], { SKILL_MCP_PULL_ALLOW: `${base}/.well-known/` });
    expect(redirected.code).toBe(1);
    expect(redirected.lines[0]?.text).toMatch(/a redirect went to .*other\/SKILL.md is not allowed by SKILL_MCP_PULL_ALLOW/);
    expect(hits.get('/other/SKILL.md')).toBeUndefined();
  });

  test('an index without digests (v0.1.0), or of an unknown $schema, is refused whole', async () => {
    routes.set(`${WK}/index.json`, { body: JSON.stringify({ skills: [{ name: 'a', description: 'x', files: ['SKILL.md'] }] }) });
    const to = join(tempDir('pull-index'), 'skills');
    const old = await runPull(['--to', to, '--index', base]);
    expect(old.code).toBe(1);
    expect(old.stderr).toContain('a v0.1.0 index, which publishes no digests');
    routes.set(`${WK}/index.json`, {
      body: JSON.stringify({ $schema: 'https://schemas.agentskills.io/discovery/9.0.0/schema.json', skills: [] }),
    });
    const unknown = await runPull(['--to', to, '--index', base]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('which this pull does not know');
    expect(existsSync(join(to, '.skill-mcp-lock.json'))).toBe(false);
  });

  test('an unknown type is refused with its reason; an archive that is neither gzip nor zip too', async () => {
    publish([{ name: 'a', type: 'wheel' }]);
    const to = join(tempDir('pull-index'), 'skills');
    const run = await runPull(['--to', to, '--index', base]);
    expect(run.lines[0]?.text).toMatch(/its type "wheel" is not skill-md or archive/);
    routes.set(`${WK}/z.zip`, { body: 'PK', type: 'application/zip' });
    routes.set(`${WK}/index.json`, {
      body: JSON.stringify({ $schema: SCHEMA, skills: [{ name: 'z', type: 'archive', url: `${WK}/z.zip`, digest: sha('PK') }] }),
    });
    const junk = await runPull(['--to', to, '--index', base]);
    expect(junk.code).toBe(1);
    expect(junk.lines[0]?.text).toMatch(/is neither a .tar.gz nor a .zip/);
  });
});

describe('pull --index: .zip archives', () => {
  const ZIPPED = [
    { name: 'scripts/', method: 0 },
    { name: 'SKILL.md', body: md('zipped') },
    { name: 'scripts/run.sh', body: '#!/bin/sh\necho zipped\n', mode: 0o100755 },
    { name: 'references/notes.md', body: 'notes\n', method: 0 },
    { name: 'references/more.md', body: 'more\n', descriptor: true },
  ];

  test('a .zip archive skill arrives byte for byte beside a .tar.gz one; the lock records its digest and every file', async () => {
    const archive = makeZip(ZIPPED);
    publish([
      { name: 'zipped', zip: archive },
      { name: 'big', archive: tgz(BIG) },
    ]);
    const to = join(tempDir('pull-index'), 'skills');
    const run = await runPull(['--to', to, '--index', base]);
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(run.lines.map((l) => `${l.kind} ${l.name}`)).toEqual(['added big', 'added zipped']);
    expect(filesUnder(join(to, 'zipped'))).toEqual(['SKILL.md', 'references/more.md', 'references/notes.md', 'scripts/run.sh']);
    expect(readFileSync(join(to, 'zipped/scripts/run.sh'), 'utf8')).toBe('#!/bin/sh\necho zipped\n');
    expect(readFileSync(join(to, 'zipped/references/more.md'), 'utf8')).toBe('more\n');
    const lock = readLockFile(to).skills as unknown as Record<string, { digest: string; uri: string; files: Record<string, string> }>;
    expect(lock['zipped']).toMatchObject({ digest: sha(archive), uri: `${base}${WK}/zipped.zip` });
    expect(lock['zipped']!.files).toEqual({
      'SKILL.md': sha(md('zipped')),
      'references/more.md': sha('more\n'),
      'references/notes.md': sha('notes\n'),
      'scripts/run.sh': sha('#!/bin/sh\necho zipped\n'),
    });
  });

  test("a zip made by Python's zipfile, served as application/octet-stream under a name without .zip (the bytes decide)", async () => {
    const script =
      "import io,sys,zipfile\nb=io.BytesIO()\nwith zipfile.ZipFile(b,'w',zipfile.ZIP_DEFLATED) as z:\n  z.writestr('SKILL.md', sys.argv[1])\n  z.writestr('refs/a.md', 'a\\n')\nsys.stdout.buffer.write(b.getvalue())\n";
    const archive = execFileSync('python3', ['-c', script, md('py')]);
    routes.set(`${WK}/py-artifact`, { body: archive });
    routes.set(`${WK}/index.json`, {
      body: JSON.stringify({ $schema: SCHEMA, skills: [{ name: 'py', type: 'archive', url: `${WK}/py-artifact`, digest: sha(archive) }] }),
    });
    const to = join(tempDir('pull-index'), 'skills');
    const run = await runPull(['--to', to, '--index', base]);
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(readFileSync(join(to, 'py/SKILL.md'), 'utf8')).toBe(md('py'));
    expect(readFileSync(join(to, 'py/refs/a.md'), 'utf8')).toBe('a\n');
  });

  test.each([
    [
      'a symbolic link to /etc/passwd',
      [
        { name: 'SKILL.md', body: md('z') },
        { name: 'passwd', body: '/etc/passwd', method: 0, mode: 0o120777 },
      ],
      /"passwd" is a symbolic link/,
    ],
    [
      'traversal',
      [
        { name: 'SKILL.md', body: md('z') },
        { name: '../../evil.sh', body: 'x' },
      ],
      /the name "..\/..\/evil.sh" is refused/,
    ],
    [
      'a local header naming another file than the directory (two archives in one)',
      [
        { name: 'SKILL.md', body: md('z') },
        { name: 'notes.md', body: 'x', local: { name: 'evil.sh' } },
      ],
      /local header and its central-directory entry disagree on the name/,
    ],
    [
      'entries sharing bytes (the overlap zip bomb)',
      [
        { name: 'SKILL.md', body: md('z') },
        { name: 'SKILL.md', body: md('z') },
      ],
      /overlaps the entry before it/,
    ],
  ] as [string, Parameters<typeof makeZip>[0], RegExp][])(
    'attack: a zip holding %s is refused whole and nothing is written',
    async (what, entries, why) => {
      const archive = makeZip(entries, what.includes('overlap') ? { offsets: (o) => [o[0]!, o[0]!] } : {});
      publish([{ name: 'z', zip: archive }, { name: 'fine' }]);
      const base2 = tempDir('pull-index');
      const to = join(base2, 'skills');
      const run = await runPull(['--to', to, '--index', base]);
      expect(run.code).toBe(1);
      expect(run.lines.find((l) => l.name === 'z')?.text).toMatch(why);
      expect(run.lines.find((l) => l.name === 'z')?.text).toMatch(/the zip archive .* is refused/);
      expect(snapshot(base2).filter((f) => !f.startsWith('skills/.skill-mcp-store/'))).toEqual([]);
      expect(existsSync(join(base2, 'evil.sh'))).toBe(false);
    },
  );

  test('a dot-file in a zip is reported and not written, as for tar', async () => {
    publish([
      {
        name: 'z',
        zip: makeZip([
          { name: 'SKILL.md', body: md('z') },
          { name: '.env', body: 'SECRET=1' },
        ]),
      },
    ]);
    const to = join(tempDir('pull-index'), 'skills');
    const run = await runPull(['--to', to, '--index', base]);
    expect(run.stdout).toMatch(/^skipped\s+z\/\.env: a dot-file; hidden files are never pulled/m);
    expect(filesUnder(join(to, 'z'))).toEqual(['SKILL.md']);
  });
});

describe('pull --index --locked', () => {
  test('installs exactly the locked digests; fails, changing nothing, once the index publishes others', async () => {
    publish([{ name: 'a' }]);
    const to = join(tempDir('pull-index'), 'skills');
    expect((await runPull(['--to', to, '--index', base])).code).toBe(0);
    const other = join(tempDir('pull-index'), 'skills');
    mkdirSync(other);
    writeFileSync(join(other, '.skill-mcp-lock.json'), readFileSync(join(to, '.skill-mcp-lock.json')));
    const fresh = await runPull(['--to', other, '--index', base, '--locked']);
    expect(fresh.code, fresh.stderr + fresh.stdout).toBe(0);
    expect(readFileSync(join(other, 'a/SKILL.md'), 'utf8')).toBe(md('a'));
    const before = snapshot(to);
    publish([{ name: 'a', md: md('a', 'moved\n') }]);
    const moved = await runPull(['--to', to, '--index', base, '--locked']);
    expect(moved.code).toBe(1);
    expect(moved.stderr).toMatch(
      /--locked: the index now publishes sha256:[0-9a-f]{64} for "a", the lock pins sha256:[0-9a-f]{64}; nothing was changed/,
    );
    expect(snapshot(to)).toEqual(before);
    const unlocked = await runPull(['--to', to, '--index', base]);
    expect(unlocked.lines.map((l) => `${l.kind} ${l.name}`)).toEqual(['updated a']);
  });
});
