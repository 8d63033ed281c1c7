/**
 * `skill-mcp check`'s contract with scripts and CI: the three output formats (text lines, the
 * stable JSON shape, SARIF 2.1.0 checked against the schema's required fields), exit codes 0/1/2,
 * `--strict`, `--help`, and paths that are relative to the working directory, never absolute.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkJson, REPO, runCheck, skillMd, workspace, write } from './harness.js';
import { sarifViolations } from './sarif-shape.js';

/** One skill with exactly one error (bidi), one warning (zero-width) and one note (a description with no "when" cue). */
function mixed(): string {
  const cwd = workspace();
  write(cwd, {
    'demo/SKILL.md': skillMd({
      name: 'demo',
      description: 'Formats release notes.',
      whenToUse: null,
      body: '# Demo\n\nabc\u202Edef\nThe dep\u200Bloy step.\n',
    }),
    'demo/notes dir/a b.txt': 'plain\n',
  });
  return cwd;
}

/** One skill whose only finding is a warning. */
function warningOnly(): string {
  const cwd = workspace();
  write(cwd, { 'demo/SKILL.md': skillMd({ name: 'demo', body: '# Demo\n\nThe dep\u200Bloy step.\n' }) });
  return cwd;
}

describe('--format text (the default)', () => {
  it('prints path:line:col: level rule-id message, one line per finding sorted by place, then a summary', () => {
    const run = runCheck(mixed(), ['demo']);
    expect(run.stdout.split('\n')).toEqual([
      'demo/SKILL.md:3:1: note advice/description-trigger the description says what the skill is but not when to use it (no "when", "for", "if", "before" ... cue); hosts pick skills by it',
      'demo/SKILL.md:8:4: error unicode/bidi bidirectional control U+202E RIGHT-TO-LEFT OVERRIDE: the text displays in another order than it is read',
      'demo/SKILL.md:9:8: warning unicode/zero-width zero-width character U+200B ZERO WIDTH SPACE: invisible to a reader',
      '1 error, 1 warning, 1 note in 1 skill (2 text files read)',
      '',
    ]);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(1);
  });

  it('prints a finding without a line as path: level rule-id message', () => {
    const cwd = workspace();
    write(cwd, { 'root/renamed/SKILL.md': skillMd({ name: 'other' }) });
    expect(runCheck(cwd, ['root']).stdout).toContain(
      'root/renamed: warning server/name-mismatch the frontmatter name "other" differs from the directory name; it is served as "renamed"\n',
    );
  });
});

describe('--format json', () => {
  it('has the stable shape {version, findings: [{ruleId, level, message, path, line?, column?, skill?}], summary}', () => {
    const report = checkJson(mixed(), ['demo']);
    expect(Object.keys(report).filter((k) => k !== 'status' && k !== 'stdout')).toEqual(['version', 'findings', 'summary']);
    expect(report.version).toBe(1);
    for (const f of report.findings) {
      expect(Object.keys(f).every((k) => ['ruleId', 'level', 'message', 'path', 'line', 'column', 'skill'].includes(k))).toBe(true);
    }
    expect(report.findings[1]).toEqual({
      ruleId: 'unicode/bidi',
      level: 'error',
      message: 'bidirectional control U+202E RIGHT-TO-LEFT OVERRIDE: the text displays in another order than it is read',
      path: 'demo/SKILL.md',
      line: 8,
      column: 4,
      skill: 'demo',
    });
    expect(report.summary).toEqual({ skills: 1, filesScanned: 2, filesNotScanned: 0, errors: 1, warnings: 1, notes: 1, strict: false });
  });
});

