/**
 * `skill-mcp check` on the three places a declaration lives (SKILL.md's frontmatter, the
 * `mcp-host.yaml` sidecar, the operator's SKILL_MCP_DECLARATIONS folder), and `check --fix`, which
 * moves a frontmatter block into the sidecar: run through the built bin on skills written here.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { checkJson, ofRule, runCheck, skillMd, workspace, write } from './harness.js';

const SCRIPT = { 'demo/scripts/run.js': 'console.log("ok");\n' };
const BLOCK = 'mcp-host:\n  version: 1\n  # the checker\n  run:\n    - script: scripts/run.js\n      interpreter: node\n      timeout: 10';
const SIDECAR = 'version: 1\nrun:\n  - script: scripts/run.js\n    interpreter: node\n';

describe('check reads a sidecar mcp-host.yaml as the server does', () => {
  it('a valid sidecar and a spec-clean SKILL.md: no finding at all', () => {
    const cwd = workspace();
    write(cwd, { 'demo/SKILL.md': skillMd({ name: 'demo' }), 'demo/mcp-host.yaml': SIDECAR, ...SCRIPT });
    expect(checkJson(cwd, ['demo'])).toMatchObject({ findings: [], status: 0 });
  });

  it('a sidecar that does not parse, or names an unknown key, is server/declaration at its own line', () => {
    const cwd = workspace();
    write(cwd, {
      'demo/SKILL.md': skillMd({ name: 'demo' }),
      'demo/mcp-host.yaml': 'version: 1\nrun:\n  - script: scripts/run.js\n    interpreter: node\n    interpeter: node\n',
      'bad/SKILL.md': skillMd({ name: 'bad' }),
      'bad/mcp-host.yaml': 'version: 1\nrun: &a [x]\n',
      ...SCRIPT,
    });
    const report = checkJson(cwd, ['demo', 'bad']);
    expect(ofRule(report, 'server/declaration')).toMatchObject([
      {
        level: 'error',
        path: 'bad/mcp-host.yaml',
        line: 2,
        message: expect.stringContaining('mcp-host.yaml does not parse: anchors (&name) are not allowed'),
      },
      { level: 'error', path: 'demo/mcp-host.yaml', message: 'unknown keys ignored: run[0].interpeter' },
    ]);
  });

  it('a secret sent to a host its egress does not declare, or with a format that injects a header: server/declaration, as the server refuses it', () => {
    const cwd = workspace();
    write(cwd, {
      'demo/SKILL.md': skillMd({ name: 'demo' }),
      'demo/mcp-host.yaml': `${SIDECAR}egress: [api.example.com]\nsecrets:\n  - name: API_TOKEN\n    hosts: [evil.example.org]\n`,
      'crlf/SKILL.md': skillMd({ name: 'crlf' }),
      'crlf/mcp-host.yaml': `${SIDECAR}egress: [api.example.com]\nsecrets:\n  - name: API_TOKEN\n    hosts: [api.example.com]\n    format: "Bearer {value}\\r\\nX-Injected: 1"\n`,
      ...SCRIPT,
      'crlf/scripts/run.js': 'console.log("ok");\n',
    });
    const report = checkJson(cwd, ['demo', 'crlf']);
    expect(ofRule(report, 'server/declaration')).toMatchObject([
      {
        level: 'error',
        path: 'crlf/mcp-host.yaml',
        message: expect.stringContaining('secrets[0].format may hold visible ASCII characters and spaces only'),
      },
      {
        level: 'error',
        path: 'demo/mcp-host.yaml',
        message: expect.stringContaining('secrets[0].hosts[0] "evil.example.org" is not covered by the declaration\'s egress'),
      },
    ]);
  });

  it('both a frontmatter block and a sidecar: server/declaration, and no script is runnable', () => {
    const cwd = workspace();
    write(cwd, { 'demo/SKILL.md': skillMd({ name: 'demo', extra: BLOCK }), 'demo/mcp-host.yaml': SIDECAR, ...SCRIPT });
    const [hit] = ofRule(checkJson(cwd, ['demo']), 'server/declaration');
    expect(hit).toMatchObject({ level: 'error', path: 'demo/SKILL.md', line: 5 });
    expect(hit!.message).toContain('declares in both SKILL.md (mcp-host:) and mcp-host.yaml');
    expect(hit!.message).toContain('scripts are not runnable');
  });
});

describe('check --fix moves the frontmatter block into mcp-host.yaml', () => {
  it('keeps the rest of SKILL.md byte for byte, writes the same declaration, says what it did, and the check that follows is clean', () => {
    const cwd = workspace();
    const before = skillMd({ name: 'demo', extra: `${BLOCK}\nallowed-tools: Read`, body: '# Demo\r\n\r\nKeep these CRLF bytes.\r\n' });
    write(cwd, { 'demo/SKILL.md': before, ...SCRIPT });
    const run = runCheck(cwd, ['--fix', 'demo']);
    expect(run.stdout).toContain('fixed: demo/SKILL.md: moved the mcp-host block (lines 5-11) into demo/mcp-host.yaml\n');
    expect(run.stdout).toContain('no findings in 1 skill');
    expect(run.status).toBe(0);
    const after = readFileSync(join(cwd, 'demo/SKILL.md'), 'utf8');
    expect(after).toBe(before.replace(`${BLOCK}\n`, ''));
    const sidecar = readFileSync(join(cwd, 'demo/mcp-host.yaml'), 'utf8');
    expect(sidecar).toBe('version: 1\n# the checker\nrun:\n  - script: scripts/run.js\n    interpreter: node\n    timeout: 10\n');
    expect(parse(sidecar)).toEqual({ version: 1, run: [{ script: 'scripts/run.js', interpreter: 'node', timeout: 10 }] });
    expect(statSync(join(cwd, 'demo/mcp-host.yaml')).mode & 0o777).toBe(statSync(join(cwd, 'demo/SKILL.md')).mode & 0o777);
  });

  it('refuses where mcp-host.yaml already exists, and changes nothing', () => {
    const cwd = workspace();
    const before = skillMd({ name: 'demo', extra: BLOCK });
    write(cwd, { 'demo/SKILL.md': before, 'demo/mcp-host.yaml': SIDECAR, ...SCRIPT });
    const run = runCheck(cwd, ['--fix', 'demo']);
    expect(run.stdout).toContain(
      'not fixed: demo/SKILL.md: mcp-host.yaml already exists; merge by hand, then delete the block from SKILL.md\n',
    );
    expect(readFileSync(join(cwd, 'demo/SKILL.md'), 'utf8')).toBe(before);
    expect(readFileSync(join(cwd, 'demo/mcp-host.yaml'), 'utf8')).toBe(SIDECAR);
    expect(run.status).toBe(1); // the conflict is still an error
  });

  it('refuses a block that does not parse, and a one-line flow block, changing nothing', () => {
    const cwd = workspace();
    const broken = skillMd({ name: 'demo', extra: 'mcp-host:\n  version: 1\n  run: [unclosed' });
    const flow = skillMd({ name: 'flow', extra: 'mcp-host: {version: 1, run: [{script: scripts/run.js, interpreter: node}]}' });
    write(cwd, { 'demo/SKILL.md': broken, 'flow/SKILL.md': flow, 'flow/scripts/run.js': '1;\n' });
    const run = runCheck(cwd, ['--fix', 'demo', 'flow']);
    expect(run.stdout).toMatch(/not fixed: demo\/SKILL\.md: the mcp-host block does not parse \(.*\); fix it first\n/);
    expect(run.stdout).toContain('not fixed: flow/SKILL.md: the block is not an indented mapping under "mcp-host:"');
    expect(readFileSync(join(cwd, 'demo/SKILL.md'), 'utf8')).toBe(broken);
    expect(readFileSync(join(cwd, 'flow/SKILL.md'), 'utf8')).toBe(flow);
  });

  it('with --format json the report on stdout stays JSON; what --fix did goes to stderr', () => {
    const cwd = workspace();
    write(cwd, { 'demo/SKILL.md': skillMd({ name: 'demo', extra: BLOCK }), ...SCRIPT });
    const run = runCheck(cwd, ['--fix', '--format', 'json', 'demo']);
    expect(run.stderr).toContain('fixed: demo/SKILL.md');
    expect(JSON.parse(run.stdout)).toMatchObject({ findings: [] });
  });
});

describe('check with SKILL_MCP_DECLARATIONS reads the operator declarations as the server would', () => {
  it('a bad operator file, and files that declare no skill, are server/declaration at their place in the folder', () => {
    const cwd = workspace();
    write(cwd, {
      'skills/demo/SKILL.md': skillMd({ name: 'demo' }),
      'skills/demo/scripts/run.js': '1;\n',
      'ops/demo.yaml': 'version: 1\nrun:\n  - script: scripts/run.js\n    interpreter: node\npin: sha256:0000\n',
      'ops/ghost.yaml': SIDECAR,
      'ops/notes.txt': 'hello\n',
    });
    const report = checkJson(cwd, ['skills'], { SKILL_MCP_DECLARATIONS: join(cwd, 'ops') });
    expect(ofRule(report, 'server/declaration').map((f) => [f.path, f.message])).toEqual([
      ['ops/demo.yaml', expect.stringContaining("pin must be sha256: and the skill's 64-hex content digest")],
      ['ops/ghost.yaml', expect.stringContaining('declares a skill "ghost" that is not served; it is not applied')],
      ['ops/notes.txt', expect.stringContaining('is not a declaration (operator declarations are named <skill-name>.yaml)')],
    ]);
    expect(report.stdout).not.toContain(cwd);
  });

  it('a relative SKILL_MCP_DECLARATIONS is server/config (the server would not start with it)', () => {
    const cwd = workspace();
    write(cwd, { 'skills/demo/SKILL.md': skillMd({ name: 'demo' }) });
    const report = checkJson(cwd, ['skills'], { SKILL_MCP_DECLARATIONS: 'ops' });
    expect(ofRule(report, 'server/config')).toMatchObject([
      {
        message:
          'SKILL_MCP_DECLARATIONS="ops" is not an absolute path to a folder of <skill-name>.yaml declarations; skill-mcp does not start with it: fix or unset it',
      },
    ]);
  });
});
