/**
 * The read path a user sees, over a real stdio transport in both protocol eras, on the committed
 * folder of varied well-formed skills (binary, CRLF, unicode names, deep folders, a 600-line
 * SKILL.md, block-scalar descriptions, the third layout): every tool, prompt, resource and
 * skills-extension method, with bytes compared to what is on disk.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BASE_ENV_NAMES } from '../levels.js';
import {
  BUNDLED_SKILLS,
  ERAS,
  REPO,
  VARIED_SKILLS,
  callTool,
  expectNoLeftovers,
  rpc,
  rpcErrorCode,
  serve,
  skillList,
  type Served,
} from './harness.js';

afterAll(expectNoLeftovers);

const PAGE_SIZE = 5;

/** Every file of a skill folder as `/`-separated relative paths (the fixture has no links or dotfiles). */
function filesOnDisk(dir: string, rel = ''): string[] {
  return readdirSync(join(dir, rel), { withFileTypes: true }).flatMap((e) => {
    const path = rel ? `${rel}/${e.name}` : e.name;
    return e.isDirectory() ? filesOnDisk(dir, path) : [path];
  });
}

function skillDirs(): Map<string, string> {
  const dirs = new Map<string, string>();
  for (const name of readdirSync(VARIED_SKILLS)) {
    if (name === 'skills')
      for (const inner of readdirSync(join(VARIED_SKILLS, 'skills'))) dirs.set(inner, join(VARIED_SKILLS, 'skills', inner));
    else dirs.set(name, join(VARIED_SKILLS, name));
  }
  return dirs;
}

const sha256 = (bytes: Uint8Array): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

