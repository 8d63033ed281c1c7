/**
 * The bin's start-up code cache (cli/boot.ts, cli/code-cache.ts; docs/platform-notes.md). The built
 * bin must use the cache `npm run build` made, and a cache it must not trust — planted, stale,
 * a link, made under other V8 flags — is refused with one stderr line while the server still serves
 * through the SDK client. The attacks run against a private copy of dist/.
 */
import { chmodSync, chownSync, cpSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';
import { afterAll, describe, expect, test } from 'vitest';
import { CACHE_MAGIC, cacheFileBytes, cacheVerdict, type FileFacts } from '../../cli/code-cache.js';
import { baseEnv, BUNDLED_SKILLS, expectNoLeftovers, REPO, SERVER_JS, tempDir } from './harness.js';

afterAll(async () => {
  await expectNoLeftovers();
});

const IS_ROOT = process.getuid?.() === 0;
const DIGEST = Buffer.alloc(32, 7);
const OWNER: FileFacts = { uid: 1000, mode: 0o100644, isFile: true };

describe('cacheVerdict: which cache the bin trusts', () => {
  const good = cacheFileBytes(DIGEST, Buffer.from('v8 data'));

  test('a cache made for these bundle bytes, by the bundle owner, is used (its V8 part only)', () => {
    expect(cacheVerdict(OWNER, OWNER, good, DIGEST)).toEqual({ use: true, data: Buffer.from('v8 data') });
  });
  test('planted cache: owned by another uid', () => {
    expect(cacheVerdict(OWNER, { ...OWNER, uid: 1001 }, good, DIGEST)).toEqual({
      use: false,
      why: 'it is owned by uid 1001, the bundle by uid 1000',
    });
  });
  test('planted cache: writable by the group or by everyone', () => {
    expect(cacheVerdict(OWNER, { ...OWNER, mode: 0o100664 }, good, DIGEST)).toEqual({ use: false, why: 'others may write it (mode 664)' });
    expect(cacheVerdict(OWNER, { ...OWNER, mode: 0o100646 }, good, DIGEST)).toEqual({ use: false, why: 'others may write it (mode 646)' });
  });
  test('stale cache: made for another build of the bundle', () => {
    expect(cacheVerdict(OWNER, OWNER, good, Buffer.alloc(32, 8))).toEqual({
      use: false,
      why: 'it was made for another build of the bundle',
    });
  });
  test('not a cache: another format, truncated, empty, a directory', () => {
    const notOurs = { use: false, why: 'it is not a skill-mcp code cache' };
    expect(cacheVerdict(OWNER, OWNER, Buffer.from('\xca\xfe\xba\xbe v8 data from elsewhere', 'latin1'), DIGEST)).toEqual(notOurs);
    expect(cacheVerdict(OWNER, OWNER, good.subarray(0, CACHE_MAGIC.length + 32), DIGEST)).toEqual(notOurs);
    expect(cacheVerdict(OWNER, OWNER, Buffer.alloc(0), DIGEST)).toEqual(notOurs);
    expect(cacheVerdict(OWNER, { ...OWNER, isFile: false }, good, DIGEST)).toEqual({ use: false, why: 'it is not a regular file' });
  });
});

/** A private copy of dist/ (the bin finds its bundle and cache beside itself). */
function distCopy(): string {
  const dir = join(tempDir('dist-copy'), 'dist');
  cpSync(join(REPO, 'dist'), dir, { recursive: true });
  return dir;
}

function version(
  bin: string,
  env: Record<string, string> = {},
  nodeFlags: string[] = [],
): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [...nodeFlags, bin, '--version'], {
    encoding: 'utf8',
    env: { ...baseEnv(), ...env },
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A scripted stdio session (initialize, skills/list), stdin closed after it: the server answers, then exits. */
function session(bin: string, options: { env: Record<string, string>; uid?: number; gid?: number }): { stdout: string; stderr: string } {
  const lines = [
    {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'code-cache-e2e', version: '0' } },
    },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 1, method: 'skills/list', params: {} },
  ].map((m) => `${JSON.stringify(m)}\n`);
  const r = spawnSync(process.execPath, [bin], { ...options, input: lines.join(''), encoding: 'utf8', timeout: 60_000 });
  expect(r.status, r.stderr).toBe(0);
  return { stdout: r.stdout, stderr: r.stderr };
}

/** The server from `bin` serves the bundled skill through the SDK client; returns its stderr. */
async function servesThrough(bin: string, env: Record<string, string> = {}): Promise<string> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [bin],
    env: { ...baseEnv(), SKILLS_DIR: BUNDLED_SKILLS, SKILL_MCP_WATCH: 'off', ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const client = new Client({ name: 'code-cache-e2e', version: '0.0.0' });
  await client.connect(transport);
  try {
    const { skills } = await new SkillsClient(client).list();
    expect(skills.map((s) => s.frontmatter.name)).toEqual(['commit-message']);
  } finally {
    await client.close();
  }
  return stderr;
}

