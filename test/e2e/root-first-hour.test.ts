/**
 * Root's first hour, in a fresh container-like setup (docs/configuration.md, "The state folder"):
 * root's home 0700, no state folder configured, an empty /var/lib — each process in a private mount
 * namespace where /var/lib is a folder of this test, so the machine's own /var/lib/skill-mcp is
 * never touched. `deps install` then a run of the published pdf skill work from the default state
 * folder (/var/lib/skill-mcp, which the run uids can reach); a state folder configured inside the
 * 0700 home is named, with the fix, by `deps install`, `doctor` and the runner at start, and the
 * model is told without the folder's path.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exec, PDF_SKIP_REASON, PDF_WHEEL, publishPdfSkill, startPdfIndex } from '../fixtures/published/pdf-fixture.js';
import type { Served as Index } from '../fixtures/deps/servers.js';
import { removeTree } from '../../runner/deps/store.js';
import { baseEnv, ERAS, expectNoLeftovers, REPO, serve, SERVER_JS, tempDir } from './harness.js';

const isRoot = process.getuid?.() === 0;
/** Whether this root may make a private mount namespace (not in every container). */
const unshareWorks =
  isRoot && spawnSync('unshare', ['-m', '--propagation', 'private', 'true'], { stdio: 'ignore', timeout: 10_000 }).status === 0;
const skipWhy = !isRoot
  ? 'needs root'
  : !unshareWorks
    ? 'no private mount namespace here (unshare -m)'
    : !PDF_WHEEL
      ? PDF_SKIP_REASON
      : undefined;

afterAll(expectNoLeftovers);

describe.skipIf(skipWhy !== undefined)(`root's first hour, fresh (${skipWhy ?? 'home 0700, no state folder configured'})`, () => {
  let index: Index;
  let varlib: string;
  let home: string;
  let env: Record<string, string>;
  /** Runs in a mount namespace of its own whose /var/lib is `varlib` (empty at first): the fresh machine's. */
  let fresh: string[];

  beforeAll(async () => {
    index = await startPdfIndex();
    const root = tempDir('first-hour-skills');
    const declarations = tempDir('first-hour-declarations');
    publishPdfSkill(root, declarations);
    varlib = tempDir('first-hour-varlib');
    home = tempDir('first-hour-home');
    chmodSync(home, 0o700);
    fresh = ['unshare', '-m', '--propagation', 'private', 'sh', '-c', 'mount --bind "$0" /var/lib && exec "$@"', varlib];
    env = {
      ...baseEnv(),
      HOME: home,
      SKILLS_DIR: root,
      SKILL_MCP_DECLARATIONS: declarations,
      SKILL_MCP_PIP_INDEX_URL: `${index.url}/simple/`,
      MCP_CONFIRM_MODE: 'auto',
    };
    // Nobody configured a state folder.
    delete env['SKILL_MCP_STATE_DIR'];
    delete env['XDG_STATE_HOME'];
  }, 60_000);
  afterAll(async () => {
    await index?.close();
    if (varlib) removeTree(join(varlib, 'skill-mcp'));
  });

  const run = (args: string[], extra: Record<string, string> = {}) =>
    exec(fresh[0]!, [...fresh.slice(1), process.execPath, SERVER_JS, ...args], { ...env, ...extra });

  it('deps install builds into /var/lib/skill-mcp; doctor says the run uids can reach it; the pdf skill then runs from there', async () => {
    const install = await run(['deps', 'install', '--skill', 'pdf']);
    expect(install.out).toContain('environments in /var/lib/skill-mcp/envs');
    expect(install.out).toMatch(/pdf: python environment [0-9a-f]{64}: installed 1 package\(s\): pypdf==/);
    expect(install.code, install.out).toBe(0);
    // Made where the run uids can reach it: /var/lib/skill-mcp and envs/ are 0711 (traversable, not listable).
    expect(statSync(join(varlib, 'skill-mcp')).mode & 0o777).toBe(0o711);
    expect(statSync(join(varlib, 'skill-mcp', 'envs')).mode & 0o777).toBe(0o711);
    const doctor = await run(['doctor']);
    expect(doctor.out).toContain('State folder (the default): /var/lib/skill-mcp\n  ok: the run uids can reach it');

    const digest = /python environment ([0-9a-f]{64}): installed/.exec(install.out)![1]!;
    const work = tempDir('first-hour-form');
    const made = await exec('python3', [join(REPO, 'test/fixtures/make_pdf_form.py'), join(work, 'form.pdf')], {
      PATH: '/usr/bin:/bin',
      PYTHONPATH: join(varlib, 'skill-mcp', 'envs', digest, 'site'),
    });
    expect(made.code, made.out).toBe(0);
    const served = await serve({ ...env, SKILL_MCP_STATE_DIR: '' }, ERAS[1]!, { spawnPrefix: fresh });
    try {
      const args = {
        name: 'pdf',
        script: 'scripts/check_fillable_fields.py',
        args: ['form.pdf'],
        files: [{ path: 'form.pdf', base64: readFileSync(join(work, 'form.pdf')).toString('base64') }],
      };
      const first = await served.client.callTool({ name: 'skill_run', arguments: args });
      const preview = first.structuredContent as { confirmToken: string; preview: { willRun: { deps: unknown } } };
      expect(preview.preview.willRun.deps).toEqual([{ kind: 'python', digest, state: 'ready' }]);
      const ran = await served.client.callTool({ name: 'skill_run', arguments: { ...args, confirmToken: preview.confirmToken } });
      expect(ran.structuredContent).toMatchObject({ status: 'completed', exitCode: 0, stdout: 'This PDF has fillable form fields\n' });
    } finally {
      await served.close();
    }
    // The runner's state (its key, ledger and audit log) went to the same default folder.
    expect(existsSync(join(varlib, 'skill-mcp', 'audit.log'))).toBe(true);
  }, 300_000);

  it('a state folder inside the 0700 home is named with the fix by deps install, doctor and the runner at start; the model is told without the path', async () => {
    const inHome = join(home, 'state');
    const install = await run(['deps', 'install', '--skill', 'pdf'], { SKILL_MCP_STATE_DIR: inHome });
    expect(install.code).toBe(1);
    const named = `the state folder ${inHome} (from SKILL_MCP_STATE_DIR) cannot be used by a root runner: ${home} is mode 0700 (owner uid 0)`;
    expect(install.out).toContain(named);
    expect(install.out).toContain(`chmod o+x ${home}`);
    const doctor = await run(['doctor'], { SKILL_MCP_STATE_DIR: inHome });
    expect(doctor.code).toBe(1);
    expect(doctor.out).toContain(`PROBLEM: ${named}`);
    expect(doctor.out).toContain('but NOT for skills with requirements');

    const served = await serve({ ...env, SKILL_MCP_STATE_DIR: inHome }, ERAS[1]!, { spawnPrefix: fresh });
    try {
      const refused = await served.client.callTool({
        name: 'skill_run',
        arguments: { name: 'pdf', script: 'scripts/check_fillable_fields.py', args: ['form.pdf'] },
      });
      expect(refused.isError).toBe(true);
      const text = JSON.stringify(refused.structuredContent ?? refused.content);
      expect(text).toContain('DEPS_MISSING');
      expect(text).toContain(
        "its environments cannot be used: they are kept in the runner's state folder, which a folder on its way keeps the run uids out of",
      );
      // Security: the host's folders never reach the model.
      expect(text).not.toContain(home);
      await served.waitForStderr(/error: the state folder/);
      expect(served.stderr()).toContain(`error: ${named}`);
    } finally {
      await served.close();
    }
  }, 120_000);
});