describe.each(ERAS)('read path on varied skills, $name', (era) => {
  let served: Served;
  const dirs = skillDirs();
  /** Every answer the model or host saw, checked at the end for host paths. */
  const seen: string[] = [];

  beforeAll(async () => {
    served = await serve({ SKILLS_DIR: VARIED_SKILLS, SKILL_MCP_PAGE_SIZE: String(PAGE_SIZE) }, era);
  });
  afterAll(async () => {
    await served?.close();
  });

  test('the era asked for is the era negotiated', () => {
    expect(served.client.getProtocolEra()).toBe(era.versionNegotiation ? 'modern' : 'legacy');
  });

  test('offers four read-only, closed-world readers, skill_run annotated as the destructive, open-world tool it is, and skill_data_clear as destructive but closed-world', async () => {
    const { tools } = await served.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'skill_data_clear',
      'skill_file',
      'skill_list',
      'skill_load',
      'skill_run',
      'skill_search',
    ]);
    expect(tools.find((t) => t.name === 'skill_data_clear')!.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
      openWorldHint: false,
    });
    for (const tool of tools.filter((t) => t.name !== 'skill_run' && t.name !== 'skill_data_clear'))
      expect(tool.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false, openWorldHint: false });
    expect(tools.find((t) => t.name === 'skill_run')!.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: true,
    });
  });

  test('skill_list lists every skill of all layouts, sorted, with no problems', async () => {
    const list = await skillList(served.client);
    seen.push(JSON.stringify(list));
    expect(list.problems).toEqual([]);
    expect(list.skills.map((s) => s.name)).toEqual([...dirs.keys()].sort());
    expect(list.grantFrom).toBe('skill declarations (standalone)');
    for (const skill of list.skills) {
      expect(skill.published).toBe(true);
      expect(skill.uri).toBe(`skill://${skill.name}/SKILL.md`);
      expect(skill.fileCount).toBe(filesOnDisk(dirs.get(skill.name)!).length);
    }
    const byName = new Map(list.skills.map((s) => [s.name, s]));
    // Standalone self-grant: the declared variable is granted but unset here, so the script gets only
    // the allowlist (the runner's private HOME and TMPDIR, our PATH) and no envWarning names it.
    expect(byName.get('python-tool')!.scripts).toEqual([
      {
        script: 'scripts/csv_to_json.py',
        interpreter: 'python3',
        timeoutMs: 30_000,
        envNames: BASE_ENV_NAMES,
        envNotSet: ['CSV_DELIMITER'],
      },
    ]);
    expect(byName.get('declared-env')!.scripts[0]!.envNotSet).toEqual(['WEATHER_API_KEY', 'WEATHER_UNITS']);
    expect(byName.get('nested-refs')!.scripts.map((s) => s.interpreter)).toEqual(['node', 'python3']);
    expect(byName.get('folded-description')!.description).toBe(
      'A description written as a folded block scalar, spread over several lines in the source, which YAML joins into one line. It keeps going for a while so that it is long-ish.\n',
    );
    expect(byName.get('literal-description')!.whenToUse).toBe('When you need a literal block, with no final newline.');
  });

  test('skill_load returns the body byte for byte (CRLF, 600 lines, unicode, empty) and the manifest with sizes', async () => {
    for (const name of ['crlf-notes', 'long-instructions', 'unicode-text', 'empty-body', 'binary-assets']) {
      const answer = await callTool(served.client, 'skill_load', { name });
      seen.push(answer.text);
      expect(answer.isError).toBe(false);
      const disk = readFileSync(join(dirs.get(name)!, 'SKILL.md'), 'utf8');
      const body = answer.value['body'] as string;
      expect(disk.endsWith(body)).toBe(true);
      expect(disk.slice(0, disk.length - body.length)).toMatch(/^---\r?\n[\s\S]*\r?\n---(\r?\n)?$/);
      const files = answer.value['files'] as { path: string; size: number }[];
      expect(files.map((f) => f.path).sort()).toEqual(filesOnDisk(dirs.get(name)!).sort());
      for (const f of files) expect(f.size).toBe(statSync(join(dirs.get(name)!, f.path)).size);
    }
    const crlf = await callTool(served.client, 'skill_load', { name: 'crlf-notes' });
    expect(crlf.value['body']).toContain('\r\n# CRLF notes\r\n');
    const long = await callTool(served.client, 'skill_load', { name: 'long-instructions' });
    expect((long.value['body'] as string).split('\n').length).toBeGreaterThan(590);
  });

  test('skill_file returns every file of every skill exactly as on disk, text or base64', async () => {
    for (const [name, dir] of dirs) {
      const paths = filesOnDisk(dir);
      for (let i = 0; i < paths.length; i += 8) {
        const batch = paths.slice(i, i + 8);
        const answer = await callTool(served.client, 'skill_file', { name, paths: batch });
        expect(answer.isError, answer.text.slice(0, 300)).toBe(false);
        const files = answer.value['files'] as {
          path: string;
          text?: string;
          base64?: string;
          size: number;
          truncated: boolean;
          mediaType: string;
        }[];
        expect(files.map((f) => f.path)).toEqual(batch);
        for (const file of files) {
          const disk = readFileSync(join(dir, file.path));
          const got = file.text !== undefined ? Buffer.from(file.text, 'utf8') : Buffer.from(file.base64 ?? '', 'base64');
          expect(got.equals(disk), `${name}/${file.path}`).toBe(true);
          expect(file.size).toBe(disk.length);
          expect(file.truncated).toBe(false);
        }
      }
    }
  });

  test('skill_file serves binary as base64 with a media type, and NUL-filled or latin-1 bytes never as text', async () => {
    const answer = await callTool(served.client, 'skill_file', {
      name: 'binary-assets',
      paths: ['assets/logo.png', 'assets/fonts/brand.ttf', 'data/latin1.txt', 'data/zeros.bin', 'data/with-bom.txt', 'SKILL.md'],
    });
    const files = answer.value['files'] as { path: string; text?: string; base64?: string; mediaType: string }[];
    expect(files.map((f) => [f.path, f.text !== undefined ? 'text' : 'base64', f.mediaType])).toEqual([
      ['assets/logo.png', 'base64', 'image/png'],
      ['assets/fonts/brand.ttf', 'base64', 'font/ttf'],
      ['data/latin1.txt', 'base64', 'text/plain'],
      ['data/zeros.bin', 'base64', 'application/octet-stream'],
      ['data/with-bom.txt', 'text', 'text/plain'],
      ['SKILL.md', 'text', 'text/markdown'],
    ]);
    expect(files[4]!.text!.startsWith('\uFEFF')).toBe(true);
  });

  test('skill_load and skill_file of an unknown skill are refusals that name the served skills', async () => {
    for (const [tool, args] of [
      ['skill_load', { name: 'nope' }],
      ['skill_file', { name: 'nope', paths: ['SKILL.md'] }],
    ] as const) {
      const answer = await callTool(served.client, tool, args);
      expect(answer.isError).toBe(true);
      expect(answer.value['error']).toMatchObject({ code: 'UNKNOWN_SKILL' });
      expect(answer.text).toContain('api-docs');
    }
  });

  test('prompts: every skill is a prompt (paged), its message is the body, an unknown prompt is -32602', async () => {
    const names: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      // Raw pages: the SDK's listPrompts() walks every page itself when given no cursor.
      const page = await rpc(served.client, 'prompts/list', cursor === undefined ? {} : { cursor });
      names.push(...(page['prompts'] as { name: string }[]).map((p) => p.name));
      cursor = page['nextCursor'] as string | undefined;
      pages++;
    } while (cursor !== undefined);
    expect(names).toEqual([...dirs.keys()].sort());
    expect(pages).toBe(Math.ceil(dirs.size / PAGE_SIZE));
    expect((await served.client.listPrompts()).prompts).toHaveLength(dirs.size);
    const prompt = await served.client.getPrompt({ name: 'crlf-notes' });
    const load = await callTool(served.client, 'skill_load', { name: 'crlf-notes' });
    expect(prompt.messages[0]!.content).toEqual({ type: 'text', text: load.value['body'] });
    expect(await rpcErrorCode(served.client.getPrompt({ name: 'no-such-skill' }))).toBe(-32602);
    expect(await rpcErrorCode(rpc(served.client, 'prompts/list', { cursor: 'not-a-cursor' }))).toBe(-32602);
  });

  test('resources/list holds each SKILL.md as text/markdown with name and description; resources/read serves exact bytes', async () => {
    const uris: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await served.client.listResources(cursor === undefined ? {} : { cursor });
      for (const r of page.resources) {
        expect(r.mimeType).toBe('text/markdown');
        expect(r.description).toBeTruthy();
        uris.push(r.uri);
      }
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(uris.sort()).toEqual([...dirs.keys()].sort().map((n) => `skill://${n}/SKILL.md`));
    const png = await served.client.readResource({ uri: 'skill://binary-assets/assets/logo.png' });
    const blob = png.contents[0] as { blob?: string; mimeType?: string };
    expect(Buffer.from(blob.blob!, 'base64').equals(readFileSync(join(dirs.get('binary-assets')!, 'assets/logo.png')))).toBe(true);
    expect(blob.mimeType).toBe('image/png');
  });

  test('skills/list pages with nextCursor, never splits an entry, and matches the bytes on disk', async () => {
    const entries: { uri: string; frontmatter: Record<string, unknown>; resources: { uri: string; digest: string; size: number }[] }[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await rpc(served.client, 'skills/list', cursor === undefined ? {} : { cursor });
      seen.push(JSON.stringify(page));
      if (era.versionNegotiation) expect(page).toMatchObject({ ttlMs: expect.any(Number), cacheScope: expect.any(String) });
      entries.push(...(page['skills'] as typeof entries));
      cursor = page['nextCursor'] as string | undefined;
      pages++;
    } while (cursor !== undefined);
    expect(pages).toBe(Math.ceil(dirs.size / PAGE_SIZE));
    expect(entries.map((e) => e.uri)).toEqual([...dirs.keys()].sort().map((n) => `skill://${n}/SKILL.md`));
    for (const entry of entries) {
      const name = entry.uri.slice('skill://'.length, -'/SKILL.md'.length);
      expect(entry.frontmatter['name']).toBe(name);
      const onDisk = filesOnDisk(dirs.get(name)!);
      expect(entry.resources.length).toBe(onDisk.length);
      for (const path of onDisk) {
        const bytes = readFileSync(join(dirs.get(name)!, path));
        const uri = new URL(`skill://${name}/${path.split('/').map(encodeURIComponent).join('/')}`).href;
        const listed = entry.resources.find((r) => decodeURIComponent(r.uri) === decodeURIComponent(uri));
        expect(listed, `${name}/${path}`).toMatchObject({ digest: sha256(bytes), size: bytes.length });
      }
    }
    const metadata = entries.find((e) => e.uri === 'skill://metadata-rich/SKILL.md')!;
    expect(metadata.frontmatter).toMatchObject({
      'allowed-tools': ['Read', 'Grep', 'Bash(git log:*)'],
      'x-extra': { count: 3, ratio: 0.25, enabled: true, nothing: null, list: ['one', 2, { three: 3 }] },
    });
  });

  test('skills/list with a forged cursor is -32602, not a silent restart', async () => {
    expect(await rpcErrorCode(rpc(served.client, 'skills/list', { cursor: 'bm90LWEtY3Vyc29y' }))).toBe(-32602);
    expect(await rpcErrorCode(rpc(served.client, 'skills/list', { cursor: '' }))).toBe(-32602);
  });

  test('every file of every skill verifies against its entry through the SDK SkillsClient (size, digest, frontmatter)', async () => {
    const { skills } = await served.skills.list();
    expect(skills).toHaveLength(dirs.size);
    for (const skill of skills) {
      if (skill.resources === 'dynamic') throw new Error('no skill here is dynamic');
      for (const resource of skill.resources) {
        const file = await served.skills.read(skill, resource.uri);
        expect(file.verified).toBe(true);
      }
    }
  });

  test('skills/get returns any served skill by its SKILL.md URI; anything else is -32602', async () => {
    const { skill } = await served.skills.get('skill://unicode-text/SKILL.md');
    expect(skill.frontmatter['description']).toContain('日本語');
    for (const uri of [
      'skill://no-such-skill/SKILL.md',
      'skill://unicode-text/references',
      'skill://unicode-text',
      'skill://unicode-text/references/caf%C3%A9%20notes.md',
      'file:///etc/passwd',
      'skill://UNICODE-TEXT/SKILL.md',
    ]) {
      expect(await rpcErrorCode(rpc(served.client, 'skills/get', { uri })), uri).toBe(-32602);
    }
  });

  test('resources/directory/read lists direct children of the root and of subfolders; files and unknowns are -32602', async () => {
    const root = await served.skills.readDirectory('skill://api-docs');
    expect(root.resources.map((r) => [r.uri, r.mimeType])).toEqual([
      ['skill://api-docs/SKILL.md', 'text/markdown'],
      ['skill://api-docs/references', 'inode/directory'],
      ['skill://api-docs/scripts', 'inode/directory'],
    ]);
    const sub = await served.skills.readDirectory('skill://api-docs/references');
    expect(sub.resources.map((r) => r.uri)).toEqual([
      'skill://api-docs/references/openapi-primer.md',
      'skill://api-docs/references/style.md',
    ]);
    const deep = await served.skills.readDirectory('skill://deep-folders/a/b/c/d/e/f/g');
    expect(deep.resources.map((r) => r.uri)).toEqual(['skill://deep-folders/a/b/c/d/e/f/g/h']);
    const paged = await served.skills.readDirectory('skill://many-files/alpha');
    expect(paged.resources).toHaveLength(20);
    const firstPage = await rpc(served.client, 'resources/directory/read', { uri: 'skill://many-files/alpha' });
    expect(firstPage['nextCursor']).toEqual(expect.any(String));
    for (const uri of [
      'skill://api-docs/SKILL.md',
      'skill://api-docs/references/style.md',
      'skill://api-docs/nope',
      'skill://nope',
      'skill://api-docs/references/',
      'skill://api-docs/../etc',
    ]) {
      expect(await rpcErrorCode(rpc(served.client, 'resources/directory/read', { uri })), uri).toBe(-32602);
    }
    expect(await rpcErrorCode(rpc(served.client, 'resources/directory/read', { uri: 'skill://many-files/alpha', cursor: 'forged' }))).toBe(
      -32602,
    );
  });

  test('file names with spaces, unicode (NFC and NFD) and punctuation round-trip through directory reads and resources/read', async () => {
    const dir = join(dirs.get('unicode-text')!, 'data');
    const listing = await served.skills.readDirectory('skill://unicode-text/data');
    expect(listing.resources.map((r) => r.name).sort()).toEqual(readdirSync(dir).sort());
    for (const resource of listing.resources) {
      const read = await served.client.readResource({ uri: resource.uri });
      const content = read.contents[0] as { text?: string };
      expect(Buffer.from(content.text!, 'utf8').equals(readFileSync(join(dir, resource.name)))).toBe(true);
    }
  });

  test('resources/read of unknown or malformed URIs is -32602', async () => {
    for (const uri of [
      'skill://api-docs/nope.md',
      'skill://nope/SKILL.md',
      'skill://api-docs/references',
      'skill://api-docs',
      'skill://api-docs/references//style.md',
      'skill://api-docs/SKILL.md?x=1',
      'skill://api-docs/SKILL.md#frag',
    ]) {
      expect(await rpcErrorCode(rpc(served.client, 'resources/read', { uri })), uri).toBe(-32602);
    }
  });

  test('no answer carries an absolute host path', () => {
    expect(seen.length).toBeGreaterThan(0);
    for (const text of seen) {
      expect(text).not.toContain(REPO);
      expect(text).not.toContain(VARIED_SKILLS);
    }
  });
});

