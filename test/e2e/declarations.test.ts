/**
 * Declarations that keep skills spec-clean, through the SDK's Client over real stdio against the
 * standalone launcher (front + runner): a sidecar `mcp-host.yaml`, a skill declaring in both
 * places, operator declarations (`SKILL_MCP_DECLARATIONS`) that make an unmodified skill
 * runnable, replace a skill's own, or are pinned to its content digest; a hostile declarations
 * folder; and the hosted pair refusing runs when front and runner see different declarations.
 * What ran is proven from the runner's audit log.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startRunner, type RunnerHandle } from '../runner/harness.js';
import {
  baseEnv,
  callTool,
  ERAS,
  expectNoLeftovers,
  hostedRunnerArgs,
  serve,
  skillList,
  tempDir,
  type Served,
  type SkillListValue,
} from './harness.js';
import { askToken, audit, refusal, reported, runsStarted } from './run-skills.js';

const REPORT_JS = 'process.stdout.write(JSON.stringify({ args: process.argv.slice(2), env: Object.keys(process.env).sort() }) + "\\n");\n';
const SPEC_CLEAN = (name: string): string =>
  `---\nname: ${name}\ndescription: Test skill ${name}. Use when testing declarations.\nlicense: MIT\n---\nRun its scripts.\n`;
const DECLARE = (script: string): string => `version: 1\nrun:\n  - script: ${script}\n    interpreter: node\n    timeout: 20\n`;

function put(root: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true, mode: 0o755 });
    writeFileSync(join(root, path), text, { mode: 0o644 });
  }
}

/** The skill's content digest the way the docs tell a person to compute it, with coreutils. */
function contentDigest(skillDir: string): string {
  const listing = execFileSync(
    'sh',
    ['-c', "find . -type f ! -path '*/.*' | sed 's|^\\./||' | LC_ALL=C sort | xargs -d '\\n' sha256sum -- | sha256sum"],
    { cwd: skillDir, encoding: 'utf8' },
  );
  return listing.split(' ')[0]!;
}

