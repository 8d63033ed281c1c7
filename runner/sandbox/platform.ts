/**
 * @module What this machine lets the runner do, decided once at start: the interpreters (resolved to
 * absolute paths, docs/architecture.md §4), the helper tools of the sandbox (bubblewrap, util-linux
 * `prlimit`, `setpriv`, `unshare`), and from those the isolation level every preview reports
 * (docs/isolation.md). Each level is chosen by running the very sandbox it names once, not by
 * looking for binaries: user namespaces can be switched off by sysctl, AppArmor or a container.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, lstatSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join } from 'node:path';
import { INTERPRETERS } from '../../shared/declaration.js';
import type { IsolationLevel } from '../../shared/protocol.js';
import { bwrapArgs, SYSTEM_TOP } from './bwrap.js';
import type { HostLayout } from './bwrap.js';
import type { CgroupHost } from './cgroup.js';
import { probeCgroups, probeLauncher } from './hardening.js';
import { programFor } from './seccomp-programs.js';
import type { HostPrograms } from './seccomp-programs.js';
import { GO_AHEAD_OFF, ownCapEff, runnerMaySetLimits } from './go-ahead.js';
import { loadPosixSpawn } from './posix-spawn.js';

const SYSTEM_DIRS = ['/usr/local/bin', '/usr/bin', '/bin', '/usr/sbin', '/sbin'];

export type Resolved = { path: string } | { why: string };

export interface Platform {
  asRoot: boolean;
  interpreters: Map<string, Resolved>;
  tools: {
    prlimit?: string;
    setpriv?: string;
    unshare?: string;
    sh?: string;
    kill?: string;
    mount?: string;
    bwrap?: string;
    ipcrm?: string;
    env?: string;
  };
  isolation: IsolationLevel;
  isolationDetail: string;
  /** The mechanisms behind the level, as short names (docs/isolation.md lists them). */
  mechanisms: string[];
  /** Set for the namespace levels: how to lay out the sandbox's file system on this host. */
  layout?: HostLayout;
  /** What would give a stronger level here, when something is missing (doctor prints it). */
  missing: string[];
  /** Set when this runner must refuse every run (root without the tools to drop privileges). */
  refuseWhy?: string;
  /** The syscall filter's BPF program, when this level applies it (bubblewrap or the launcher). */
  seccomp?: Buffer;
  /** `[node, launch.cjs]` when the run launcher works here (fresh keyring; the filter without bubblewrap). */
  launcher?: string[];
  /** Root: where run cgroups go, when the host lets the runner make them (memory cap, reaping). */
  cgroups?: CgroupHost;
  /**
   * `runner`: in bubblewrap the runner sets a run's rlimits itself on bubblewrap's waiting child
   * (go-ahead.ts), with no prlimit step; set where the filter and posix_spawn's go-ahead are both there.
   */
  limitsBy?: 'runner';
  /** In bubblewrap without `limitsBy`: why a prlimit step sets the limits instead (said at start, and by doctor). */
  limitsByWhy?: string;
}

/** Whether every other uid may traverse to and execute `path` (a run uid owns nothing here). */
function othersCanExecute(path: string): boolean {
  if ((statSync(path).mode & 0o001) === 0) return false;
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return false;
    if (dir === '/') return true;
  }
}

/**
 * Finds `name` in the system directories first, then in PATH. Security: the result is a real,
 * absolute path fixed at start, so neither a script nor a later PATH change can pick the binary.
 */
export function resolveBinary(name: string, searchPath: string | undefined, forOthers: boolean): Resolved {
  const dirs = [...SYSTEM_DIRS, ...(searchPath ?? '').split(':').filter((d) => isAbsolute(d))];
  let rejected: string | undefined;
  for (const dir of dirs) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      const real = realpathSync(candidate);
      if (!statSync(real).isFile()) continue;
      if (forOthers && !othersCanExecute(real)) {
        rejected = `${name} was found, but only in a place a run's own uid cannot execute`;
        continue;
      }
      return { path: real };
    } catch {
      // not here; keep looking
    }
  }
  return { why: rejected ?? `${name} is not installed on the runner's machine` };
}

/** An owner-named binary, used exactly as named (no search): its real path, if it is an executable file. */
function exactBinary(path: string): string | undefined {
  if (!isAbsolute(path)) return undefined;
  try {
    accessSync(path, constants.X_OK);
    const real = realpathSync(path);
    return statSync(real).isFile() ? real : undefined;
  } catch {
    return undefined;
  }
}

