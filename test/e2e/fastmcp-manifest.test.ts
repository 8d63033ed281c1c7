/**
 * FastMCP's skill manifest (`skill://<name>/_manifest`, server/catalog/fastmcp-manifest.ts) over a
 * real stdio transport in both eras: its shape is what FastMCP's client parses, its hashes are the
 * SEP-2640 digests, it stays out of everything a strict host walks, and a skill that holds a real
 * `_manifest` is kept out of `skill://` with a problem saying why rather than shadowed. FastMCP's
 * own client reading it is in test/e2e/python-clients.test.ts.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  ERAS,
  REPO,
  SERVER_JS,
  SUITE_TMP,
  VARIED_SKILLS,
  callTool,
  expectNoLeftovers,
  rpc,
  rpcErrorCode,
  serve,
  skillList,
  tempDir,
  type Served,
} from './harness.js';
import { inspectorCommand } from '../verifiers.js';

afterAll(expectNoLeftovers);

function put(path: string, data: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, data);
}

/** A good skill, one holding a real `_manifest` file, one holding a `_manifest/` folder. */
let shadowRoot: string;
beforeAll(() => {
  shadowRoot = tempDir('manifest-shadow');
  const skill = (name: string): void =>
    put(join(shadowRoot, name, 'SKILL.md'), `---\nname: ${name}\ndescription: The ${name} skill.\n---\n# ${name}\n`);
  skill('plain');
  put(join(shadowRoot, 'plain', 'notes', '_manifest'), 'a _manifest below the top is an ordinary file\n');
  skill('real-manifest');
  put(join(shadowRoot, 'real-manifest', '_manifest'), '{"skill": "someone-else", "files": []}\n');
  skill('manifest-folder');
  put(join(shadowRoot, 'manifest-folder', '_manifest', 'inside.md'), '# inside\n');
});

interface Manifest {
  skill: string;
  files: { path: string; size: number; hash: string }[];
}

async function readManifest(served: Served, name: string): Promise<{ manifest: Manifest; mimeType: unknown }> {
  const result = await served.client.readResource({ uri: `skill://${name}/_manifest` });
  expect(result.contents).toHaveLength(1);
  const content = result.contents[0] as { uri: string; text?: string; mimeType?: string };
  expect(content.uri).toBe(`skill://${name}/_manifest`);
  expect(typeof content.text, 'FastMCP reads the manifest only as text contents').toBe('string');
  return { manifest: JSON.parse(content.text!) as Manifest, mimeType: content.mimeType };
}

describe.each(ERAS)('FastMCP manifest, $name', (era) => {
  let served: Served;
  beforeAll(async () => {
    served = await serve({ SKILLS_DIR: VARIED_SKILLS }, era);
  });
  afterAll(async () => {
    await served?.close();
  });

  test('every published skill has one: {skill, files: [{path, size, hash}]}, every hash and size equal to its skills/get digest', async () => {
    const { skills } = await served.skills.list();
    expect(skills.length).toBe(21);
    for (const entry of skills) {
      const name = entry.frontmatter.name;
      const { manifest, mimeType } = await readManifest(served, name);
      expect(mimeType).toBe('application/json');
      expect(Object.keys(manifest).sort()).toEqual(['files', 'skill']);
      expect(manifest.skill).toBe(name);
      const resources = entry.resources as { uri: string; digest: string; size: number }[];
      const fromEntry = resources.map((r) => ({
        path: decodeURIComponent(r.uri.slice(`skill://${name}/`.length)),
        size: r.size,
        hash: r.digest,
      }));
      expect(manifest.files, name).toEqual(fromEntry);
      for (const file of manifest.files) expect(Object.keys(file).sort()).toEqual(['hash', 'path', 'size']);
    }
  });

  test('it is not a file of any skill: absent from the SEP-2640 entries, resources/list, directory listings and skill_load', async () => {
    const { skills } = await served.skills.list();
    for (const entry of skills) {
      for (const r of entry.resources as { uri: string }[]) expect(r.uri).not.toMatch(/\/_manifest$/);
    }
    const listed = await served.client.listResources();
    expect(listed.resources.map((r) => r.uri).filter((u) => u.includes('_manifest'))).toEqual([]);
    const root = await rpc(served.client, 'resources/directory/read', { uri: 'skill://api-docs' });
    expect((root['resources'] as { uri: string }[]).map((r) => r.uri)).not.toContain('skill://api-docs/_manifest');
    const load = await callTool(served.client, 'skill_load', { name: 'api-docs' });
    expect((load.value['files'] as { path: string }[]).map((f) => f.path)).not.toContain('_manifest');
  });

  test('a skill that is not served in skill:// has no manifest either', async () => {
    expect(await rpcErrorCode(served.client.readResource({ uri: 'skill://no-such-skill/_manifest' }))).toBeLessThan(0);
  });
});