describe.each(ERAS)('bundled skills, $name', (era) => {
  test('with nothing configured the bundled commit-message skill is served, listed and verifiable', async () => {
    const served = await serve({}, era);
    try {
      const list = await skillList(served.client);
      expect(list.problems).toEqual([]);
      expect(list.skills.map((s) => s.name)).toEqual(['commit-message']);
      expect(list.skills[0]!.scripts).toEqual([
        { script: 'scripts/check-message.js', interpreter: 'node', timeoutMs: 10_000, envNames: BASE_ENV_NAMES },
      ]);
      const { skills } = await served.skills.list();
      for (const skill of skills) {
        if (skill.resources === 'dynamic') throw new Error('not dynamic');
        for (const r of skill.resources) expect((await served.skills.read(skill, r.uri)).verified).toBe(true);
      }
      const root = await served.skills.readDirectory('skill://commit-message');
      expect(root.resources.some((r) => r.mimeType === 'inode/directory')).toBe(true);
      expect(JSON.stringify(list)).not.toContain(BUNDLED_SKILLS);
    } finally {
      await served.close();
    }
  });

  test('a root that is itself a skill (<root>/SKILL.md) is served under its folder name, with its subfolders', async () => {
    const served = await serve({ SKILLS_DIR: `${VARIED_SKILLS}/api-docs` }, era);
    try {
      const list = await skillList(served.client);
      expect(list.problems).toEqual([]);
      expect(list.skills.map((s) => [s.name, s.fileCount, s.published])).toEqual([['api-docs', 4, true]]);
      const dir = await served.skills.readDirectory('skill://api-docs/references');
      expect(dir.resources).toHaveLength(2);
    } finally {
      await served.close();
    }
  });

  test('hosted without MCP_SKILL_RUN grants nothing and says so, while still serving instructions', async () => {
    const served = await serve({ MCP_SKILLS_PATH: BUNDLED_SKILLS }, era);
    try {
      const list = await skillList(served.client);
      expect(list.grantFrom).toBe('none (hosted default)');
      expect(list.grantNote).toContain('MCP_SKILL_RUN');
      expect(list.skills[0]).toMatchObject({ runnable: false, scripts: [], ungrantedScripts: [{ script: 'scripts/check-message.js' }] });
      expect((await callTool(served.client, 'skill_load', { name: 'commit-message' })).isError).toBe(false);
    } finally {
      await served.close();
    }
  });
});