describe('--format sarif', () => {
  it("is a SARIF 2.1.0 log with the schema's required fields: driver skill-mcp, a rule table, located results with relative URIs", () => {
    const cwd = mixed();
    writeFileSync(join(cwd, 'demo/notes dir/a b.txt'), 'x\u2066y\n');
    const run = runCheck(cwd, ['--format', 'sarif', 'demo']);
    expect(run.status).toBe(1);
    const log = JSON.parse(run.stdout) as {
      $schema: string;
      version: string;
      runs: {
        tool: {
          driver: {
            name: string;
            rules: { id: string; shortDescription: { text: string }; help: { text: string }; defaultConfiguration: { level: string } }[];
          };
        };
        results: {
          ruleId: string;
          ruleIndex: number;
          level: string;
          message: { text: string };
          locations: { physicalLocation: { artifactLocation: { uri: string }; region?: { startLine: number; startColumn?: number } } }[];
        }[];
      }[];
    };
    expect(sarifViolations(log)).toEqual([]);
    expect(log.$schema).toBe('https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json');
    expect(log.version).toBe('2.1.0');
    expect(log.runs).toHaveLength(1);
    const [sarifRun] = log.runs;
    expect(sarifRun!.tool.driver.name).toBe('skill-mcp');
    const ids = sarifRun!.tool.driver.rules.map((r) => r.id);
    for (const id of [
      'unicode/bidi',
      'unicode/tag',
      'unicode/zero-width',
      'credential/private-key',
      'credential/cloud-key',
      'credential/service-token',
      'credential/high-entropy',
      'script/interpreter',
      'link/missing-target',
      'hidden/instructions',
      'advice/skill-md-length',
      'advice/description-trigger',
      'advice/declaration-sidecar',
      'spec/frontmatter-field',
      'server/not-published',
      'server/declaration',
    ]) {
      expect(ids).toContain(id);
    }
    for (const rule of sarifRun!.tool.driver.rules) {
      expect(rule.shortDescription.text.length).toBeGreaterThan(0);
      expect(rule.help.text.length).toBeGreaterThan(0);
      expect(['error', 'warning', 'note']).toContain(rule.defaultConfiguration.level);
    }
    expect(
      sarifRun!.results.map((r) => [
        r.ruleId,
        r.level,
        r.locations[0]!.physicalLocation.artifactLocation.uri,
        r.locations[0]!.physicalLocation.region,
      ]),
    ).toEqual([
      ['advice/description-trigger', 'note', 'demo/SKILL.md', { startLine: 3, startColumn: 1 }],
      ['unicode/bidi', 'error', 'demo/SKILL.md', { startLine: 8, startColumn: 4 }],
      ['unicode/zero-width', 'warning', 'demo/SKILL.md', { startLine: 9, startColumn: 8 }],
      ['unicode/bidi', 'error', 'demo/notes%20dir/a%20b.txt', { startLine: 1, startColumn: 2 }],
    ]);
  });

  it('the shape check itself fails a log missing required fields or holding bad values', () => {
    const broken = {
      version: '2.0.0',
      runs: [
        {
          tool: { driver: { rules: [{ shortDescription: {} }, { id: 'b', defaultConfiguration: { level: 'fatal' } }] } },
          results: [{ ruleId: 'a', ruleIndex: 1, level: 'severe', locations: [{ physicalLocation: { region: { startLine: 0 } } }] }],
        },
      ],
    };
    expect(sarifViolations(broken)).toEqual([
      '$.version: must be "2.1.0"',
      '$.runs[0].tool.driver.name: is required (non-empty string)',
      '$.runs[0].tool.driver.rules[0].id: is required (string)',
      '$.runs[0].tool.driver.rules[0].shortDescription.text: is required (string)',
      '$.runs[0].tool.driver.rules[1].defaultConfiguration.level: must be one of none, note, warning, error',
      '$.runs[0].results[0].message: must be an object',
      '$.runs[0].results[0].level: must be one of none, note, warning, error',
      '$.runs[0].results[0].ruleIndex: must point at the rule whose id is ruleId',
      '$.runs[0].results[0].locations[0].physicalLocation: needs artifactLocation or address',
    ]);
  });
});