function pathOf(resolved: Resolved): string | undefined {
  return 'path' in resolved ? resolved.path : undefined;
}

/** Where an interpreter installed outside /usr lives (`/opt/node/bin/node` → `/opt/node`). */
function installPrefix(path: string): string {
  const dir = dirname(path);
  return basename(dir) === 'bin' ? dirname(dir) : dir;
}

/** How /bin, /lib and friends look here, plus the folders outside /usr the run needs to see. */
export function readHostLayout(binaries: readonly string[]): HostLayout {
  const layout: HostLayout = { links: [], dirs: [], extra: [] };
  for (const path of SYSTEM_TOP) {
    try {
      const st = lstatSync(path);
      if (st.isSymbolicLink()) layout.links.push({ path, target: readlinkSync(path) });
      else if (st.isDirectory()) layout.dirs.push(path);
    } catch {
      // not on this host
    }
  }
  const covered = (p: string): boolean => p.startsWith('/usr/') || layout.dirs.some((d) => p.startsWith(`${d}/`));
  for (const binary of binaries) {
    const prefix = installPrefix(binary);
    if (!covered(binary) && !layout.extra.includes(prefix)) layout.extra.push(prefix);
  }
  return layout;
}

export interface ProbeOptions {
  /** The runner's own PATH (from its private env copy). */
  searchPath: string | undefined;
  /** `SKILL_MCP_BWRAP`: a path to bubblewrap, `off`, or unset (look in the system folders). */
  bwrapSetting: string | undefined;
  /** Root only: an unused run uid to try the sandbox as (a run's uid is what must work). */
  probeUid: number | undefined;
  /** The /tmp size the runs will get, so the probe uses the very same command line. */
  tmpBytes: number;
  /** Whether this process joined a fresh session keyring at start (sandbox/keyring.ts), or why not. */
  ownKeyring?: true | { why: string };
  /** The syscall filter's programs for this arch, built into dist/ (seccomp-programs.ts, loadHostPrograms); undefined where there is none. */
  programs: HostPrograms | undefined;
}

const ROOT_DROP = (uid: number): string[] => [
  `--reuid=${uid}`,
  `--regid=${uid}`,
  '--clear-groups',
  '--no-new-privs',
  '--inh-caps=-all',
  '--bounding-set=-all',
  '--',
];

/** Runs `argv` once; the first line of its stderr when it fails. */
function tryRun(argv: string[], input?: Buffer): { ok: true } | { ok: false; why: string } {
  const result = spawnSync(argv[0]!, argv.slice(1), {
    stdio: [input ? 'pipe' : 'ignore', 'ignore', 'pipe'],
    ...(input ? { input } : {}),
    timeout: 10_000,
    cwd: '/',
    env: { PATH: '/usr/bin:/bin' },
  });
  if (result.status === 0) return { ok: true };
  const why =
    (result.stderr?.toString() ?? '').trim().split('\n')[0] ||
    (result.error ? result.error.message : `exit ${result.status ?? result.signal}`);
  return { ok: false, why };
}

/** Whether bubblewrap can build a run's sandbox here (as `uid`, when root), and why not. */
function probeBwrap(
  tools: Platform['tools'],
  layout: HostLayout,
  opts: ProbeOptions,
  filter: Buffer | undefined,
): { ok: true } | { ok: false; why: string } {
  if (opts.bwrapSetting === 'off') return { ok: false, why: 'bubblewrap is switched off (SKILL_MCP_BWRAP=off)' };
  if (!tools.bwrap)
    return {
      ok: false,
      why: opts.bwrapSetting
        ? 'SKILL_MCP_BWRAP does not name an executable file (an absolute path, or "off")'
        : 'bubblewrap (bwrap) is not installed',
    };
  if (!tools.prlimit || !tools.env) return { ok: false, why: 'util-linux prlimit or coreutils env is not installed' };
  // The filter comes on stdin here (fd 0; bubblewrap closes it after reading), on fd 4 in a run.
  const sandbox = [
    tools.bwrap,
    ...bwrapArgs(layout, { skillDir: '/usr', tmpBytes: opts.tmpBytes, ...(filter ? { seccompFd: 0 } : {}) }),
    '--',
    tools.prlimit,
    '--nproc=64',
    '--',
    '/usr/bin/true',
  ];
  const argv = opts.probeUid !== undefined && tools.setpriv ? [tools.setpriv, ...ROOT_DROP(opts.probeUid), ...sandbox] : sandbox;
  const tried = tryRun(argv, filter);
  return tried.ok
    ? tried
    : {
        ok: false,
        why: `bubblewrap could not build the sandbox here (${tried.why}); unprivileged user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone, user.max_user_namespaces, AppArmor, or a container)`,
      };
}

