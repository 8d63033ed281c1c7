/**
 * What a newcomer meets in the first minutes, tried the way they try it: the quick start run as
 * root from a clone under a 0700 home (`/root`), `SKILLS_DIR=~/…` written in a client's JSON
 * configuration (no shell expands it), and `SKILLS_DIR` naming a file. Each used to serve nothing
 * with a misleading first line on stderr.
 */
import { chmodSync, cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, describe, expect, test } from 'vitest';
import { baseEnv, ERAS, expectNoLeftovers, FRONT_UID, REPO, serve, skillList, tempDir } from './harness.js';

const isRoot = process.getuid?.() === 0;
afterAll(expectNoLeftovers);

/** Starts `node <bin>` as the quick start does (no SKILLS_DIR) and lists the skills. */
async function quickStart(bin: string): Promise<{ names: string[]; stderr: string }> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [bin], env: baseEnv(), stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: 'newcomer', version: '0.0.0' });
  await client.connect(transport);
  try {
    const list = await skillList(client);
    return { names: list.skills.map((skill) => skill.name), stderr };
  } finally {
    await client.close();
  }
}

// Needs root: only a root-started front drops to uid 61183 (CI is root).
describe.skipIf(!isRoot)('the quick start as root, from a clone under a 0700 home', () => {
  test('the bundled skills are served (from a copy the launcher makes), and stderr says why', async () => {
    const home = tempDir('root-home');
    const clone = join(home, 'skill-mcp');
    mkdirSync(clone);
    cpSync(join(REPO, 'dist'), join(clone, 'dist'), { recursive: true });
    cpSync(join(REPO, 'skills'), join(clone, 'skills'), { recursive: true });
    chmodSync(home, 0o700);
    const { names, stderr } = await quickStart(join(clone, 'dist', 'skill-mcp.js'));
    expect(names).toContain('commit-message');
    expect(stderr).toContain(`serving a copy of the bundled skills`);
    expect(stderr).toContain(
      `uid ${FRONT_UID}, which the front drops to as root, cannot read the package's own folder ${join(clone, 'skills')}`,
    );
    expect(stderr).not.toContain('not there (yet)');
  });

  test('a configured folder under a 0700 home is never copied: one line names the folder that stops the uid', async () => {
    const home = tempDir('root-home');
    mkdirSync(join(home, 'my-skills', 'notes'), { recursive: true });
    writeFileSync(join(home, 'my-skills', 'notes', 'SKILL.md'), '---\nname: notes\ndescription: Notes.\n---\nBody.\n');
    chmodSync(home, 0o700);
    const served = await serve({ SKILLS_DIR: join(home, 'my-skills') }, ERAS[0]!);
    try {
      expect((await skillList(served.client)).skills).toEqual([]);
      const stderr = served.stderr();
      expect(stderr).not.toContain('serving a copy');
      expect(stderr).not.toContain('not there (yet)');
      expect(stderr.split(`${home} (mode 0700, owner uid 0) does not let uid ${FRONT_UID} through`).length - 1).toBe(1);
    } finally {
      await served.close();
    }
  });
});

describe('SKILLS_DIR as a client configuration writes it', () => {
  test('"~/my-skills" (no shell to expand it) names the folder in HOME', async () => {
    const home = tempDir('home');
    mkdirSync(join(home, 'my-skills', 'notes'), { recursive: true, mode: 0o755 });
    writeFileSync(join(home, 'my-skills', 'notes', 'SKILL.md'), '---\nname: notes\ndescription: Notes.\n---\nBody.\n', { mode: 0o644 });
    const served = await serve({ HOME: home, SKILLS_DIR: '~/my-skills' }, ERAS[0]!);
    try {
      expect((await skillList(served.client)).skills.map((skill) => skill.name)).toEqual(['notes']);
    } finally {
      await served.close();
    }
  });

  test('a file: stderr says it is a file and what to name instead (its folder, for a SKILL.md)', async () => {
    const dir = tempDir('file-root');
    mkdirSync(join(dir, 'notes'), { mode: 0o755 });
    writeFileSync(join(dir, 'notes', 'SKILL.md'), '---\nname: notes\ndescription: Notes.\n---\nBody.\n', { mode: 0o644 });
    writeFileSync(join(dir, 'README.md'), 'hello\n', { mode: 0o644 });
    for (const [file, hint] of [
      [join(dir, 'README.md'), "names a folder of skills, or one skill's folder"],
      [join(dir, 'notes', 'SKILL.md'), `name the folder that holds it (SKILLS_DIR=${join(dir, 'notes')})`],
    ] as const) {
      const served = await serve({ SKILLS_DIR: file }, ERAS[0]!);
      try {
        await skillList(served.client);
        expect(served.stderr()).toContain(`the skill folder ${file} is a file, not a folder: `);
        expect(served.stderr()).toContain(hint);
        expect(served.stderr()).not.toContain('chmod');
      } finally {
        await served.close();
      }
    }
  });
});
