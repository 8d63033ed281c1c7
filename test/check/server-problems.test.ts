/**
 * `skill-mcp check` reports what the server would, from the server's own code: every catalog
 * problem (one test per reason check can meet), every reason a skill is kept out of `skill://`
 * with its figure, and — checked against a real server's `skill_list` on the same folder — no
 * problem more or less than the server reports.
 */
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CATALOG_LIMITS } from '../../shared/limits.js';
import { ERAS, serve, skillList, type ProblemEntry, type Served } from '../e2e/harness.js';
import { checkJson, ofRule, skillMd, workspace, write, type JsonReport } from './harness.js';

const LONG_DESCRIPTION = `Use when ${'x'.repeat(1059)}`; // 1,068 characters

/** A root of skills with one problem each, beside one clean skill. */
function hostileRoot(): { cwd: string; root: string } {
  const cwd = workspace();
  chmodSync(cwd, 0o755); // the real server, started as root, reads it as an unprivileged uid
  const root = join(cwd, 'skills');
  write(root, {
    'good/SKILL.md': skillMd({ name: 'good' }),
    'long-desc/SKILL.md': skillMd({ name: 'long-desc', description: LONG_DESCRIPTION }),
    'Bad_Name/SKILL.md': skillMd({ name: 'Bad_Name' }),
    'renamed/SKILL.md': skillMd({ name: 'other' }),
    'broken-yaml/SKILL.md': '---\nname: broken-yaml\nname: twice\ndescription: x\n---\nbody\n',
    'bad-decl/SKILL.md': skillMd({
      name: 'bad-decl',
      extra: 'mcp-host:\n  version: 1\n  run:\n    - script: run.js\n      interpreter: node\n      timout: 5',
    }),
    'bad-decl/run.js': 'console.log(1)\n',
    'missing-script/SKILL.md': skillMd({
      name: 'missing-script',
      extra:
        'mcp-host:\n  version: 1\n  run:\n    - script: scripts/gone.js\n      interpreter: node\n    - script: scripts/dir.js\n      interpreter: node',
    }),
    'no-skill/README.md': 'not a skill\n',
    'weird%name/SKILL.md': skillMd({ name: 'weird' }),
    'bom/SKILL.md': `\uFEFF${skillMd({ name: 'bom' })}`,
    'odd-files/SKILL.md': skillMd({ name: 'odd-files' }),
    'odd-files/100%.txt': 'a name the read tools cannot carry\n',
    'compat/SKILL.md': skillMd({ name: 'compat', extra: `compatibility: ${'y'.repeat(600)}` }),
    'md-link/real.md': skillMd({ name: 'md-link' }),
  });
  mkdirSync(join(root, 'missing-script/scripts/dir.js'), { recursive: true });
  symlinkSync(join(cwd, 'elsewhere'), join(root, 'dangling'));
  mkdirSync(join(cwd, 'elsewhere-real/escaped'), { recursive: true });
  writeFileSync(join(cwd, 'elsewhere-real/escaped/SKILL.md'), skillMd({ name: 'escaped' }));
  symlinkSync(join(cwd, 'elsewhere-real/escaped'), join(root, 'escaped'));
  symlinkSync('real.md', join(root, 'md-link/SKILL.md'));
  chmodSync(root, 0o755);
  return { cwd, root };
}

let cwd: string;
let report: ReturnType<typeof checkJson>;

beforeAll(() => {
  ({ cwd } = hostileRoot());
  report = checkJson(cwd, ['skills']);
});

