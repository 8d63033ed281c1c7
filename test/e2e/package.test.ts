/**
 * The published package as a user gets it: a copy of the checkout without `dist/` is packed with
 * `npm pack` (its `prepack` must build), the tarball is installed into an empty prefix with
 * `npm install`, and the installed `skill-mcp` bin is driven by the SDK's own `Client` over stdio
 * through the token flow of `skill_run` on the bundled skill. Proves that the bundle needs nothing
 * at run time beyond what the package declares, and that the tarball ships what the docs point
 * at (dist/, docs/, LICENSE, skills/) and no tests or TypeScript sources.
 *
 * Installing may fetch `koffi` (an optional dependency) from the npm registry when npm's cache
 * does not hold it.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { REPO, baseEnv, callTool, expectNoLeftovers, tempDir } from './harness.js';

afterAll(expectNoLeftovers);

const run = promisify(execFile);
const NPM_TIMEOUT_MS = 120_000;

/** Our environment without the `npm_*` variables an enclosing `npm test` sets (they steer npm). */
function npmEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
}

async function npm(args: string[], cwd: string): Promise<string> {
  const { stdout } = await run('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd,
    env: npmEnv(),
    timeout: NPM_TIMEOUT_MS,
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout;
}

/** The checkout's own files (tracked, plus new ones not yet committed), without build output. */
async function checkoutFiles(): Promise<string[]> {
  const { stdout } = await run('git', ['-c', 'safe.directory=*', 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: REPO,
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout
    .split('\0')
    .filter((path) => path !== '' && !/(^|\/)node_modules(\/|$)/.test(path) && !path.startsWith('dist/') && existsSync(join(REPO, path)));
}

interface Packed {
  tarball: string;
  files: string[];
  manifest: Record<string, unknown>;
}

let packed: Packed;
let prefix: string;

beforeAll(async () => {
  // A clean checkout: no dist/, so only `prepack` can put the bundle into the tarball.
  const checkout = tempDir('checkout');
  for (const path of await checkoutFiles()) {
    mkdirSync(dirname(join(checkout, path)), { recursive: true });
    cpSync(join(REPO, path), join(checkout, path), { verbatimSymlinks: true });
  }
  symlinkSync(join(REPO, 'node_modules'), join(checkout, 'node_modules'));
  expect(existsSync(join(checkout, 'dist'))).toBe(false);

  const out = tempDir('pack');
  const [info] = JSON.parse(await npm(['pack', '--json', '--pack-destination', out], checkout)) as {
    filename: string;
    files: { path: string }[];
  }[];
  const tarball = join(out, info!.filename);
  packed = {
    tarball,
    files: info!.files.map((f) => f.path),
    manifest: JSON.parse(readFileSync(join(checkout, 'package.json'), 'utf8')) as Record<string, unknown>,
  };

  prefix = tempDir('prefix');
  await npm(['install', '--prefer-offline', '--no-package-lock', '--prefix', prefix, tarball], prefix);
}, 4 * NPM_TIMEOUT_MS);

describe('npm pack, then npm install of the tarball', () => {
  test("the tarball holds the bundle, the syscall filter's programs, docs, LICENSE and the bundled skill; no tests and no TypeScript sources", () => {
    const { files } = packed;
    for (const path of [
      'dist/skill-mcp.js',
      'dist/skill-mcp.cjs',
      'dist/skill-mcp-runner.cjs',
      'dist/skill-mcp-guard.cjs',
      'dist/skill-mcp.cache',
      'dist/package.json',
      'dist/THIRD_PARTY_NOTICES.md',
      'dist/sbom.cdx.json',
      // The syscall filter's programs, compiled by the build (the runner refuses to start without its arch's pair).
      'dist/seccomp/run-x86_64.bpf',
      'dist/seccomp/run-x86_64-shm-refused.bpf',
      'dist/seccomp/run-aarch64.bpf',
      'dist/seccomp/run-aarch64-shm-refused.bpf',
      'docs/architecture.md',
      'docs/platform-notes.md',
      'docs/http.md',
      'LICENSE',
      'README.md',
      'SECURITY.md',
      'skills/commit-message/SKILL.md',
      'skills/commit-message/scripts/check-message.js',
      'package.json',
    ]) {
      expect(files, path).toContain(path);
    }
    expect(files.filter((path) => path.startsWith('test/') || path.startsWith('bench/') || path.startsWith('tools/'))).toEqual([]);
    expect(files.filter((path) => /\.(c|m)?ts$/.test(path))).toEqual([]);
  });

  test('what is bundled is declared: every bundled package has its licence text in THIRD_PARTY_NOTICES.md and a component in the CycloneDX SBOM', () => {
    const notices = readFileSync(join(REPO, 'dist', 'THIRD_PARTY_NOTICES.md'), 'utf8');
    const sbom = JSON.parse(readFileSync(join(REPO, 'dist', 'sbom.cdx.json'), 'utf8')) as {
      bomFormat: string;
      components: { name: string; version: string; purl: string }[];
    };
    expect(sbom.bomFormat).toBe('CycloneDX');
    for (const name of ['zod', 'yaml', 'msgpackr', '@modelcontextprotocol/server', 'minisearch']) {
      const version = (JSON.parse(readFileSync(join(REPO, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
      expect(notices, name).toContain(`## ${name} ${version} (`);
      expect(sbom.components, name).toContainEqual(expect.objectContaining({ name, version }));
    }
    expect(notices).toContain('Permission is hereby granted');
  });

  test('the package declares no hard run-time dependency: everything but the optional koffi is bundled', () => {
    expect(packed.manifest['dependencies']).toBeUndefined();
    expect(packed.manifest['optionalDependencies']).toEqual({ koffi: expect.any(String) });
    // What the install brought: the package itself, and koffi with its prebuilt binary package.
    const installed = readdirSync(join(prefix, 'node_modules')).filter((name) => !name.startsWith('.'));
    expect(installed.filter((name) => !['skill-mcp', 'koffi', '@koromix'].includes(name))).toEqual([]);
  });

  test('the installed bin serves the bundled skill and runs its script through the token flow', async () => {
    const bin = join(prefix, 'node_modules', '.bin', 'skill-mcp');
    expect(existsSync(bin)).toBe(true);
    const stateDir = join(tempDir('state'), 'state');
    const transport = new StdioClientTransport({
      command: bin,
      args: [],
      env: { ...baseEnv(), SKILL_MCP_STATE_DIR: stateDir },
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const client = new Client({ name: 'skill-mcp-package-test', version: '0.0.0' });
    await client.connect(transport);
    try {
      const list = await callTool(client, 'skill_list');
      expect(list.isError, `${list.text}\n${stderr}`).toBe(false);
      expect((list.value['skills'] as { name: string }[]).map((s) => s.name)).toEqual(['commit-message']);

      const request = { name: 'commit-message', script: 'scripts/check-message.js', args: ['feat: add a thing'] };
      const preview = await callTool(client, 'skill_run', request);
      expect(preview.isError, `${preview.text}\n${stderr}`).toBe(false);
      expect(preview.value).toMatchObject({
        status: 'confirmation-required',
        preview: { willRun: { skill: 'commit-message', argv: ['scripts/check-message.js', 'feat: add a thing'] } },
      });
      const confirmToken = String(preview.value['confirmToken']);

      const ran = await callTool(client, 'skill_run', { ...request, confirmToken });
      expect(ran.isError, `${ran.text}\n${stderr}`).toBe(false);
      expect(ran.value).toMatchObject({ status: 'completed', exitCode: 0, timedOut: false });

      const again = await callTool(client, 'skill_run', { ...request, confirmToken });
      expect(again.value).toMatchObject({ error: { code: 'TOKEN_REUSED' } });
      // The code cache prepack made is the one this bin starts from (built and run on this Node).
      expect(stderr).not.toContain('code cache');
    } finally {
      await client.close();
    }
  });
});