describe('exit codes and --strict', () => {
  it('exits 0 on a warning without --strict, and 1 with it, where the warning is then reported as an error', () => {
    const cwd = warningOnly();
    expect(runCheck(cwd, ['demo']).status).toBe(0);
    const strict = checkJson(cwd, ['--strict', 'demo']);
    expect(strict.status).toBe(1);
    expect(strict.findings).toMatchObject([{ ruleId: 'unicode/zero-width', level: 'error' }]);
    expect(strict.summary).toMatchObject({ errors: 1, warnings: 0, strict: true });
    expect(runCheck(cwd, ['demo', '--strict']).stdout).toMatch(/; --strict: warnings count as errors\n$/);
  });

  it('--strict leaves notes as notes (exit 0)', () => {
    const cwd = workspace();
    write(cwd, { 'demo/SKILL.md': skillMd({ name: 'demo', description: 'Formats release notes.' }) });
    const strict = checkJson(cwd, ['--strict', 'demo']);
    expect(strict).toMatchObject({ status: 0, summary: { notes: 1, errors: 0 } });
  });

  it('exits 2 on usage errors, with the usage on stderr and nothing on stdout', () => {
    const cwd = warningOnly();
    for (const args of [['--bogus', 'demo'], [], ['--format', 'xml', 'demo'], ['--format']]) {
      const run = runCheck(cwd, args);
      expect(run.status, args.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain('usage: skill-mcp check [--format text|json|sarif] [--strict] [--fix] PATH...');
    }
  });

  it('exits 2 on a PATH that does not exist or is a file, naming it', () => {
    const cwd = warningOnly();
    expect(runCheck(cwd, ['demo', 'nope'])).toMatchObject({
      status: 2,
      stdout: '',
      stderr: 'skill-mcp check: "nope": it cannot be read (ENOENT)\n',
    });
    expect(runCheck(cwd, ['demo/SKILL.md'])).toMatchObject({
      status: 2,
      stdout: '',
      stderr: 'skill-mcp check: "demo/SKILL.md": it is not a folder (name the folder that holds SKILL.md)\n',
    });
  });

  it('--help prints the usage and every rule to stdout and exits 0', () => {
    const run = runCheck(workspace(), ['--help']);
    expect(run).toMatchObject({ status: 0, stderr: '' });
    expect(run.stdout).toMatch(/^usage: skill-mcp check \[--format text\|json\|sarif\] \[--strict\] \[--fix\] PATH\.\.\./);
    for (const id of [
      'server/not-published',
      'unicode/tag',
      'credential/high-entropy',
      'hidden/instructions',
      'advice/declaration-sidecar',
      'spec/frontmatter-field',
    ])
      expect(run.stdout).toContain(`  ${id} `);
    expect(run.stdout).toContain('Exit status: 0 no errors, 1 at least one error, 2 usage error or a PATH that cannot be read.');
  });
});

describe('paths in the output', () => {
  it('are relative to the working directory in every format, also for an absolute PATH or one above the working directory', () => {
    const cwd = mixed();
    mkdirSync(join(cwd, 'sub'));
    for (const format of ['text', 'json', 'sarif']) {
      const absolute = runCheck(cwd, ['--format', format, join(cwd, 'demo')]);
      expect(absolute.stdout).not.toContain(cwd);
      expect(absolute.stdout).toContain('demo/SKILL.md');
      const above = runCheck(join(cwd, 'sub'), ['--format', format, '../demo']);
      expect(above.stdout).not.toContain(cwd);
      expect(above.stdout).toContain('../demo/SKILL.md');
      for (const out of [absolute.stdout, above.stdout]) expect(out).not.toContain(tmpdir());
    }
  });
});

describe('the bundled skills/', () => {
  it('pass clean, even with --strict: no finding at all, exit 0', () => {
    const run = runCheck(REPO, ['--strict', 'skills']);
    expect(run).toMatchObject({ status: 0, stderr: '' });
    expect(run.stdout).toMatch(/^no findings in 1 skill \(\d+ text files read\); --strict: warnings count as errors\n$/);
  });
});
