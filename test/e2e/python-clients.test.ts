/**
 * The Python clients people use against the built bin, over real stdio and HTTP: FastMCP 4.0.10's
 * skill utilities (`download_skill`, `sync_skills`, which read our `_manifest`) must write
 * byte-exact copies of the varied skills, and the MCP Python SDK 2.3.0 must list tools, read every
 * resource and get every prompt, in both protocol eras. The clients live in a venv that .ci/run
 * makes (tools/python-clients/ensure.sh); under CI a missing venv fails this file, elsewhere it
 * skips and says how to make one. test/e2e/python/clients.py is the Python side.
 *
 * The other way round, `skill-mcp pull` copies skills from a FastMCP server
 * (test/e2e/python/fastmcp_server.py), which has no SEP-2640 extension: by its resources and
 * `_manifest`, every file checked against FastMCP's own hashes.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startHttp, type HttpServer } from '../http/harness.js';
import { REPO, VARIED_SKILLS, baseEnv, tempDir } from './harness.js';
import { differenceBetween, filesUnder, fixtureSkills, readLockFile, runPull, sha256 } from './pull-run.js';

const PYTHON = process.env['SKILL_MCP_TEST_PYTHON'] ?? `${REPO}tools/python-clients/venv/bin/python`;
const CLIENTS_PY = `${REPO}test/e2e/python/clients.py`;
const HAVE_PYTHON = existsSync(PYTHON);
const WHY_SKIPPED = `the Python clients are not installed at ${PYTHON}: run tools/python-clients/ensure.sh (pip installs mcp==2.3.0 fastmcp==4.0.10 into a venv there)`;
// Security of the test itself: under CI a missing venv must fail, not turn this file into a skip.
if (!HAVE_PYTHON && process.env['CI']) throw new Error(`CI is set but ${WHY_SKIPPED}`);
if (!HAVE_PYTHON) console.warn(`python-clients.test.ts skipped: ${WHY_SKIPPED}`);

/** Runs clients.py; the server it starts over stdio gets the e2e base environment plus SKILLS_DIR. */
function runPython(args: string[]): Promise<Record<string, unknown>> {
  const env = { ...baseEnv(), SKILLS_DIR: VARIED_SKILLS, NODE: process.execPath };
  return new Promise((resolve, reject) => {
    execFile(PYTHON, [CLIENTS_PY, ...args], { env, cwd: REPO, timeout: 120_000, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`clients.py ${args.join(' ')} failed (${error.code}):\n${stderr}`));
      else resolve(JSON.parse(stdout) as Record<string, unknown>);
    });
  });
}

/** Each pulled skill folder holds exactly the fixture's files, byte for byte. */
function expectByteExactCopies(root: string, names: string[]): void {
  const fixture = fixtureSkills();
  expect(names.sort()).toEqual([...fixture.keys()].sort());
  for (const name of names) {
    const source = fixture.get(name)!;
    const copy = join(root, name);
    expect(filesUnder(copy), name).toEqual(filesUnder(source));
    for (const file of filesUnder(source)) {
      expect(readFileSync(join(copy, file)).equals(readFileSync(join(source, file))), `${name}/${file}`).toBe(true);
    }
  }
}

