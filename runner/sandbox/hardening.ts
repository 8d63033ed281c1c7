/**
 * @module What each level adds on top of its namespaces and uids, decided at start by trying it
 * (docs/isolation.md): the syscall filter (compiled at build time and loaded at start,
 * seccomp-programs.ts; installed by bubblewrap's `--seccomp`, or the launcher where there is no
 * bubblewrap), a fresh session keyring per run (the launcher), and a memory cgroup per run (a
 * root runner on a host that lets it make one). Each is named in `mechanisms` and in the detail
 * only when the probe ran it here; what is missing is said in `missing`, never claimed.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, rmdirSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { detectCgroupHost, memoryMechanism } from './cgroup.js';
import type { CgroupHost } from './cgroup.js';

/** Where the launcher bundle sits: next to the runner's own bundle in dist/. */
export function launcherScript(): string {
  return fileURLToPath(new URL('./skill-mcp-launch.cjs', import.meta.url));
}

/**
 * Runs the launcher once, with the filter, as `asUid` when given (a run uid must be able to read it
 * and its koffi), and reports whether the program after it ran.
 */
export function probeLauncher(
  node: string,
  filter: Buffer | undefined,
  setpriv: string | undefined,
  asUid: number | undefined,
): { ok: true; argv: string[] } | { ok: false; why: string } {
  const script = launcherScript();
  if (!existsSync(script)) return { ok: false, why: 'the run launcher (dist/skill-mcp-launch.cjs) is not built' };
  const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-launch-probe-'));
  try {
    const file = join(dir, 'orders');
    writeFileSync(file, JSON.stringify({ env: ['PATH=/usr/bin:/bin'], ...(filter ? { filter: filter.toString('base64') } : {}) }));
    const fd = openSync(file, 'r');
    try {
      const drop =
        asUid !== undefined && setpriv ? [setpriv, `--reuid=${asUid}`, `--regid=${asUid}`, '--clear-groups', '--no-new-privs', '--'] : [];
      const argv = [...drop, node, script, '--', '/usr/bin/true'];
      const result = spawnSync(argv[0]!, argv.slice(1), {
        stdio: ['ignore', 'ignore', 'pipe', fd],
        timeout: 20_000,
        cwd: '/',
        env: { PATH: '/usr/bin:/bin' },
      });
      if (result.status === 0) return { ok: true, argv: [node, script] };
      const why =
        (result.stderr?.toString() ?? '').trim().split('\n')[0] ||
        (result.error ? result.error.message : `exit ${result.status ?? result.signal}`);
      return { ok: false, why: `the run launcher failed here (${why.replace(/^skill-mcp launcher: /, '')})` };
    } finally {
      closeSync(fd);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Root: the host's cgroups, if a run group can really be made (one is made and removed). */
export function probeCgroups(): { host: CgroupHost; mechanism: 'cgroup-v2' | 'cgroup-v1' } | { why: string } {
  let host: CgroupHost;
  try {
    host = detectCgroupHost(readFileSync('/proc/self/mountinfo', 'utf8'), readFileSync('/proc/self/cgroup', 'utf8'));
  } catch (error) {
    return { why: `cgroups could not be read (${(error as Error).message})` };
  }
  const mechanism = memoryMechanism(host);
  if (mechanism === undefined)
    return {
      why: 'no cgroup memory controller the runner can use (neither a v2 memory controller it can delegate nor a v1 memory hierarchy)',
    };
  const base = mechanism === 'cgroup-v2' ? host.v2!.base : host.v1Memory!;
  const probe = join(base, `skill-mcp-probe-${process.pid}`);
  try {
    mkdirSync(probe);
    rmdirSync(probe);
  } catch (error) {
    return {
      why: `a run cgroup cannot be made under ${mechanism === 'cgroup-v2' ? "the runner's v2 group" : "the runner's v1 memory group"} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    };
  }
  return { host, mechanism };
}
