/**
 * @module The bubblewrap command line of one run (docs/isolation.md): the namespaces and the file
 * system a script sees. Pure: it only turns a description of the host and of the run into argv,
 * so every mount can be read (and tested) in one place. bubblewrap itself does the work, as an
 * unprivileged process inside a new user namespace — the same tool OpenAI Codex and Anthropic's
 * sandbox-runtime build their Linux sandboxes on.
 *
 * What a script sees: the system directories read-only, a short list of /etc files programs need,
 * its own skill folder read-only at {@link SKILL_MOUNT}, a fresh /proc of its own pid namespace, a
 * minimal /dev, and size-capped tmpfs folders at /tmp (its HOME and TMPDIR) and /dev/shm. Nothing
 * else: not the person's home, not other skills, not the runner's state or sockets.
 *
 * The namespaces, the system view and the final seal are shared with the `deps install` sandbox
 * (cli/deps/sandbox.ts), which builds from the same {@link SANDBOX_PROCESS},
 * {@link systemView} and {@link SEAL_VIEW}, so a change here reaches both.
 */
import { EGRESS_SOCKET_MOUNT, RUN_HELPER_MOUNT } from '../egress/bridge.js';
import { CA_BUNDLE_MOUNT } from '../secrets/trust.js';

/** Where the run's own skill folder appears inside the sandbox (read-only; also `SKILL_DIR`). */
export const SKILL_MOUNT = '/skill';
/** Where the run's workspace appears inside the sandbox (read-write; the script's cwd). */
export const WORKSPACE_MOUNT = '/work';
/** Where the skill's data folder appears inside the sandbox (read-write; `MCP_DATA_DIR`). */
export const DATA_MOUNT = '/data';
/**
 * The `PWD` a script gets in bubblewrap: its working directory. bubblewrap exports PWD itself (the
 * `--chdir` folder, after its own option parsing, so `--unsetenv` cannot remove it); the runner sets
 * the same value and the preview names it, so the script gets exactly the approved variables
 * without an `env -u PWD` step in the chain. Never from the host, never grantable (shared/declaration.ts).
 */
export function sandboxPwd(sandboxed: boolean): Record<string, string> {
  return sandboxed ? { PWD: WORKSPACE_MOUNT } : {};
}
/** The run's private, size-capped writable folder: HOME, TMPDIR and /tmp at once. */
export const SANDBOX_HOME = '/tmp';
/** /dev/shm is tiny: python's multiprocessing needs it for semaphores, nothing needs more. */
export const SHM_BYTES = 16 * 1024 * 1024;

/**
 * /etc entries programs need to start and to speak TLS (dynamic loader, certificates, time zone,
 * name-service switch, interpreter configuration). Absent ones are skipped. Not /etc/passwd,
 * /etc/shadow, /etc/ssh or anything else that describes the host or its users.
 */
export const ETC_ALLOWLIST = [
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
  '/etc/alternatives',
  '/etc/ssl',
  '/etc/ca-certificates',
  '/etc/pki',
  '/etc/crypto-policies',
  '/etc/localtime',
  '/etc/timezone',
  '/etc/nsswitch.conf',
  '/etc/hosts',
  '/etc/host.conf',
  '/etc/gai.conf',
  '/etc/mime.types',
  '/etc/python3',
  '/etc/python3.11',
  '/etc/python3.12',
  '/etc/python3.13',
] as const;

/** Top-level system entries: on merged-/usr hosts they are symlinks into /usr, elsewhere real folders. */
export const SYSTEM_TOP = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'] as const;

/** How this host lays out its system folders, read once at runner start. */
export interface HostLayout {
  /** `/bin` → `usr/bin` and the like: recreated as the same symlink inside. */
  links: { path: string; target: string }[];
  /** Real top-level system folders (not merged-/usr): bound read-only. */
  dirs: string[];
  /** Read-only binds outside /usr that the interpreters or prlimit live in (e.g. /opt/node). */
  extra: string[];
}

