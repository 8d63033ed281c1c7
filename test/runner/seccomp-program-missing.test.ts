/**
 * A runner whose package lacks the syscall filter's built programs (dist/seccomp/, written by
 * build.mjs) does not start: it says which file, that nothing runs without it and to rebuild, and
 * touches no state — it never comes up running scripts unfiltered. A copy of dist/ is started from
 * a temporary package folder (its node_modules and skills linked to the repository's): intact it
 * comes up, with one program removed or cut it refuses.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { hostArch } from '../../runner/sandbox/seccomp-arch.js';
import { programFile } from '../../runner/sandbox/seccomp-programs.js';
import { REPO, tempDir, uidRange } from './harness.js';

const arch = hostArch();
let pkg: string;

beforeAll(() => {
  pkg = tempDir('pkg');
  cpSync(join(REPO, 'dist'), join(pkg, 'dist'), { recursive: true });
  symlinkSync(join(REPO, 'node_modules'), join(pkg, 'node_modules'));
  symlinkSync(join(REPO, 'skills'), join(pkg, 'skills'));
});

/** Starts the copy's runner; resolves when it is ready (then stops it) or has exited. */
function startCopy(base: string): Promise<{ ready: boolean; code: number | null; stderr: string }> {
  const args = [
    join(pkg, 'dist/skill-mcp.js'),
    'runner',
    '--socket',
    join(base, 'sock', 'runner.sock'),
    '--state-dir',
    join(base, 'state'),
    '--scratch-dir',
    join(base, 'scratch'),
    ...(process.getuid?.() === 0 ? ['--uid-range', uidRange(43)] : []),
  ];
  const bwrap = process.env['SKILL_MCP_BWRAP'] ? { SKILL_MCP_BWRAP: process.env['SKILL_MCP_BWRAP'] } : {};
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', LANG: 'C.UTF-8', SKILL_MCP_DRAIN_MS: '300', ...bwrap },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  let ready = false;
  return new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (!ready && stderr.includes('ready on')) {
        ready = true;
        child.kill('SIGTERM');
      }
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ ready, code, stderr }));
  });
}

describe.skipIf(arch === undefined || process.platform !== 'linux')("a runner without the syscall filter's built programs", () => {
  const file = (memoryCounted: boolean): string => join(pkg, 'dist', 'seccomp', programFile(arch!, memoryCounted));

  it('the intact copy comes up (so a refusal below is the missing program, not the copy)', async () => {
    const r = await startCopy(tempDir('runner-intact'));
    expect(r.ready, r.stderr).toBe(true);
  });

  it('one program removed: the runner exits 1 naming it, says to rebuild, and makes no state folder', async () => {
    const saved = readFileSync(file(false));
    rmSync(file(false));
    try {
      const base = tempDir('runner-missing');
      const r = await startCopy(base);
      expect(r.ready).toBe(false);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(
        `the syscall filter's program seccomp/${programFile(arch!, false)} beside the runner's bundle cannot be used (ENOENT)`,
      );
      expect(r.stderr).toContain('nothing runs without it: rebuild (npm run build) or reinstall the package');
      expect(r.stderr).not.toContain(pkg);
      expect(existsSync(join(base, 'state'))).toBe(false);
    } finally {
      writeFileSync(file(false), saved);
    }
  });

  it('one program cut by an instruction (its closing kill lost): the runner refuses to start', async () => {
    const saved = readFileSync(file(true));
    writeFileSync(file(true), saved.subarray(0, saved.length - 8));
    try {
      const r = await startCopy(tempDir('runner-cut'));
      expect(r.ready).toBe(false);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`seccomp/${programFile(arch!, true)}`);
      expect(r.stderr).toContain('does not end by killing a call of any other arch');
    } finally {
      writeFileSync(file(true), saved);
    }
  });
});