const NAMESPACE_MECHANISMS = [
  'bwrap',
  'userns',
  'mountns',
  'pidns',
  'netns',
  'ipcns',
  'utsns',
  'no-nested-userns',
  'no-capabilities',
  'no-new-privs',
  'rlimits',
  'memory-rlimit',
  'private-tmpfs',
];

/** Probes the machine once: the level, then what the filter, the launcher and cgroups add to it. */
export function probePlatform(opts: ProbeOptions): Platform {
  const level = probeLevel(opts);
  return level.refuseWhy !== undefined || process.platform !== 'linux' ? level : harden(level, opts);
}

function probeLevel(opts: ProbeOptions): Platform {
  const asRoot = process.getuid?.() === 0;
  const interpreters = new Map<string, Resolved>();
  for (const name of INTERPRETERS) interpreters.set(name, resolveBinary(name, opts.searchPath, asRoot));
  const tool = (name: string): string | undefined => pathOf(resolveBinary(name, undefined, false));
  const bwrap = opts.bwrapSetting && opts.bwrapSetting !== 'off' ? exactBinary(opts.bwrapSetting) : tool('bwrap');
  const tools = {
    prlimit: tool('prlimit'),
    setpriv: tool('setpriv'),
    unshare: tool('unshare'),
    sh: tool('sh'),
    kill: tool('kill'),
    mount: tool('mount'),
    ipcrm: tool('ipcrm'),
    env: tool('env'),
    bwrap,
  };
  const binaries = [
    ...[...interpreters.values()].flatMap((r) => ('path' in r ? [r.path] : [])),
    ...(tools.prlimit ? [tools.prlimit] : []),
    ...(tools.env ? [tools.env] : []),
  ];
  const layout = readHostLayout(binaries);
  const base = { asRoot, interpreters, tools };
  // The probe only needs bubblewrap to take a filter: the one of a level without a memory cgroup.
  const filter = process.platform === 'linux' && opts.programs ? programFor(opts.programs, false) : undefined;
  const bw = process.platform === 'linux' ? probeBwrap(tools, layout, opts, filter) : { ok: false as const, why: 'this is not Linux' };
  const outside =
    layout.extra.length > 0 ? ` Interpreters installed outside /usr are visible read-only: ${layout.extra.length} folder(s).` : '';

  if (!asRoot) {
    if (bw.ok) {
      return {
        ...base,
        isolation: 'namespace',
        layout,
        mechanisms: NAMESPACE_MECHANISMS,
        missing: ['a root runner would also give each run a uid of its own'],
        isolationDetail: `each run is sandboxed by bubblewrap in its own user, mount, pid, network, ipc and uts namespaces: it sees the system folders and its own skill folder read-only, a private size-capped /tmp as HOME and TMPDIR, and nothing else of this machine — not your home, not other skills, not the runner; it has no network (a private loopback only), cannot see or signal other processes, cannot make nested user namespaces, and everything it starts dies with it. Memory, processes, file size, open files and CPU time are capped. It still runs under your uid outside the sandbox.${outside}`,
      };
    }
    const plain =
      process.platform !== 'linux'
        ? 'scripts run as your own user, with your files and your network: no sandbox is available on this operating system. Grant only skills you trust, or turn skill_run off (MCP_CONFIRM_MODE=refuse).'
        : `scripts run as your own user: they can read and write what you can, reach the network, and see your processes. ${bw.why}. Install bubblewrap (e.g. apt-get install bubblewrap) for the namespace sandbox.`;
    const mechanisms = [...(tools.setpriv ? ['no-new-privs'] : []), ...(tools.prlimit ? ['rlimits', 'memory-rlimit'] : [])];
    return { ...base, isolation: 'same-uid', mechanisms, missing: [bw.why], isolationDetail: plain };
  }
  if (!tools.setpriv || !tools.prlimit || !tools.kill) {
    return {
      ...base,
      isolation: 'same-uid',
      isolationDetail: 'root without util-linux setpriv/prlimit',
      mechanisms: [],
      missing: ['util-linux setpriv, prlimit and kill'],
      refuseWhy: 'the runner is root but util-linux setpriv, prlimit or kill is missing, so it cannot drop privileges; install util-linux',
    };
  }
  if (bw.ok) {
    return {
      ...base,
      isolation: 'namespace-uid',
      layout,
      mechanisms: ['run-uid', ...NAMESPACE_MECHANISMS],
      missing: [],
      isolationDetail: `each run gets its own unprivileged uid/gid (no groups, no capabilities, no_new_privs) and, inside that, a bubblewrap sandbox with its own user, mount, pid, network, ipc and uts namespaces: the system folders and its skill folder read-only, a private size-capped /tmp as HOME and TMPDIR, nothing else of this machine, no network, no view of other processes, no nested user namespaces; memory, processes, file size, open files and CPU time are capped, and everything the run started is killed afterwards.${outside}`,
    };
  }
  const namespaces =
    tools.unshare !== undefined &&
    tools.sh !== undefined &&
    tools.mount !== undefined &&
    tryRun([tools.unshare, ...UNSHARE_FLAGS, '--', tools.sh, '-c', '"$0" --bind /tmp /tmp && "$0" -o remount,bind,ro /tmp', tools.mount])
      .ok;
  if (namespaces) {
    return {
      ...base,
      isolation: 'uid-sandbox',
      mechanisms: [
        'run-uid',
        'mountns',
        'pidns',
        'netns',
        'ipcns',
        'utsns',
        'no-capabilities',
        'no-new-privs',
        'rlimits',
        'memory-rlimit',
        'read-only-shared-tmp',
      ],
      missing: [bw.why],
      isolationDetail: `each run gets its own unprivileged uid/gid (no groups, no capabilities, no_new_privs), rlimits including memory, a private HOME/TMPDIR, and its own mount, pid, network, ipc and uts namespaces (util-linux unshare): no network, no view of other processes, the shared /tmp, /var/tmp, /dev/shm and /run/lock read-only. World-readable host files stay readable (${bw.why}; bubblewrap would hide them).`,
    };
  }
  return {
    ...base,
    isolation: 'uid',
    mechanisms: ['run-uid', 'no-capabilities', 'no-new-privs', 'rlimits', 'memory-rlimit', 'ipc-cleanup'],
    missing: [bw.why, 'mount/pid/net namespaces (util-linux unshare failed)'],
    isolationDetail:
      'each run gets its own unprivileged uid/gid, no groups, no capabilities, no_new_privs, rlimits including memory and a private HOME/TMPDIR; its SysV IPC objects are removed afterwards. Namespaces are unavailable, so world-writable places like /tmp stay writable, other processes are visible, and the network is not isolated.',
  };
}