describe.skipIf(!HAVE_PYTHON)('FastMCP 4.0.10 skill utilities against skill-mcp', () => {
  test("over stdio: download_skill and sync_skills write byte-exact copies of every varied skill, and every manifest hash is the file's sha256", async () => {
    const out = tempDir('fastmcp-stdio');
    const result = await runPython(['fastmcp', out, 'stdio']);
    const skills = result['skills'] as { name: string; uri: string }[];
    expect(skills).toHaveLength(21);
    expectByteExactCopies(
      join(out, 'download'),
      skills.map((s) => s.name),
    );
    expectByteExactCopies(
      join(out, 'sync'),
      (result['synced'] as string[]).map((p) => p.replace(/^sync\//, '')),
    );
    const fixture = fixtureSkills();
    for (const [name, files] of Object.entries(result['manifests'] as Record<string, { path: string; size: number; hash: string }[]>)) {
      expect(files.map((f) => f.path).sort()).toEqual(filesUnder(fixture.get(name)!));
      for (const f of files) {
        const bytes = readFileSync(join(fixture.get(name)!, f.path));
        expect([f.size, f.hash], `${name}/${f.path}`).toEqual([bytes.length, sha256(bytes)]);
      }
    }
  });

  describe('over Streamable HTTP', () => {
    let http: HttpServer;
    beforeAll(async () => {
      http = await startHttp({ SKILLS_DIR: VARIED_SKILLS });
    });
    afterAll(async () => {
      await http?.stop();
    });

    test('sync_skills from the URL writes byte-exact copies of every varied skill', async () => {
      const out = tempDir('fastmcp-http');
      const result = await runPython(['fastmcp', out, http.url]);
      expectByteExactCopies(
        join(out, 'sync'),
        (result['synced'] as string[]).map((p) => p.replace(/^sync\//, '')),
      );
    });
  });
});

describe.skipIf(!HAVE_PYTHON).each([
  { mode: 'legacy', version: '2025-11-25' },
  { mode: '2026-07-28', version: '2026-07-28' },
])('MCP Python SDK 2.3.0 over stdio, mode $mode', ({ mode, version }) => {
  let result: Record<string, unknown>;
  beforeAll(async () => {
    result = await runPython(['sdk', mode, 'stdio']);
  });

  test(`negotiates ${version} and lists the six tools; skill_list answers with every skill`, () => {
    expect(result['protocolVersion']).toBe(version);
    expect(result['tools']).toEqual(['skill_data_clear', 'skill_file', 'skill_list', 'skill_load', 'skill_run', 'skill_search']);
    expect(result['skillListIsError']).toBe(false);
    expect((result['skillListNames'] as string[]).sort()).toEqual([...fixtureSkills().keys()].sort());
  });

  test('reads every file of every listed skill as resources, byte for byte', () => {
    const fixture = fixtureSkills();
    expect((result['resources'] as string[]).sort()).toEqual([...fixture.keys()].sort().map((n) => `skill://${n}/SKILL.md`));
    const files = result['files'] as Record<string, string>;
    const expected = [...fixture].flatMap(([name, dir]) => filesUnder(dir).map((f) => `${name}/${f}`)).sort();
    expect(Object.keys(files).sort()).toEqual(expected);
    for (const [name, dir] of fixture) {
      for (const f of filesUnder(dir))
        expect(Buffer.from(files[`${name}/${f}`]!, 'base64').equals(readFileSync(join(dir, f))), `${name}/${f}`).toBe(true);
    }
  });

  test("gets every prompt: each message is the skill's body as on disk", () => {
    const fixture = fixtureSkills();
    const prompts = result['prompts'] as Record<string, string[]>;
    expect(Object.keys(prompts).sort()).toEqual([...fixture.keys()].sort());
    for (const [name, messages] of Object.entries(prompts)) {
      expect(messages, name).toHaveLength(1);
      expect(readFileSync(join(fixture.get(name)!, 'SKILL.md'), 'utf8').endsWith(messages[0]!), name).toBe(true);
    }
  });
});

describe.skipIf(!HAVE_PYTHON)('skill-mcp pull from a FastMCP 4.0.10 server (no SEP-2640: resources and _manifest)', () => {
  test('every skill FastMCP serves intact arrives byte for byte; the two it serves differently from its own hashes are refused, nothing written', async () => {
    const dir = tempDir('pull-fastmcp');
    const run = await runPull(['--to', dir, '--', PYTHON, `${REPO}test/e2e/python/fastmcp_server.py`, VARIED_SKILLS]);
    expect(run.code, run.stderr).toBe(1);
    const added = run.lines.filter((l) => l.kind === 'added').map((l) => l.name);
    // FastMCP does not look into the third layout (skills/<name>), so 19 of the 21 are its skills.
    expect(added).toHaveLength(17);
    const fixture = fixtureSkills();
    for (const name of added) expect(differenceBetween(fixture.get(name)!, join(dir, name)), name).toBeUndefined();
    expect(readLockFile(dir).skills['api-docs']).toMatchObject({ via: 'fastmcp-manifest', uri: 'skill://api-docs/SKILL.md' });
    // FastMCP reads text files with universal newlines (CRLF becomes LF), so the bytes are not the ones it hashed.
    expect(run.lines.find((l) => l.name === 'crlf-notes')).toMatchObject({
      kind: 'refused',
      text: expect.stringMatching(/"SKILL.md" is 131 bytes; the server published 139; nothing written/),
    });
    // It reads a .txt file as UTF-8 text and fails on latin-1 bytes.
    expect(run.lines.find((l) => l.name === 'binary-assets')).toMatchObject({
      kind: 'refused',
      text: expect.stringMatching(/"data\/latin1.txt" could not be read: .*nothing written/),
    });
    expect(existsSync(join(dir, 'crlf-notes'))).toBe(false);
    expect(existsSync(join(dir, 'binary-assets'))).toBe(false);
  });
});