describe('server/* findings name what the catalog reports, where it is', () => {
  it('server/not-published: a 1,068-character description, with its figure, at the description line', () => {
    const hits = ofRule(report, 'server/not-published').filter((f) => f.skill === 'long-desc');
    expect(hits).toEqual([
      {
        ruleId: 'server/not-published',
        level: 'error',
        path: 'skills/long-desc/SKILL.md',
        line: 3,
        column: 1,
        skill: 'long-desc',
        message:
          'kept out of skill:// (served by the tools and prompts only): the description is 1068 characters long; strict hosts accept at most 1024',
      },
    ]);
  });

  it('server/not-published: one finding per reason (a name strict hosts refuse; a byte-order mark; an over-long compatibility, with its length)', () => {
    const messages = (skill: string): string[] =>
      ofRule(report, 'server/not-published')
        .filter((f) => f.skill === skill)
        .map((f) => f.message);
    expect(messages('Bad_Name')).toEqual([expect.stringContaining('the directory name "Bad_Name" is not a valid skill name')]);
    expect(messages('bom')).toEqual([expect.stringContaining('SKILL.md starts with a byte-order mark')]);
    expect(messages('compat')).toEqual([
      expect.stringContaining('frontmatter compatibility must be a string of 1-500 characters (it is 600 characters long)'),
    ]);
    expect(messages('renamed')).toEqual([
      expect.stringContaining('the frontmatter name "other" differs from the directory name "renamed"'),
    ]);
  });

  it('server/name-mismatch: a frontmatter name that differs from the directory (a warning)', () => {
    expect(ofRule(report, 'server/name-mismatch')).toMatchObject([{ level: 'warning', path: 'skills/renamed', skill: 'renamed' }]);
  });

  it('server/malformed-frontmatter: a duplicate key, at the line and column the parser names', () => {
    const [hit] = ofRule(report, 'server/malformed-frontmatter');
    expect(hit).toMatchObject({ level: 'error', path: 'skills/broken-yaml/SKILL.md', line: 3, column: 1, skill: 'broken-yaml' });
    expect(hit!.message).toBe('Map keys must be unique (line 3, column 1); the skill is not served');
  });

  it('server/declaration: an unknown key (a typo) in mcp-host, at the mcp-host line', () => {
    expect(ofRule(report, 'server/declaration')).toMatchObject([
      { level: 'error', path: 'skills/bad-decl/SKILL.md', line: 5, message: 'unknown keys ignored: mcp-host.run[0].timout' },
    ]);
  });

  it('server/declared-script-missing: a missing script and a directory, each saying what is on disk', () => {
    const hits = ofRule(report, 'server/declared-script-missing');
    expect(hits.map((h) => [h.path, h.line])).toEqual([
      ['skills/missing-script/SKILL.md', 8],
      ['skills/missing-script/SKILL.md', 10],
    ]);
    expect(hits[0]!.message).toMatch(/"scripts\/gone\.js" is not a served regular file.*\(on disk: nothing is there\)$/);
    expect(hits[1]!.message).toMatch(/"scripts\/dir\.js" is not a served regular file.*\(on disk: it is a directory\)$/);
  });

  it('server/no-skill-md: a folder in the root without SKILL.md (a warning)', () => {
    expect(ofRule(report, 'server/no-skill-md')).toMatchObject([{ level: 'warning', path: 'skills/no-skill' }]);
  });

  it('server/symlink-escape: a linked skill leaving its root, and a dangling link', () => {
    expect(ofRule(report, 'server/symlink-escape').map((h) => h.path)).toEqual(['skills/dangling', 'skills/escaped']);
  });

  it('server/unusable-name: a directory name the tools cannot carry', () => {
    expect(ofRule(report, 'server/unusable-name')).toMatchObject([{ level: 'error', path: 'skills/weird%name' }]);
  });

  it('server/unusable-path: a file name the read tools cannot carry (a warning)', () => {
    expect(ofRule(report, 'server/unusable-path')).toMatchObject([
      { level: 'warning', path: 'skills/odd-files/100%.txt', skill: 'odd-files' },
    ]);
  });

  it('server/unreadable-skill-md: a SKILL.md that is a link', () => {
    expect(ofRule(report, 'server/unreadable-skill-md')).toMatchObject([{ level: 'error', path: 'skills/md-link/SKILL.md' }]);
  });

  it('the clean skill beside them has no finding', () => {
    expect(report.findings.filter((f) => f.skill === 'good')).toEqual([]);
    expect(report.status).toBe(1);
  });
});