/**
 * The util-linux namespaces of a root run without bubblewrap: a mount namespace for the read-only
 * shared temp folders, and pid (with its own /proc), network, ipc and uts namespaces. `--fork`
 * makes the script's chain pid 1 of its namespace, so everything it starts dies when it ends;
 * `--kill-child` ends that chain when the runner's spawn is killed.
 */
export const UNSHARE_FLAGS = [
  '--mount',
  '--ipc',
  '--net',
  '--uts',
  '--pid',
  '--fork',
  '--kill-child',
  '--mount-proc',
  '--propagation',
  'private',
];

/** Whether a level runs the script inside bubblewrap. */
export function usesBwrap(platform: Platform): boolean {
  return (platform.isolation === 'namespace' || platform.isolation === 'namespace-uid') && platform.layout !== undefined;
}

/**
 * Adds the filter, the keyring and the memory cgroup to a probed level, each only where it ran.
 * Security: a level without one says so in `missing` and in its detail; nothing is claimed untried.
 */
function harden(level: Platform, opts: ProbeOptions): Platform {
  // The memory cgroup first: where there is none, the filter refuses System V shm (seccomp-policy.ts).
  let cgroups: CgroupHost | undefined;
  let cgroupWhy: string | undefined;
  let cgroupMechanism: string | undefined;
  if (level.asRoot) {
    const cg = probeCgroups();
    if ('host' in cg) {
      cgroups = cg.host;
      cgroupMechanism = cg.mechanism;
    } else cgroupWhy = cg.why;
  }
  const filter = opts.programs ? programFor(opts.programs, cgroups !== undefined) : undefined;
  const bwrapped = usesBwrap(level);
  // bubblewrap loads the filter itself; only the other levels need the launcher (one node start per run).
  const launched = bwrapped
    ? undefined
    : probeLauncher(process.execPath, filter, level.tools.setpriv, level.asRoot ? opts.probeUid : undefined);
  const launcher = launched?.ok ? launched.argv : undefined;
  const launcherWhy = launched && !launched.ok ? launched.why : 'the launcher is missing';
  const mechanisms = [...level.mechanisms];
  const missing = [...level.missing];
  const words: string[] = [];
  // bubblewrap's probe already ran with the filter; elsewhere only the launcher can apply it.
  const seccomp = filter !== undefined && (bwrapped || launcher !== undefined) ? filter : undefined;
  if (seccomp) {
    mechanisms.push('seccomp');
    words.push(
      'A syscall filter (seccomp) allows only the calls ordinary programs make: kernel keyrings, sockets other than unix/IPv4/IPv6, io_uring, bpf, perf events, userfaultfd, mount and new namespaces, kernel modules and kexec, ptrace, file handles and every other call outside its list answer EPERM, and calls newer than its table ENOSYS.',
    );
  } else {
    missing.push(filter === undefined ? `no syscall filter for ${process.arch}` : `no syscall filter at this level: ${launcherWhy}`);
    words.push('There is no syscall filter at this level.');
  }
  const own = opts.ownKeyring ?? { why: 'the runner did not join a keyring of its own' };
  if (launcher) {
    mechanisms.push('session-keyring');
    words.push('Each run gets a fresh, empty session keyring.');
  } else if (bwrapped && seccomp && own === true) {
    mechanisms.push('session-keyring');
    words.push(
      "Runs possess only the runner's own fresh, empty session keyring, and can neither read nor write it (every keyring call is denied, /proc/keys is hidden).",
    );
  } else {
    missing.push(`no fresh session keyring: ${bwrapped ? (own === true ? 'no syscall filter' : own.why) : launcherWhy}`);
    words.push('Runs possess the session keyring the runner was started in.');
  }
  if (cgroups) {
    mechanisms.push(cgroupMechanism === 'cgroup-v2' ? 'memory-cgroup-v2' : 'memory-cgroup-v1');
    words.push(
      `Memory is counted per run by a ${cgroupMechanism === 'cgroup-v2' ? 'cgroup v2' : 'cgroup v1'} memory group (every page, shared memory and tmpfs included), and the run is ended by its group.`,
    );
  } else {
    if (cgroupWhy !== undefined) missing.push(cgroupWhy);
    if (seccomp) {
      mechanisms.push('sysv-shm-refused');
      missing.push(
        'memory shared with MAP_SHARED (or a memfd) is not counted by the per-process cap (a memory cgroup would count it); System V shm is refused instead',
      );
      words.push(
        'Without a memory cgroup, System V shared memory is refused (shmget answers EPERM), and memory shared with MAP_SHARED or a memfd is not counted by the per-process cap.',
      );
    } else {
      missing.push('memory shared with MAP_SHARED or System V shm is not counted by the per-process cap (a memory cgroup would count it)');
      words.push('Memory shared with MAP_SHARED or System V shm is not counted by the per-process cap.');
    }
  }
  // The go-ahead carries the filter on fd 4 and needs posix_spawn's socket pair and prlimit (go-ahead.ts).
  const limitsByWhy = !bwrapped
    ? undefined
    : process.env['SKILL_MCP_GO_AHEAD'] === 'off'
      ? GO_AHEAD_OFF
      : !seccomp
        ? 'there is no syscall filter to carry on its fd'
        : loadPosixSpawn()?.gates !== true
          ? 'runs are not spawned by posix_spawn with socketpair and prlimit (koffi, libc, or SKILL_MCP_SPAWN=node)'
          : !runnerMaySetLimits(level.asRoot, ownCapEff())
            ? "the runner is root without CAP_SYS_RESOURCE, which setting a run uid's limits needs"
            : undefined;
  const limits = bwrapped ? (limitsByWhy === undefined ? { limitsBy: 'runner' as const } : { limitsByWhy }) : {};
  return {
    ...level,
    mechanisms,
    missing,
    isolationDetail: `${level.isolationDetail} ${words.join(' ')}`,
    ...(seccomp ? { seccomp } : {}),
    ...(launcher ? { launcher } : {}),
    ...(cgroups ? { cgroups } : {}),
    ...limits,
  };
}