async function untilList(served: Served, ok: (list: SkillListValue) => boolean, what: string): Promise<SkillListValue> {
  // Awaits the live catalog's rescan (an event this side cannot subscribe to): generous, never a speed claim.
  const deadline = Date.now() + 30_000;
  for (;;) {
    const list = await skillList(served.client);
    if (ok(list)) return list;
    if (Date.now() > deadline) throw new Error(`skill_list never showed ${what}: ${JSON.stringify(list.problems)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

let root: string;
let ops: string;
beforeAll(() => {
  root = tempDir('decl-skills');
  ops = tempDir('decl-ops');
  put(root, {
    'sidecar-only/SKILL.md': SPEC_CLEAN('sidecar-only'),
    'sidecar-only/mcp-host.yaml': DECLARE('scripts/report.js'),
    'sidecar-only/scripts/report.js': REPORT_JS,
    'both-forms/SKILL.md': SPEC_CLEAN('both-forms').replace(
      'license: MIT\n',
      `license: MIT\nmcp-host:\n  version: 1\n  run:\n    - script: scripts/report.js\n      interpreter: node\n`,
    ),
    'both-forms/mcp-host.yaml': DECLARE('scripts/report.js'),
    'both-forms/scripts/report.js': REPORT_JS,
    'published/SKILL.md': SPEC_CLEAN('published'),
    'published/scripts/report.js': REPORT_JS,
    'pinned/SKILL.md': SPEC_CLEAN('pinned'),
    'pinned/scripts/report.js': REPORT_JS,
    'replaced/SKILL.md': SPEC_CLEAN('replaced'),
    'replaced/mcp-host.yaml': DECLARE('scripts/own.js'),
    'replaced/scripts/own.js': REPORT_JS,
    'replaced/scripts/operator.js': REPORT_JS,
  });
  put(ops, {
    'published.yaml': DECLARE('scripts/report.js'),
    'pinned.yaml': `${DECLARE('scripts/report.js')}pin: sha256:${contentDigest(join(root, 'pinned'))}\n`,
    'replaced.yaml': DECLARE('scripts/operator.js'),
  });
});
afterAll(expectNoLeftovers);

describe.each(ERAS)('the three places, standalone over stdio, $name', (era) => {
  let served: Served;
  let stateDir: string;
  const run = (args: Record<string, unknown>) => callTool(served.client, 'skill_run', { args: [], ...args });
  /** Approves and runs `skill/script` by the token path; returns what the script printed. */
  const approveAndRun = async (name: string, script: string) => {
    const preview = await askToken(served.client, { name, script, args: ['x'] });
    const ran = await run({ name, script, args: ['x'], confirmToken: preview.confirmToken });
    return { preview, ran };
  };

  beforeAll(async () => {
    stateDir = join(tempDir('state'), 'state');
    served = await serve({ SKILLS_DIR: root, SKILL_MCP_STATE_DIR: stateDir, SKILL_MCP_DECLARATIONS: ops }, era);
  });
  afterAll(async () => {
    await served?.close();
  });

  test('a skill with only a sidecar mcp-host.yaml runs, and says its declaration came from the sidecar', async () => {
    const before = runsStarted(stateDir);
    const { preview, ran } = await approveAndRun('sidecar-only', 'scripts/report.js');
    expect(preview.preview.willRun).toMatchObject({ skill: 'sidecar-only', argv: ['scripts/report.js', 'x'], declarationFrom: 'sidecar' });
    expect(reported(ran).args).toEqual(['x']);
    expect(runsStarted(stateDir)).toBe(before + 1);
    const entry = (await skillList(served.client)).skills.find((s) => s.name === 'sidecar-only') as unknown as Record<string, unknown>;
    expect(entry).toMatchObject({ runnable: true, declarationFrom: 'sidecar' });
  });

  test('both a frontmatter block and a sidecar: a declaration problem, no scripts, instructions still served', async () => {
    const list = await skillList(served.client);
    expect(list.problems).toContainEqual({
      path: expect.stringMatching(/both-forms\/SKILL\.md$/),
      reason: 'declaration',
      detail: expect.stringContaining('declares in both SKILL.md (mcp-host:) and mcp-host.yaml'),
    });
    const entry = list.skills.find((s) => s.name === 'both-forms')!;
    expect(entry).toMatchObject({ runnable: false, scripts: [] });
    expect(entry).not.toHaveProperty('declarationFrom');
    const before = runsStarted(stateDir);
    expect(refusal(await run({ name: 'both-forms', script: 'scripts/report.js' })).code).toBe('NOT_DECLARED');
    expect(runsStarted(stateDir)).toBe(before);
    const read = await callTool(served.client, 'skill_load', { name: 'both-forms' });
    expect(read.isError, read.text).toBe(false);
    expect(read.text).toContain('Run its scripts.');
  });

  test('an operator declaration makes a spec-clean skill with no declaration of its own runnable', async () => {
    const { preview, ran } = await approveAndRun('published', 'scripts/report.js');
    expect(preview.preview.willRun).toMatchObject({ skill: 'published', declarationFrom: 'operator' });
    expect(preview.preview.willRun).not.toHaveProperty('declarationPinned');
    expect(reported(ran).args).toEqual(['x']);
    expect((await skillList(served.client)).skills.find((s) => s.name === 'published')).toMatchObject({
      runnable: true,
      declarationFrom: 'operator',
    });
  });

  test('a pinned operator declaration applies while the skill matches its digest, and the preview says pinned', async () => {
    const { preview, ran } = await approveAndRun('pinned', 'scripts/report.js');
    expect(preview.preview.willRun).toMatchObject({ declarationFrom: 'operator', declarationPinned: true });
    expect((preview.preview.willRun as unknown as { content: { files: string } }).content.files).toBe(contentDigest(join(root, 'pinned')));
    expect(reported(ran).args).toEqual(['x']);
  });

  test("an operator declaration replaces the skill's own: the operator's script runs, the sidecar's is not declared, and skill_list says what was replaced", async () => {
    const entry = (await skillList(served.client)).skills.find((s) => s.name === 'replaced') as unknown as Record<string, unknown>;
    expect(entry).toMatchObject({
      declarationFrom: 'operator',
      declarationReplaces: ['sidecar'],
      scripts: [{ script: 'scripts/operator.js' }],
    });
    const { ran } = await approveAndRun('replaced', 'scripts/operator.js');
    expect(reported(ran).args).toEqual(['x']);
    expect(refusal(await run({ name: 'replaced', script: 'scripts/own.js' })).code).toBe('NOT_DECLARED');
  });
});

describe('a client that can show a prompt', () => {
  test("the prompt a person answers says who declared the script: the operator (pinned), or the skill's sidecar", async () => {
    const asked: string[] = [];
    const stateDir = join(tempDir('state'), 'state');
    const served = await serve({ SKILLS_DIR: root, SKILL_MCP_STATE_DIR: stateDir, SKILL_MCP_DECLARATIONS: ops }, ERAS[0]!, {
      onElicit: ({ message }) => {
        asked.push(message);
        return { action: 'accept', content: {} };
      },
    });
    try {
      for (const name of ['pinned', 'sidecar-only']) {
        const ran = await callTool(served.client, 'skill_run', { name, script: 'scripts/report.js', args: [] });
        expect(ran.value['status'], ran.text).toBe('completed');
      }
      expect(asked).toHaveLength(2);
      expect(asked[0]).toContain('declared by: the operator (pinned to these files)\n');
      expect(asked[1]).toContain('declared by: the skill (mcp-host.yaml)\n');
    } finally {
      await served.close();
    }
  });
});

describe('changes after approval', () => {
  let served: Served;
  let stateDir: string;
  let skills: string;
  let decl: string;
  const run = (args: Record<string, unknown>) => callTool(served.client, 'skill_run', { args: [], ...args });
  beforeAll(async () => {
    skills = tempDir('decl-change');
    decl = tempDir('decl-change-ops');
    put(skills, {
      'switch/SKILL.md': SPEC_CLEAN('switch'),
      'switch/mcp-host.yaml': DECLARE('scripts/report.js'),
      'switch/scripts/report.js': REPORT_JS,
      'drift/SKILL.md': SPEC_CLEAN('drift'),
      'drift/scripts/report.js': REPORT_JS,
    });
    put(decl, { 'drift.yaml': `${DECLARE('scripts/report.js')}pin: sha256:${contentDigest(join(skills, 'drift'))}\n` });
    stateDir = join(tempDir('state'), 'state');
    served = await serve({ SKILLS_DIR: skills, SKILL_MCP_STATE_DIR: stateDir, SKILL_MCP_DECLARATIONS: decl }, ERAS[0]!);
  });
  afterAll(async () => {
    await served?.close();
  });

  test("a change of the declaration's source after approval is DRAFT_CHANGED, with a fresh preview naming the new source; nothing ran", async () => {
    const preview = await askToken(served.client, { name: 'switch', script: 'scripts/report.js' });
    expect(preview.preview.willRun).toMatchObject({ declarationFrom: 'sidecar' });
    put(decl, { 'switch.yaml': DECLARE('scripts/report.js') });
    const before = runsStarted(stateDir);
    const changed = await run({ name: 'switch', script: 'scripts/report.js', confirmToken: preview.confirmToken });
    expect(changed.value).toMatchObject({
      status: 'draft-changed',
      error: { code: 'DRAFT_CHANGED' },
      preview: { willRun: { declarationFrom: 'operator' } },
    });
    expect(runsStarted(stateDir)).toBe(before);
    const fresh = changed.value['confirmToken'] as string;
    expect(reported(await run({ name: 'switch', script: 'scripts/report.js', confirmToken: fresh })).args).toEqual([]);
  });

  test('pinned, then the skill changed: the declaration is not applied, skill_list gives both digests, the approved token runs nothing', async () => {
    const pinned = contentDigest(join(skills, 'drift'));
    const preview = await askToken(served.client, { name: 'drift', script: 'scripts/report.js' });
    expect(preview.preview.willRun).toMatchObject({ declarationFrom: 'operator', declarationPinned: true });
    put(skills, { 'drift/scripts/report.js': `${REPORT_JS}// changed by the skill's author\n` });
    const now = contentDigest(join(skills, 'drift'));
    const before = runsStarted(stateDir);
    expect(refusal(await run({ name: 'drift', script: 'scripts/report.js', confirmToken: preview.confirmToken })).code).toBe(
      'NOT_DECLARED',
    );
    expect(runsStarted(stateDir)).toBe(before);
    const list = await untilList(served, (l) => l.problems.some((p) => p.path === 'SKILL_MCP_DECLARATIONS/drift.yaml'), 'the pin problem');
    const problem = list.problems.find((p) => p.path === 'SKILL_MCP_DECLARATIONS/drift.yaml')!;
    expect(problem).toMatchObject({
      reason: 'declaration',
      detail: expect.stringContaining(`is pinned to sha256:${pinned}, but the skill's content is now sha256:${now}`),
    });
    expect(list.skills.find((s) => s.name === 'drift')).toMatchObject({
      runnable: false,
      scripts: [],
      declarationFrom: 'operator',
      declarationPinned: true,
    });
    expect(JSON.stringify(list)).not.toContain(decl);
  });
});