describe('server/* findings that need two roots or the SKILL_MCP_* limits', () => {
  it('server/duplicate-name: one name served by two PATHs, refused on both sides', () => {
    const dir = workspace();
    write(dir, { 'a/twin/SKILL.md': skillMd({ name: 'twin' }), 'b/twin/SKILL.md': skillMd({ name: 'twin' }) });
    const r = checkJson(dir, ['a', 'b']);
    expect(ofRule(r, 'server/duplicate-name').map((h) => h.path)).toEqual(['a/twin', 'b/twin']);
    expect(r.summary.skills).toBe(0);
  });

  it('server/skill-limit and server/file-limit: the limits the server would apply (SKILL_MCP_MAX_SKILLS, SKILL_MCP_MAX_FILES)', () => {
    const dir = workspace();
    write(dir, {
      'root/one/SKILL.md': skillMd({ name: 'one' }),
      'root/one/a.md': 'a\n',
      'root/one/b.md': 'b\n',
      'root/two/SKILL.md': skillMd({ name: 'two' }),
    });
    const r = checkJson(dir, ['root'], { SKILL_MCP_MAX_SKILLS: '1', SKILL_MCP_MAX_FILES: '2' });
    expect(ofRule(r, 'server/skill-limit')).toMatchObject([{ path: 'root/two', message: expect.stringContaining('more than 1 skills') }]);
    expect(ofRule(r, 'server/file-limit')).toMatchObject([{ path: 'root/one', skill: 'one' }]);
    expect(ofRule(r, 'server/not-published')).toMatchObject([
      { path: 'root/one', message: expect.stringContaining('its manifest is incomplete (file-limit)') },
    ]);
  });

  it('server/config: a SKILL_MCP_* limit that is not a positive integer', () => {
    const dir = workspace();
    write(dir, { 'one/SKILL.md': skillMd({ name: 'one' }) });
    expect(ofRule(checkJson(dir, ['one'], { SKILL_MCP_MAX_SKILLS: 'lots' }), 'server/config')).toMatchObject([
      { path: '.', message: `SKILL_MCP_MAX_SKILLS="lots" is not a positive integer; using ${DEFAULT_CATALOG_LIMITS.maxSkills}` },
    ]);
  });
});

describe('check agrees with a real server', () => {
  let served: Served;
  let problems: ProblemEntry[];
  let agreeCwd: string;
  let agreeReport: JsonReport;
  beforeAll(async () => {
    const { cwd: dir, root } = hostileRoot();
    agreeCwd = dir;
    agreeReport = checkJson(agreeCwd, ['skills']);
    served = await serve({ SKILLS_DIR: root }, ERAS[0]!);
    problems = (await skillList(served.client)).problems;
  }, 60_000);
  afterAll(async () => served?.close());

  it('every problem skill_list reports is a server/* finding at the same place, and there is none more', () => {
    // Check points some findings at a file (SKILL.md's line) where the server names the folder or
    // the missing script: compare by skill folder (`skills/<name>`).
    const skillFolder = (path: string): string => path.split('/').slice(0, 2).join('/');
    const server = agreeReport.findings.filter((f) => f.ruleId.startsWith('server/'));
    const notPublished = (p: ProblemEntry): boolean => p.reason === 'not-published';
    for (const problem of problems) {
      const mine = server.filter((f) => f.ruleId === `server/${problem.reason}` && skillFolder(f.path) === skillFolder(problem.path));
      if (notPublished(problem)) {
        // Split into one finding per reason; together they are the server's detail.
        const reasons = mine.map((f) => f.message.replace('kept out of skill:// (served by the tools and prompts only): ', ''));
        expect(problem.detail, problem.path).toBe(
          `served by the tools and prompts, but not in the skill:// namespace: ${reasons.join('; ')}`,
        );
      } else {
        expect(
          mine.map((f) => f.message.startsWith(problem.detail)),
          `${problem.reason} ${problem.path}`,
        ).toContain(true);
      }
    }
    // And the other way: every server/* finding is one of the server's problems (or one reason of one).
    for (const f of server) {
      const reason = f.message
        .replace('kept out of skill:// (served by the tools and prompts only): ', '')
        .replace(/ \(on disk: [^)]*\)$/, '');
      const theirs = problems.filter(
        (p) => `server/${p.reason}` === f.ruleId && skillFolder(f.path) === skillFolder(p.path) && p.detail.includes(reason),
      );
      expect(theirs, `${f.ruleId} ${f.path}`).not.toEqual([]);
    }
    expect(problems.length).toBeGreaterThan(10);
  });
});