describe('the built bin and its cache', () => {
  test('the bin npm run build made starts from its cache: nothing said about it', async () => {
    expect(version(SERVER_JS)).toEqual({ status: 0, stdout: 'skill-mcp 0.1.0\n', stderr: '' });
    expect(await servesThrough(SERVER_JS)).not.toContain('code cache');
  });

  test('the bundle is already the text the bin compiles: one function expression, so no wrapper is joined on (and copied) at each start', () => {
    const bundle = readFileSync(join(REPO, 'dist/skill-mcp.cjs'), 'latin1');
    expect(bundle.startsWith('(function (exports, require, module, __filename, __dirname) {')).toBe(true);
    // The last statement closes it; only the source map's comment follows.
    expect(bundle.trimEnd()).toMatch(/\n\}\)\n\/\/# sourceMappingURL=skill-mcp\.cjs\.map$/);
  });

  test('a bundle that does not start as build.mjs writes it is refused with a line saying so, not run', () => {
    const dist = distCopy();
    const bundle = readFileSync(join(dist, 'skill-mcp.cjs'), 'latin1');
    writeFileSync(join(dist, 'skill-mcp.cjs'), bundle.slice(bundle.indexOf('{') + 1), 'latin1');
    const r = version(join(dist, 'skill-mcp.js'));
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^skill-mcp: \S+skill-mcp\.cjs is not the bundle this bin was built with .*run `npm run build` again\n$/);
  });

  test('stale cache: the cache of this build beside an edited bundle of the same length is refused', async () => {
    const dist = distCopy();
    const bundle = readFileSync(join(dist, 'skill-mcp.cjs'), 'latin1');
    // Same length, other bytes: V8's own check (the source length) would take the old code.
    const at = bundle.indexOf('skill-mcp 0.1.0');
    writeFileSync(join(dist, 'skill-mcp.cjs'), `${bundle.slice(0, at)}skill-mcp 9.9.9${bundle.slice(at + 15)}`, 'latin1');
    const r = version(join(dist, 'skill-mcp.js'));
    expect(r).toMatchObject({ status: 0, stdout: 'skill-mcp 9.9.9\n' });
    expect(r.stderr).toMatch(
      /^skill-mcp: the start-up code cache is not used: it was made for another build of the bundle; starting without it \(slower\)\. [^\n]+\n$/,
    );
  });

  test('planted cache: a group-writable cache is refused, and the server still serves', async () => {
    const dist = distCopy();
    chmodSync(join(dist, 'skill-mcp.cache'), 0o664);
    expect(await servesThrough(join(dist, 'skill-mcp.js'))).toContain(
      'skill-mcp: the start-up code cache is not used: others may write it (mode 664); starting without it (slower).',
    );
  });

  test.skipIf(!IS_ROOT)('planted cache: a cache owned by another uid is refused (root only: chown)', () => {
    const dist = distCopy();
    chownSync(join(dist, 'skill-mcp.cache'), 40123, 40123);
    expect(version(join(dist, 'skill-mcp.js')).stderr).toMatch(
      /^skill-mcp: the start-up code cache is not used: it is owned by uid 40123, the bundle by uid 0; starting without it \(slower\)\./,
    );
  });

  test('planted cache: a link in place of the cache is not followed', () => {
    const dist = distCopy();
    const elsewhere = join(tempDir('elsewhere'), 'cache');
    cpSync(join(dist, 'skill-mcp.cache'), elsewhere);
    rmSync(join(dist, 'skill-mcp.cache'));
    symlinkSync(elsewhere, join(dist, 'skill-mcp.cache'));
    expect(version(join(dist, 'skill-mcp.js'))).toMatchObject({
      status: 0,
      stderr: expect.stringMatching(/^skill-mcp: the start-up code cache is not used: it cannot be opened \(ELOOP\); starting without it/),
    });
  });

  test("V8 flags other than the build's: V8 rejects the cache, the line says so, the server serves", async () => {
    // A copy: a server run by the owner of dist/ writes a new cache, for these flags, when it exits.
    const bin = join(distCopy(), 'skill-mcp.js');
    // --jitless changes V8's flag hash on Node 20, 22 and 24 (--max-old-space-size did on 20 only);
    // Node 20 and 22 print a warning line of their own before ours.
    const r = version(bin, {}, ['--jitless']);
    expect(r.status).toBe(0);
    expect(r.stderr).toMatch(
      /^skill-mcp: the start-up code cache is not used: V8 rejected it \(another Node\.js version or other V8 flags/m,
    );
    expect(await servesThrough(bin, { NODE_OPTIONS: '--jitless' })).toContain('V8 rejected it');
  });

  test('heals: a server run by the owner of dist/ (not root) replaces a missing or stale cache when it exits, and the next start uses it', () => {
    const owner = IS_ROOT ? { uid: 40124, gid: 40124 } : { uid: process.getuid!(), gid: process.getgid!() };
    const dist = distCopy();
    const home = join(dist, '..');
    if (IS_ROOT)
      for (const path of [
        home,
        dist,
        ...['package.json', 'skill-mcp.js', 'skill-mcp.cjs', 'skill-mcp.cjs.map', 'skill-mcp.cache'].map((f) => join(dist, f)),
      ])
        chownSync(path, owner.uid, owner.gid);
    const bin = join(dist, 'skill-mcp.js');
    const cache = join(dist, 'skill-mcp.cache');
    // Stale: another bundle's digest in the header.
    const stale = readFileSync(cache);
    stale[CACHE_MAGIC.length]! ^= 0xff;
    writeFileSync(cache, stale);
    const asOwner = {
      env: {
        ...baseEnv(),
        HOME: home,
        TMPDIR: home,
        SKILL_MCP_STATE_DIR: join(home, 'state'),
        SKILLS_DIR: BUNDLED_SKILLS,
        SKILL_MCP_WATCH: 'off',
      },
      ...(IS_ROOT ? owner : {}),
    };
    for (const damage of ['stale', 'missing']) {
      if (damage === 'missing') rmSync(cache);
      const before = session(bin, asOwner);
      expect(before.stdout, damage).toContain('"commit-message"');
      expect(before.stderr, damage).toMatch(
        /the start-up code cache is not used: .*A new one is written beside the bundle when this server exits/,
      );
      // The next start uses what the last one wrote, and says nothing.
      expect(version(bin, asOwner.env)).toEqual({ status: 0, stdout: 'skill-mcp 0.1.0\n', stderr: '' });
      const after = session(bin, asOwner);
      expect(after.stdout).toContain('"commit-message"');
      expect(after.stderr).not.toContain('code cache');
    }
  });

  test.skipIf(!IS_ROOT)('never heals as root (the front drops to its own uid first): the line says who can', () => {
    const dist = distCopy();
    rmSync(join(dist, 'skill-mcp.cache'));
    const r = session(join(dist, 'skill-mcp.js'), { env: { ...baseEnv(), SKILLS_DIR: BUNDLED_SKILLS, SKILL_MCP_WATCH: 'off' } });
    expect(r.stdout).toContain('"commit-message"');
    expect(r.stderr).toMatch(
      /there is none beside the bundle; starting without it \(slower\)\. The bundle's owner gets a new one by starting the server once/,
    );
    expect(() => readFileSync(join(dist, 'skill-mcp.cache'))).toThrow(/ENOENT/);
  });

  test('a missing cache is said; SKILL_MCP_CODE_CACHE=off starts without one and says nothing', () => {
    const dist = distCopy();
    rmSync(join(dist, 'skill-mcp.cache'));
    expect(version(join(dist, 'skill-mcp.js')).stderr).toMatch(
      /^skill-mcp: the start-up code cache is not used: there is none beside the bundle; starting without it/,
    );
    expect(version(join(dist, 'skill-mcp.js'), { SKILL_MCP_CODE_CACHE: 'off' })).toEqual({
      status: 0,
      stdout: 'skill-mcp 0.1.0\n',
      stderr: '',
    });
  });

  test('the privileged commands load their own bundle: no front code in it, and the code cache is never opened for them', () => {
    const runnerBundle = readFileSync(join(REPO, 'dist', 'skill-mcp-runner.cjs'), 'latin1');
    expect(runnerBundle).toContain('skill-mcp runner --socket PATH');
    // The front's instructions and its SDK server live in the other bundle only.
    expect(runnerBundle).not.toContain('Agent Skills served over MCP');
    expect(runnerBundle).not.toContain('@modelcontextprotocol');
    const dist = distCopy();
    // A cache that every front start would refuse with a line: the runner says nothing of it.
    writeFileSync(join(dist, 'skill-mcp.cache'), 'not a cache');
    const r = spawnSync(process.execPath, [join(dist, 'skill-mcp.js'), 'runner', '--help'], {
      encoding: 'utf8',
      env: baseEnv(),
      timeout: 60_000,
    });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('usage: skill-mcp runner');
    expect(r.stderr).toBe('');
  });

  // Needs root: the refusal is for a root runner (CI is root).
  test.skipIf(!IS_ROOT)('a root runner refuses a runner bundle that others than its owner can write (group-writable)', () => {
    const dist = distCopy();
    chmodSync(join(dist, 'skill-mcp-runner.cjs'), 0o664);
    const r = spawnSync(process.execPath, [join(dist, 'skill-mcp.js'), 'runner', '--help'], {
      encoding: 'utf8',
      env: baseEnv(),
      timeout: 60_000,
    });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('refusing to run');
    expect(r.stderr).toContain('writable by others than its owner (mode 664)');
  });
});