describe.each(ERAS)('a skill holding its own _manifest, $name', (era) => {
  let served: Served;
  beforeAll(async () => {
    served = await serve({ SKILLS_DIR: shadowRoot }, era);
  });
  afterAll(async () => {
    await served?.close();
  });

  test('a real _manifest file or folder at the top is not shadowed: the skill is kept out of skill:// and a not-published problem says why', async () => {
    const list = await skillList(served.client);
    for (const name of ['real-manifest', 'manifest-folder']) {
      const entry = list.skills.find((s) => s.name === name)!;
      expect(entry.published, name).toBe(false);
      const problem = list.problems.find((p) => p.path === `${shadowRoot.split('/').pop()}/${name}` && p.reason === 'not-published');
      expect(problem?.detail, name).toMatch(/holds "_manifest" at its top, the path FastMCP clients read .* rename it/);
    }
    const { skills } = await served.skills.list();
    expect(skills.map((s) => s.frontmatter.name)).toEqual(['plain']);
    expect(await rpcErrorCode(served.client.readResource({ uri: 'skill://real-manifest/_manifest' }))).toBeLessThan(0);
  });

  test('the shadowed file is still served byte for byte by the tools', async () => {
    const answer = await callTool(served.client, 'skill_file', { name: 'real-manifest', paths: ['_manifest'] });
    expect((answer.value['files'] as { text?: string }[])[0]?.text).toBe('{"skill": "someone-else", "files": []}\n');
  });

  test('a _manifest below the top is an ordinary file: listed in the entry and in the manifest', async () => {
    const { skills } = await served.skills.list();
    expect((skills[0]!.resources as { uri: string }[]).map((r) => r.uri)).toContain('skill://plain/notes/_manifest');
    const { manifest } = await readManifest(served, 'plain');
    expect(manifest.files.map((f) => f.path).sort()).toEqual(['SKILL.md', 'notes/_manifest']);
  });
});

describe.each(['legacy', 'modern'])('Inspector --verify --require-digests with FastMCP manifests served, --protocol-era %s', (era) => {
  test('a folder holding a _manifest skill still verifies (exit 0): only the skills a strict host can load are listed', async () => {
    const args = [
      '--cli',
      '-e',
      `SKILLS_DIR=${shadowRoot}`,
      '-e',
      `TMPDIR=${SUITE_TMP}`,
      '-e',
      `SKILL_MCP_STATE_DIR=${SUITE_TMP}/state`,
      process.execPath,
      SERVER_JS,
      '--protocol-era',
      era,
      '--method',
      'skills/list',
      '--verify',
      '--require-digests',
    ];
    const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(inspectorCommand()[0], [inspectorCommand()[1], ...args], { cwd: REPO, timeout: 60_000 }, (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
      });
    });
    expect(run.code, run.stderr).toBe(0);
    const uris = run.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => (JSON.parse(l) as { uri: string }).uri);
    expect(uris).toEqual(['skill://plain/SKILL.md']);
  });
});