describe('pinned, and the skill changed behind a front that has not noticed (SKILL_MCP_WATCH=off)', () => {
  test('the runner checks the pin against the very bytes it hashes: the approved run is refused NOT_DECLARED with both digests; nothing ran', async () => {
    const skills = tempDir('decl-stale');
    const decl = tempDir('decl-stale-ops');
    put(skills, { 'drift/SKILL.md': SPEC_CLEAN('drift'), 'drift/scripts/report.js': REPORT_JS });
    const pinned = contentDigest(join(skills, 'drift'));
    put(decl, { 'drift.yaml': `${DECLARE('scripts/report.js')}pin: sha256:${pinned}\n` });
    const stateDir = join(tempDir('state'), 'state');
    const served = await serve(
      { SKILLS_DIR: skills, SKILL_MCP_STATE_DIR: stateDir, SKILL_MCP_DECLARATIONS: decl, SKILL_MCP_WATCH: 'off' },
      ERAS[0]!,
    );
    try {
      const preview = await askToken(served.client, { name: 'drift', script: 'scripts/report.js' });
      put(skills, { 'drift/extra.md': 'a file the operator never reviewed\n' });
      const now = contentDigest(join(skills, 'drift'));
      const late = refusal(
        await callTool(served.client, 'skill_run', {
          name: 'drift',
          script: 'scripts/report.js',
          args: [],
          confirmToken: preview.confirmToken,
        }),
      );
      expect(late.code).toBe('NOT_DECLARED');
      expect(late.message).toContain(`pinned to sha256:${pinned}`);
      expect(late.message).toContain(`now sha256:${now}`);
      expect(runsStarted(stateDir)).toBe(0);
    } finally {
      await served.close();
    }
  });
});

