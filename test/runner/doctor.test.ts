/**
 * `skill-mcp doctor` through the real bin: it reports the level a runner started here gives (the
 * same probe the runner runs), names what is missing and how to get it, and exits 1 when skill_run
 * would be refused.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildFilter, encodeFilter } from '../../runner/sandbox/seccomp-bpf.js';
import { ENOSYS, SYSCALLS } from '../../runner/sandbox/seccomp-policy.js';
import { ownCapEff, runnerMaySetLimits } from '../../runner/sandbox/go-ahead.js';
import { bwrapWorks, expectedLevel, isRoot } from '../levels.js';
import { BIN, REPO, tempDir } from './harness.js';

function doctor(args: string[], env: Record<string, string> = {}, prefix: string[] = []) {
  const [command, ...rest] = [...prefix, process.execPath, BIN, 'doctor', ...args];
  const r = spawnSync(command!, rest, { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env }, timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('skill-mcp doctor', () => {
  it('reports the level a runner of this uid gets here, with its mechanisms, and exits 0', () => {
    const r = doctor(['--json'], process.env['SKILL_MCP_BWRAP'] ? { SKILL_MCP_BWRAP: process.env['SKILL_MCP_BWRAP'] } : {});
    expect(r.status, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as {
      thisRunner: { level: string; mechanisms: string[] };
      skillRun: { allowed: boolean };
      mechanisms: { name: string; found: boolean }[];
    };
    expect(report.thisRunner.level).toBe(expectedLevel(isRoot));
    expect(report.skillRun.allowed).toBe(true);
    const level = expectedLevel(isRoot);
    const bubblewrapped = level === 'namespace' || level === 'namespace-uid';
    expect(report.mechanisms.map((m) => m.name)).toEqual([
      'bubblewrap',
      'unprivileged user namespaces',
      'util-linux setpriv and prlimit',
      'syscall filter',
      'fresh session keyring',
      'memory cgroup',
      'SO_PEERCRED',
      'openat2 for skill reads',
      'posix_spawn for runs',
      ...(bubblewrapped ? ['rlimits without a prlimit step'] : []),
    ]);
    const found = Object.fromEntries(report.mechanisms.map((m) => [m.name, m.found]));
    // In bubblewrap the runner sets the limits itself where the kernel lets it (runner/sandbox/go-ahead.ts):
    // always as an ordinary uid; as root only with CAP_SYS_RESOURCE, which this machine's root may lack.
    // SKILL_MCP_GO_AHEAD=off turns it off (runner/sandbox/go-ahead.ts GO_AHEAD_OFF), and the row says so.
    if (bubblewrapped) expect(found['rlimits without a prlimit step']).toBe(runnerMaySetLimits(isRoot, ownCapEff()));
    const off = doctor(['--json'], {
      SKILL_MCP_GO_AHEAD: 'off',
      ...(process.env['SKILL_MCP_BWRAP'] ? { SKILL_MCP_BWRAP: process.env['SKILL_MCP_BWRAP'] } : {}),
    });
    const offRow = (JSON.parse(off.stdout) as { mechanisms: { name: string; found: boolean; detail?: string }[] }).mechanisms.find(
      (m) => m.name === 'rlimits without a prlimit step',
    );
    if (bubblewrapped) expect(offRow).toMatchObject({ found: false });
    if (bubblewrapped) expect(JSON.stringify(offRow)).toContain('SKILL_MCP_GO_AHEAD=off');
    // Every level CI runs has the filter and the keyring; the memory cgroup only a root runner makes.
    // CI's kernels are 5.6+ and koffi is installed: skill files are opened with openat2.
    // CI's glibc has posix_spawn with addchdir_np: runs are spawned without a fork of the runner.
    expect(found).toMatchObject({
      'syscall filter': true,
      'fresh session keyring': true,
      'memory cgroup': isRoot,
      'openat2 for skill reads': true,
      'posix_spawn for runs': true,
    });
    expect(report.thisRunner.mechanisms).toContain('seccomp');
    // Without a memory cgroup it says what bounds shared memory instead (System V shm refused by the filter).
    const memory = report.mechanisms.find((m) => m.name === 'memory cgroup') as { detail?: string };
    if (!isRoot) {
      expect(memory.detail).toContain('System V shm is refused instead (the syscall filter answers shmget EPERM)');
      expect(memory.detail).toContain('memory shared with MAP_SHARED or a memfd is not counted');
      expect(report.thisRunner.mechanisms).toContain('sysv-shm-refused');
    } else expect(report.thisRunner.mechanisms).not.toContain('sysv-shm-refused');
  });

  it('with bubblewrap switched off it names the fallback level, why, and what bubblewrap would add', () => {
    const r = doctor([], { SKILL_MCP_BWRAP: 'off' });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`A runner started here (${isRoot ? 'as root' : 'as this user'}): ${isRoot ? 'uid-sandbox' : 'same-uid'}`);
    expect(r.stdout).toContain('SKILL_MCP_BWRAP=off');
  });

  it('an SKILL_MCP_BWRAP that names no executable is said, not silently replaced by the installed bwrap', () => {
    const r = doctor(['--json'], { SKILL_MCP_BWRAP: '/nonexistent/bwrap' });
    const report = JSON.parse(r.stdout) as { thisRunner: { level: string }; missing: string[] };
    expect(report.thisRunner.level).toBe(isRoot ? 'uid-sandbox' : 'same-uid');
    expect(report.missing.join(' ')).toContain('SKILL_MCP_BWRAP does not name an executable file');
  });

  it.skipIf(!isRoot)(
    'a root runner without util-linux setpriv would refuse every run: doctor says so and exits 1 (root only: hides setpriv in a mount namespace)',
    () => {
      const r = doctor([], {}, [
        'unshare',
        '--mount',
        '--',
        'sh',
        '-c',
        'mount --bind /dev/null /usr/bin/setpriv && exec "$@"',
        'hide-setpriv',
      ]);
      expect(r.status, r.stderr).toBe(1);
      expect(r.stdout).toContain('skill_run would be REFUSED here');
      expect(r.stdout).toContain('install util-linux');
    },
  );

  it.skipIf(!bwrapWorks)(
    'where the kernel answers openat2 with ENOSYS (before Linux 5.6), skill reads fall back to per-folder O_NOFOLLOW opens and doctor says why (bubblewrap loads the filter)',
    () => {
      // A filter that makes openat2 ENOSYS, as an old kernel does, loaded by bubblewrap around doctor.
      const filter = join(tempDir('enosys'), 'openat2.bpf');
      writeFileSync(
        filter,
        encodeFilter(
          buildFilter({
            // Every call the table knows passes but openat2.
            allow: new Set([...Object.keys(SYSCALLS.x86_64), ...Object.keys(SYSCALLS.aarch64)]),
            rules: [{ name: 'openat2', rule: { kind: 'deny', errno: ENOSYS }, why: 'a kernel before 5.6' }],
          }),
        ),
      );
      const fd = openSync(filter, 'r');
      try {
        const r = spawnSync('bwrap', ['--dev-bind', '/', '/', '--seccomp', '3', '--', process.execPath, BIN, 'doctor'], {
          encoding: 'utf8',
          env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
          stdio: ['ignore', 'pipe', 'pipe', fd],
          timeout: 30_000,
        });
        expect(r.stdout, r.stderr).toContain(
          'missing openat2 for skill reads: skill files are opened one folder at a time with O_NOFOLLOW (openat2 is not usable here (ENOSYS: Linux before 5.6))',
        );
        expect(r.stdout).toContain('adds: one syscall per file instead of one per folder');
      } finally {
        closeSync(fd);
      }
    },
  );

  it.skipIf(!isRoot)(
    'where koffi cannot load, skill reads fall back and doctor says so once (root only: hides koffi in a mount namespace)',
    () => {
      const empty = tempDir('no-koffi');
      mkdirSync(join(empty, 'koffi'));
      const r = doctor([], {}, [
        'unshare',
        '--mount',
        '--',
        'sh',
        '-c',
        'mount --bind "$0" "$1" && shift && exec "$@"',
        join(empty, 'koffi'),
        join(REPO, 'node_modules', 'koffi'),
      ]);
      const lines = r.stdout.split('\n').filter((line) => line.includes('openat2 for skill reads'));
      expect(lines, r.stderr).toEqual([
        expect.stringMatching(
          /^ {2}missing openat2 for skill reads: skill files are opened one folder at a time with O_NOFOLLOW \(koffi could not be loaded/,
        ),
      ]);
    },
  );

  it('with SKILL_MCP_SPAWN=node it says runs are spawned by child_process, and why', () => {
    const r = doctor([], { SKILL_MCP_SPAWN: 'node' });
    expect(r.stdout, r.stderr).toContain(
      "missing posix_spawn for runs: runs are started by Node's child_process, which forks the runner for each (SKILL_MCP_SPAWN=node)",
    );
  });

  it.skipIf(!isRoot)(
    'where koffi cannot load, runs are spawned by child_process and doctor says why (root only: hides koffi in a mount namespace)',
    () => {
      const empty = tempDir('no-koffi-spawn');
      mkdirSync(join(empty, 'koffi'));
      const r = doctor([], {}, [
        'unshare',
        '--mount',
        '--',
        'sh',
        '-c',
        'mount --bind "$0" "$1" && shift && exec "$@"',
        join(empty, 'koffi'),
        join(REPO, 'node_modules', 'koffi'),
      ]);
      expect(r.stdout, r.stderr).toMatch(
        /missing posix_spawn for runs: runs are started by Node's child_process, which forks the runner for each \(koffi could not be loaded/,
      );
    },
  );

  it('--help goes to stdout and exits 0; an unknown option exits 2', () => {
    expect(doctor(['--help'])).toMatchObject({ status: 0, stdout: expect.stringContaining('usage: skill-mcp doctor') });
    expect(doctor(['--frobnicate']).status).toBe(2);
  });
});
