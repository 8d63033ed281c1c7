/**
 * Dependencies as a client sees them, through a real MCP client over stdio: `skill_list` shows the
 * environment missing with the operator's command, `skill_run` is refused DEPS_MISSING; after
 * `skill-mcp deps install` the preview names the environment by digest and the run imports the
 * package from a local wheel served by a loopback PEP 503 index.
 */
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeWheel } from '../fixtures/deps/packages.js';
import { startPypiIndex } from '../fixtures/deps/servers.js';
import type { Served as Index } from '../fixtures/deps/servers.js';
import { writeDepsSkills } from '../fixtures/deps/skills.js';
import { baseEnv, callTool, ERAS, serve, SERVER_JS, tempDir, type Served } from './harness.js';

describe('skill dependencies through an MCP client', () => {
  let served: Served;
  let index: Index;
  let env: Record<string, string>;
  beforeAll(async () => {
    const files = tempDir('deps-wheels');
    const wheel = makeWheel(files, 'e2epkg', '0.3.0', { 'e2epkg/__init__.py': 'def greet(name):\n    return "hello " + name\n' });
    index = await startPypiIndex({ e2epkg: [wheel] });
    const root = tempDir('deps-skills');
    writeDepsSkills(root, {
      greeter: {
        requirements: '    python: ["e2epkg==0.3.0"]',
        run: [{ script: 'greet.py', interpreter: 'python3' }],
        files: { 'greet.py': 'import sys, e2epkg\nprint(e2epkg.greet(sys.argv[1]))\n' },
      },
    });
    env = { SKILLS_DIR: root, SKILL_MCP_STATE_DIR: join(tempDir('deps-state'), 'state'), SKILL_MCP_PIP_INDEX_URL: `${index.url}/simple/` };
    served = await serve(env, ERAS[0]!);
  }, 60_000);
  afterAll(async () => {
    await served?.close();
    await index?.close();
    // The environments are read-only folders: open them so the suite's temp folder can go.
    spawnSync('chmod', ['-R', 'u+w', env['SKILL_MCP_STATE_DIR']!]);
  });

  it('DEPS_MISSING names the command; after deps install the preview shows the environment and the run imports the package', async () => {
    const listed = await callTool(served.client, 'skill_list', {});
    const greeter = (listed.value['skills'] as { name: string; unavailableScripts?: { why: string; deps?: { state: string }[] }[] }[]).find(
      (s) => s.name === 'greeter',
    )!;
    expect(greeter.unavailableScripts?.[0]).toMatchObject({
      why: expect.stringContaining('skill-mcp deps install --skill greeter'),
      deps: [{ state: 'missing' }],
    });
    const refused = await callTool(served.client, 'skill_run', { name: 'greeter', script: 'greet.py', args: ['world'] });
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain('DEPS_MISSING');

    // Not spawnSync: the index answers from this process.
    const install = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [SERVER_JS, 'deps', 'install'], { env: { ...baseEnv(), ...env } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.on('close', (status) => resolve({ status, stdout, stderr }));
    });
    expect(install.status, install.stdout + install.stderr).toBe(0);
    expect(install.stdout).toContain('installed 1 package(s): e2epkg==0.3.0');

    const preview = await callTool(served.client, 'skill_run', { name: 'greeter', script: 'greet.py', args: ['world'] });
    const willRun = (preview.value['preview'] as { willRun: { deps: { kind: string; digest: string; state: string }[] } }).willRun;
    expect(willRun.deps).toEqual([{ kind: 'python', digest: expect.stringMatching(/^[0-9a-f]{64}$/), state: 'ready' }]);
    const ran = await callTool(served.client, 'skill_run', {
      name: 'greeter',
      script: 'greet.py',
      args: ['world'],
      confirmToken: preview.value['confirmToken'],
    });
    expect(ran.isError, ran.text).toBe(false);
    expect(ran.value['stdout']).toBe('hello world\n');
  }, 240_000);
});