describe('a hostile declarations folder', () => {
  test('a link, a huge file, a FIFO and a file for an unknown skill: a problem each, no crash, those skills run nothing', async () => {
    const skills = tempDir('decl-hostile');
    const decl = tempDir('decl-hostile-ops');
    const outside = join(tempDir('outside'), 'evil.yaml');
    put(skills, {
      'linked/SKILL.md': SPEC_CLEAN('linked'),
      'linked/mcp-host.yaml': DECLARE('scripts/report.js'),
      'linked/scripts/report.js': REPORT_JS,
      'huge/SKILL.md': SPEC_CLEAN('huge'),
      'huge/scripts/report.js': REPORT_JS,
      'fifo/SKILL.md': SPEC_CLEAN('fifo'),
      'fifo/scripts/report.js': REPORT_JS,
      'fine/SKILL.md': SPEC_CLEAN('fine'),
      'fine/scripts/report.js': REPORT_JS,
    });
    writeFileSync(outside, DECLARE('scripts/report.js'), { mode: 0o644 });
    symlinkSync(outside, join(decl, 'linked.yaml'));
    writeFileSync(join(decl, 'huge.yaml'), '');
    truncateSync(join(decl, 'huge.yaml'), 512 * 1024 * 1024); // sparse: 512 MiB claimed, nothing stored
    execFileSync('mkfifo', ['-m', '0644', join(decl, 'fifo.yaml')]);
    put(decl, { 'ghost.yaml': DECLARE('scripts/report.js'), 'fine.yaml': DECLARE('scripts/report.js') });
    const stateDir = join(tempDir('state'), 'state');
    const served = await serve({ SKILLS_DIR: skills, SKILL_MCP_STATE_DIR: stateDir, SKILL_MCP_DECLARATIONS: decl }, ERAS[0]!);
    try {
      const list = await skillList(served.client);
      const detail = (path: string): string | undefined => list.problems.find((p) => p.path === path && p.reason === 'declaration')?.detail;
      expect(detail('SKILL_MCP_DECLARATIONS/linked.yaml')).toContain('is a link; declarations are never read through links');
      expect(detail('SKILL_MCP_DECLARATIONS/huge.yaml')).toContain(`is ${512 * 1024 * 1024} bytes, over the 65536-byte limit`);
      expect(detail('SKILL_MCP_DECLARATIONS/fifo.yaml')).toContain('is not a regular file');
      expect(detail('SKILL_MCP_DECLARATIONS/ghost.yaml')).toContain('declares a skill "ghost" that is not served');
      for (const name of ['linked', 'huge', 'fifo']) {
        expect(
          list.skills.find((s) => s.name === name),
          name,
        ).toMatchObject({ runnable: false, scripts: [], declarationFrom: 'operator' });
        expect(refusal(await callTool(served.client, 'skill_run', { name, script: 'scripts/report.js', args: [] })).code).toBe(
          'NOT_DECLARED',
        );
      }
      // The link's own skill had a sidecar: the operator's (unreadable) file replaced it, it did not fall back.
      expect(list.skills.find((s) => s.name === 'linked')).toMatchObject({ declarationReplaces: ['sidecar'] });
      expect(JSON.stringify(list)).not.toContain(decl);
      expect(runsStarted(stateDir)).toBe(0);
      // Still serving, and a good file beside the bad ones works.
      const preview = await askToken(served.client, { name: 'fine', script: 'scripts/report.js' });
      const ran = await callTool(served.client, 'skill_run', {
        name: 'fine',
        script: 'scripts/report.js',
        args: [],
        confirmToken: preview.confirmToken,
      });
      expect(ran.value['status'], ran.text).toBe('completed');
    } finally {
      await served.close();
    }
  });
});

