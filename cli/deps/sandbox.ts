/**
 * @module The command line of one install step (pip, npm), sandboxed like a run: with bubblewrap,
 * the run sandbox's own namespaces, read-only system view (/proc/keys masked) and syscall filter
 * (runner/sandbox/bwrap.ts, seccomp-policy.ts), plus what only an install needs: the build
 * folders (the future environment and a work folder) writable at /build, and the local paths the
 * index configuration names read-only. Network: none at all when every index is local (file://
 * or a folder); otherwise one unix socket to the install's own egress proxy (runner/egress/),
 * which lets through exactly the index hosts. As root the step runs as an install uid of the run
 * range, never as root. Without bubblewrap the step runs as that uid (or the user) with the
 * host's network, which the install output says; source builds are then refused (cli.ts).
 */
import { bridgeArgv, EGRESS_SOCKET_MOUNT, PROXY_URL } from '../../runner/egress/bridge.js';
import { bridgeNode } from '../../runner/egress/plan.js';
import { SANDBOX_PROCESS, SEAL_VIEW, systemView } from '../../runner/sandbox/bwrap.js';
import type { HostLayout } from '../../runner/sandbox/bwrap.js';
import type { Platform } from '../../runner/sandbox/platform.js';
import { usesBwrap } from '../../runner/sandbox/platform.js';
import { SANDBOX_INFO_FD } from '../../runner/sandbox/go-ahead.js';
import type { SpawnSpec } from '../../runner/sandbox/spawn.js';

/** Where the build folders appear inside the install sandbox. */
export const BUILD_ENV = '/build/env';
export const BUILD_WORK = '/build/work';
/** The install's private /tmp (pip and npm keep their temporary files in the work folder, on disk). */
export const TMP_BYTES = 64 * 1024 * 1024;

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

/**
 * The fd bubblewrap reads the install's filter from: the first one above stdio (a run's is 4, fd 3
 * being kept for the launcher's orders; an install step under bubblewrap has no launcher).
 */
export const INSTALL_SECCOMP_FD = 3;

/** Paths as the step sees them (inside bubblewrap, or the host's). */
export function stepPaths(platform: Platform, view: Pick<StepView, 'envDir' | 'workDir'>): { env: string; work: string } {
  return usesBwrap(platform) ? { env: BUILD_ENV, work: BUILD_WORK } : { env: view.envDir, work: view.workDir };
}

/**
 * The bubblewrap options of one install step. Everything but the lines marked "Deliberate" is the
 * run sandbox's own (runner/sandbox/bwrap.ts: the same namespaces, system view and seal), so the
 * two cannot drift; each deliberate difference says why the install needs it.
 */
export function bwrapInstallArgs(layout: HostLayout, view: StepView, seccompFd: number | undefined): string[] {
  const args = [
    ...SANDBOX_PROCESS,
    // Deliberate: a host name of its own, so a build's logs say where it ran.
    '--hostname',
    'skill-deps',
    // Deliberate: a /tmp of its own size; pip and npm keep their large temporary files in the
    // work folder (TMPDIR, on disk), so this one only catches what ignores TMPDIR.
    ...systemView(layout, { tmpBytes: TMP_BYTES }),
  ];
  // Deliberate: the local paths the operator's index configuration names (a find-links folder, a
  // file:// index), read-only — the install's inputs; a run has none of them.
  for (const path of view.readOnly) args.push('--ro-bind-try', path, path);
  // Deliberate: the two places the install writes, where a run writes only its workspace: the
  // future environment (its prefix, sealed read-only and root's after the step, install.ts) and
  // the work folder (HOME, TMPDIR, pip's requirements, npm's cache).
  args.push('--bind', view.envDir, BUILD_ENV, '--bind', view.workDir, BUILD_WORK);
  // Deliberate: network to the index hosts, as a run's egress: the one way out of the empty
  // network namespace is this socket to the install's own proxy, which lets through exactly the
  // index hosts (runner/egress/). A local index gets no socket at all.
  if (view.egressSocket !== undefined) args.push('--ro-bind', view.egressSocket, EGRESS_SOCKET_MOUNT);
  // Security: the run's syscall filter (keyrings, socket families, io_uring, bpf, mount, new
  // namespaces…): a source build runs the package's own code, as a script does. pip and npm need
  // nothing it denies: unix, IPv4 and IPv6 sockets and route netlink stay allowed, clone3's
  // ENOSYS makes glibc and libuv fall back to clone, and libuv falls back from io_uring.
  if (seccompFd !== undefined) args.push('--seccomp', String(seccompFd));
  args.push(...SEAL_VIEW, '--chdir', BUILD_WORK);
  return args;
}

