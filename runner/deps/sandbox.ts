/**
 * @module The command line of one install step (pip, npm), sandboxed like a run: with bubblewrap,
 * its own user, pid, ipc, uts and network namespaces, the system folders read-only, the build
 * folders (the future environment and a work folder) writable at /build, and the local paths the
 * index configuration names read-only. Network: none at all when every index is local (file://
 * or a folder); otherwise one unix socket to the install's own egress proxy (runner/egress/),
 * which lets through exactly the index hosts. As root the step runs as an install uid of the run
 * range, never as root. Without bubblewrap the step runs as that uid (or the user) with the
 * host's network, which the install output says; source builds are then refused (install.ts).
 */
import { bridgeArgv, EGRESS_SOCKET_MOUNT, PROXY_URL } from '../egress/bridge.js';
import { bridgeNode } from '../egress/plan.js';
import { ETC_ALLOWLIST, SHM_BYTES } from '../sandbox/bwrap.js';
import type { Platform } from '../sandbox/platform.js';
import { usesBwrap } from '../sandbox/platform.js';
import type { SpawnSpec } from '../sandbox/spawn.js';

/** Where the build folders appear inside the install sandbox. */
export const BUILD_ENV = '/build/env';
export const BUILD_WORK = '/build/work';
/** The install's private /tmp (pip and npm keep their temporary files in the work folder, on disk). */
const TMP_BYTES = 64 * 1024 * 1024;

export interface StepView {
  /** Host paths of the two build folders. */
  envDir: string;
  workDir: string;
  /** Local paths the index configuration names, bound read-only. */
  readOnly: string[];
  /** The install proxy's socket (host path) when the index is reached over the network. */
  egressSocket?: string;
  /** The install uid (root), or undefined (the user's own uid). */
  uid?: number;
}

/** Paths as the step sees them (inside bubblewrap, or the host's). */
export function stepPaths(platform: Platform, view: Pick<StepView, 'envDir' | 'workDir'>): { env: string; work: string } {
  return usesBwrap(platform) ? { env: BUILD_ENV, work: BUILD_WORK } : { env: view.envDir, work: view.workDir };
}

function bwrapInstallArgs(platform: Platform, view: StepView): string[] {
  const layout = platform.layout!;
  const args = [
    // Security: the same namespaces as a run (runner/sandbox/bwrap.ts): the install's code (a
    // source build runs the package's setup) sees no other process, no host network, no host name.
    '--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-net', '--unshare-uts', '--unshare-cgroup-try',
    '--disable-userns', '--die-with-parent', '--new-session',
    '--hostname', 'skill-deps',
    '--ro-bind', '/usr', '/usr',
  ];
  for (const link of layout.links) args.push('--symlink', link.target, link.path);
  for (const dir of layout.dirs) args.push('--ro-bind', dir, dir);
  for (const dir of layout.extra) args.push('--ro-bind', dir, dir);
  for (const path of ETC_ALLOWLIST) args.push('--ro-bind-try', path, path);
  args.push('--proc', '/proc', '--dev', '/dev', '--size', String(SHM_BYTES), '--tmpfs', '/dev/shm', '--size', String(TMP_BYTES), '--tmpfs', '/tmp');
  for (const path of view.readOnly) args.push('--ro-bind-try', path, path);
  args.push('--bind', view.envDir, BUILD_ENV, '--bind', view.workDir, BUILD_WORK);
  if (view.egressSocket !== undefined) args.push('--ro-bind', view.egressSocket, EGRESS_SOCKET_MOUNT);
  args.push('--remount-ro', '/', '--chdir', BUILD_WORK);
  return args;
}

/** The proxy variables a proxied step gets (pip and npm read them; both are also given the proxy explicitly). */
export function proxyEnv(): Record<string, string> {
  return { HTTP_PROXY: PROXY_URL, HTTPS_PROXY: PROXY_URL, http_proxy: PROXY_URL, https_proxy: PROXY_URL, NO_PROXY: '', no_proxy: '' };
}

/** The spawn of `command` (absolute paths, already in the step's own view) under the sandbox. */
export function buildStep(platform: Platform, view: StepView, command: string[], env: Record<string, string>): SpawnSpec {
  const { setpriv, bwrap } = platform.tools;
  const drop = view.uid === undefined
    ? (setpriv ? [setpriv, '--no-new-privs', '--pdeathsig=KILL', '--'] : [])
    : [setpriv!, `--reuid=${view.uid}`, `--regid=${view.uid}`, '--clear-groups', '--no-new-privs', '--inh-caps=-all', '--bounding-set=-all', '--pdeathsig=KILL', '--'];
  let chain: string[];
  let cwd: string;
  if (usesBwrap(platform)) {
    const inner = view.egressSocket !== undefined ? bridgeArgv(bridgeNode(platform)!, command) : command;
    chain = [...drop, bwrap!, ...bwrapInstallArgs(platform, view), '--', platform.tools.env!, '-u', 'PWD', ...inner];
    cwd = '/';
  } else {
    chain = [...drop, ...command];
    cwd = view.workDir;
  }
  // No syscall filter on the install yet (a run's is runner/sandbox/seccomp-policy.ts): docs/isolation.md says so.
  return { command: chain[0]!, args: chain.slice(1), env, cwd, envNames: Object.keys(env).sort(), fds: [] };
}