describe('the hosted pair with different declaration folders', () => {
  let runner: RunnerHandle;
  let served: Served;
  beforeAll(async () => {
    const theirs = tempDir('decl-runner-ops');
    put(theirs, { 'published.yaml': DECLARE('scripts/report.js').replace('timeout: 20', 'timeout: 5') });
    const grant = JSON.stringify([{ skill: 'published', script: 'scripts/report.js' }]);
    runner = await startRunner({
      env: { ...baseEnv(), MCP_SKILLS_PATH: root, MCP_SKILL_RUN: grant, SKILL_MCP_DECLARATIONS: theirs },
      base: tempDir('runner'),
      args: hostedRunnerArgs(),
    });
    served = await serve(
      { MCP_SKILLS_PATH: root, MCP_SKILL_RUN: grant, SKILL_MCP_DECLARATIONS: ops, SKILL_MCP_RUNNER_SOCKET: runner.socketPath },
      ERAS[0]!,
    );
  });
  afterAll(async () => {
    await served?.close();
    await runner?.stop();
  });

  test('the runner refuses the run CONFIG_MISMATCH naming the operator declarations; nothing is prepared or run', async () => {
    const answer = await callTool(served.client, 'skill_run', { name: 'published', script: 'scripts/report.js', args: [] });
    const { code, message } = refusal(answer);
    expect(code).toBe('CONFIG_MISMATCH');
    expect(message).toContain('the operator declarations (what the SKILL_MCP_DECLARATIONS folder holds)');
    expect(message).not.toContain(ops);
    expect(audit(runner.stateDir).filter((l) => l.event === 'run.prepare' || l.event === 'run.accept')).toEqual([]);
    expect(runner.stderr()).toMatch(/configuration differs from this runner's \(declarations\)/);
    const list = await skillList(served.client);
    expect((list.isolation as { configMismatch?: { differs: string[] } }).configMismatch?.differs).toEqual(['declarations']);
  });
});