/** What the install's steps get here, in words for the install output. */
export function describeInstallSandbox(platform: Platform, ownKeyring: true | { why: string }): string {
  const keyring =
    ownKeyring === true ? 'a fresh, empty session keyring' : `the session keyring this command was started in (${ownKeyring.why})`;
  if (!usesBwrap(platform)) return `none (${platform.isolation}): the install shares this machine's network; ${keyring}`;
  const filter = platform.seccomp ? "the runs' syscall filter" : 'no syscall filter (none for this machine)';
  return `bubblewrap (${platform.isolation}), ${filter}, /proc/keys hidden, ${keyring}`;
}

/** The proxy variables a proxied step gets (pip and npm read them; both are also given the proxy explicitly). */
export function proxyEnv(): Record<string, string> {
  return { HTTP_PROXY: PROXY_URL, HTTPS_PROXY: PROXY_URL, http_proxy: PROXY_URL, https_proxy: PROXY_URL, NO_PROXY: '', no_proxy: '' };
}

/** The spawn of `command` (absolute paths, already in the step's own view) under the sandbox. */
export function buildStep(platform: Platform, view: StepView, command: string[], env: Record<string, string>): SpawnSpec {
  const { setpriv, bwrap } = platform.tools;
  const drop =
    view.uid === undefined
      ? setpriv
        ? [setpriv, '--no-new-privs', '--pdeathsig=KILL', '--']
        : []
      : [
          setpriv!,
          `--reuid=${view.uid}`,
          `--regid=${view.uid}`,
          '--clear-groups',
          '--no-new-privs',
          '--inh-caps=-all',
          '--bounding-set=-all',
          '--pdeathsig=KILL',
          '--',
        ];
  let chain: string[];
  let cwd: string;
  if (usesBwrap(platform)) {
    const inner = view.egressSocket !== undefined ? bridgeArgv(bridgeNode(platform)!, command) : command;
    // `--json-status-fd`: the step's sandbox pid 1 is killed with it, as a run's is (runner/sandbox/process.ts),
    // and a sandbox that could not start is told from a step that failed (runner/sandbox/start-failure.ts).
    chain = [
      ...drop,
      bwrap!,
      '--json-status-fd',
      String(SANDBOX_INFO_FD),
      ...bwrapInstallArgs(platform.layout!, view, platform.seccomp ? INSTALL_SECCOMP_FD : undefined),
      '--',
      platform.tools.env!,
      '-u',
      'PWD',
      ...inner,
    ];
    cwd = '/';
  } else {
    // Deliberate: no filter without bubblewrap. No package code runs here (source builds are
    // refused, cli.ts; npm runs with --ignore-scripts), only pip and npm themselves.
    chain = [...drop, ...command];
    cwd = view.workDir;
  }
  // bubblewrap reads the filter's BPF program from fd 3 (a pipe written once and closed).
  const fds = usesBwrap(platform) && platform.seccomp ? [platform.seccomp] : [];
  return {
    command: chain[0]!,
    args: chain.slice(1),
    env,
    cwd,
    envNames: Object.keys(env).sort(),
    fds,
    ...(usesBwrap(platform) ? { infoFd: SANDBOX_INFO_FD } : {}),
  };
}