export interface RunView {
  /** Real path of the skill folder on the host. */
  skillDir: string;
  /** Size cap of the /tmp tmpfs (HOME, TMPDIR). */
  tmpBytes: number;
  /** Host path of the egress proxy socket of a dependency install (deps/), when it may reach its index. */
  egressSocket?: string;
  /**
   * Host path of a proxied run's helper folder, bound whole at {@link RUN_HELPER_MOUNT}: its egress
   * socket and, with secret bindings, its CA bundle, which the helper may make after the bind.
   */
  helperDir?: string;
  /** Host path of the run's CA bundle (system CAs + the run CA), when it has secret bindings (runner/secrets/trust.ts). */
  caBundle?: string;
  /** The fd bubblewrap reads the syscall filter's BPF program from (seccomp-bpf.ts). */
  seccompFd?: number;
  /** Host path of the run's workspace (runner/workspace/workspace.ts): bound read-write, the cwd. */
  workspace?: string;
  /** Host path of the skill's data folder (runner/data/folder.ts): bound read-write at {@link DATA_MOUNT}. */
  data?: string;
  /** The run's environments (runner/deps/), each bound read-only at its mount. */
  deps?: { source: string; mount: string }[];
  /**
   * The fd bubblewrap names its sandbox's pid 1 on (`--json-status-fd`): the runner kills that pid
   * with the run (process.ts), and reads there whether the command started (start-failure.ts).
   */
  infoFd?: number;
  /** The go-ahead's fd (runner/sandbox/go-ahead.ts): the sandbox's pid 1 waits on it before the exec. */
  blockFd?: number;
}

/**
 * The namespaces and process rules of every bubblewrap sandbox: a run's and a `deps install`
 * step's (cli/deps/sandbox.ts). One list, so the two cannot drift apart.
 */
export const SANDBOX_PROCESS: readonly string[] = [
  // Security: a user namespace makes bubblewrap work without privileges and strips every
  // capability the sandboxed code could have on the host; pid, ipc, net and uts namespaces hide
  // the runner, the front and other runs, their SysV/POSIX IPC, every network but a private
  // loopback, and the host name. cgroup only where the kernel allows it.
  '--unshare-user',
  '--unshare-pid',
  '--unshare-ipc',
  '--unshare-net',
  '--unshare-uts',
  '--unshare-cgroup-try',
  // Security: no nested user namespace — `unshare -Urnm` inside would hand the code a full set
  // of capabilities over a namespace of its own (new mounts, raw sockets on its own net ns).
  '--disable-userns',
  // Security: the code dies with bubblewrap (bubblewrap with the runner or the installer, through
  // setpriv), and a new session keeps it from reaching any terminal (TIOCSTI). The chain is pid 1
  // of its namespace (no bubblewrap reaper in between), so when it ends, or dies with bubblewrap,
  // the kernel kills everything else in the namespace — a build's leftovers too. bubblewrap's own
  // pid 1 did not reliably die with the outer bubblewrap (seen: one SIGKILLed runner in three left
  // its run alive).
  '--die-with-parent',
  '--new-session',
  '--as-pid-1',
];

/** What the system view needs from the sandbox that uses it. */
export interface SystemViewNeeds {
  /** Size cap of the /tmp tmpfs. */
  tmpBytes: number;
}

/**
 * The read-only system view every bubblewrap sandbox starts from (runs and `deps install` steps):
 * /usr, the host's /bin and /lib* links or folders, the interpreter prefixes outside /usr, the
 * /etc allowlist, a fresh /proc with /proc/keys masked, a minimal /dev, and size-capped tmpfs at
 * /dev/shm and /tmp. Pure. Each sandbox adds its own binds after it and {@link SEAL_VIEW} last.
 */
export function systemView(layout: HostLayout, needs: SystemViewNeeds): string[] {
  const args = ['--ro-bind', '/usr', '/usr'];
  for (const link of layout.links) args.push('--symlink', link.target, link.path);
  for (const dir of layout.dirs) args.push('--ro-bind', dir, dir);
  for (const dir of layout.extra) args.push('--ro-bind', dir, dir);
  for (const path of ETC_ALLOWLIST) args.push('--ro-bind-try', path, path);
  args.push(
    '--proc',
    '/proc',
    // Security: /proc/keys lists every key the reader's uid may view, possessed or not — the
    // descriptions of the person's own keys at the levels without a uid of the run's own.
    '--ro-bind',
    '/dev/null',
    '/proc/keys',
    '--dev',
    '/dev',
    // Security: the writable places are RAM-backed and capped, so code filling them cannot
    // fill the host's disk (and lose the run's result or the audit log with it).
    '--size',
    String(SHM_BYTES),
    '--tmpfs',
    '/dev/shm',
    '--size',
    String(needs.tmpBytes),
    '--tmpfs',
    SANDBOX_HOME,
  );
  return args;
}

/**
 * The last mounts of every bubblewrap sandbox. Security: bubblewrap builds the sandbox's root and
 * /dev on unbounded tmpfs mounts owned by the sandboxed uid; left writable, `/etc/x` or `/dev/x`
 * would be a RAM sink with no size cap. Both are remounted read-only (not recursively: /tmp,
 * /dev/shm and the binds made writable stay writable, /tmp and /dev/shm with their caps).
 */
export const SEAL_VIEW: readonly string[] = ['--remount-ro', '/dev', '--remount-ro', '/'];

/**
 * The bubblewrap options (everything before `--`). Order matters to bubblewrap: mounts are made
 * in the order given, so later ones sit on top of earlier ones.
 */
export function bwrapArgs(layout: HostLayout, view: RunView): string[] {
  const args = [
    ...SANDBOX_PROCESS,
    '--hostname',
    'skill-sandbox',
    ...systemView(layout, { tmpBytes: view.tmpBytes }),
    '--ro-bind',
    view.skillDir,
    SKILL_MOUNT,
  ];
  // Security: the network namespace stays empty; the one way out is this socket to the run's own
  // proxy, which decides every destination. Runs without egress get no socket at all.
  if (view.egressSocket !== undefined) args.push('--ro-bind', view.egressSocket, EGRESS_SOCKET_MOUNT);
  if (view.helperDir !== undefined) args.push('--ro-bind', view.helperDir, RUN_HELPER_MOUNT);
  // Security: read-only — the run trusts its own CA for its bound hosts, and cannot add another.
  if (view.caBundle !== undefined) args.push('--ro-bind', view.caBundle, CA_BUNDLE_MOUNT);
  // Security: the syscall filter (keyrings, socket families, io_uring, bpf, mount, namespaces…),
  // applied by bubblewrap to the script's chain right before it execs it.
  if (view.seccompFd !== undefined) args.push('--seccomp', String(view.seccompFd));
  // Security: the sandbox's pid 1 is named to the runner, which kills it with the run (process.ts),
  // and, with the go-ahead, waits, its sandbox made, until the runner has set its rlimits (go-ahead.ts).
  if (view.infoFd !== undefined) args.push('--json-status-fd', String(view.infoFd));
  if (view.blockFd !== undefined) args.push('--block-fd', String(view.blockFd));
  // The one host folder the run may write: its own fresh workspace, holding the approved inputs.
  if (view.workspace !== undefined) args.push('--bind', view.workspace, WORKSPACE_MOUNT);
  // Security: the one other, only this skill's (and caller's) folder, never the base holding the others.
  if (view.data !== undefined) args.push('--bind', view.data, DATA_MOUNT);
  // Security: read-only — a run can import its packages, never change them for the next run.
  for (const bind of view.deps ?? []) args.push('--ro-bind', bind.source, bind.mount);
  args.push(...SEAL_VIEW, '--chdir', view.workspace !== undefined ? WORKSPACE_MOUNT : SKILL_MOUNT);
  return args;
}
