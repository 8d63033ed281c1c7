/**
 * @module `skill-mcp doctor`: what isolation this machine gives a script, found the way the runner
 * finds it at start (it runs the same probe), which mechanisms are there, what each missing one
 * would add and how to get it. Exit 1 when `skill_run` would be refused here (no interpreter, or a
 * root runner without the tools to drop privileges), else 0. `--json` prints the same as JSON.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseFlags, UsageError, wantsHelp } from '../shared/cli-args.js';
import { rootReads } from '../shared/open-beneath.js';
import { stateDirOf, stateDirProblem, stateDirSource } from '../shared/state-dir.js';
import { loadPeerCredReader } from '../runner/requests/peer-cred.js';
import { joinFreshSessionKeyring } from '../runner/sandbox/keyring.js';
import { loadHostPrograms } from '../runner/sandbox/seccomp-programs.js';
import { probePlatform, usesBwrap } from '../runner/sandbox/platform.js';
import { probePosixSpawn } from '../runner/sandbox/posix-spawn.js';
import type { Platform } from '../runner/sandbox/platform.js';
import { DEFAULT_UID_RANGE, parseUidRange, processesOfUid } from '../runner/uids/pool.js';
import { Identities } from '../runner/deps/identity.js';
import { environmentStatus } from './deps/status.js';
import type { StatusRow } from './deps/status.js';
import { EnvVerifier } from '../runner/deps/verify.js';

export const DOCTOR_USAGE = `usage: skill-mcp doctor [--json]
  Prints the isolation a runner started here gives each script (as root and as an ordinary user),
  the mechanisms found (bubblewrap, user namespaces, setpriv/prlimit, the syscall filter, the session
  keyring, the memory cgroup, SO_PEERCRED, how skill files are opened, how runs are spawned), and
  what is missing with how to get it, and whether the state folder works for the runner (as root:
  whether the run uids can reach it). Exit 1 when skill_run would be refused on this machine, or
  refused for skills with requirements.
  Reads SKILL_MCP_BWRAP (a path to bubblewrap, or "off"), SKILL_MCP_STATE_DIR and PATH like the runner.`;

interface Check {
  name: string;
  found: boolean;
  detail: string;
  /** What it adds, and how to get it, when not found. */
  fix?: string;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** A uid of the default run range that no process uses, for the root probe (doctor takes no claim). */
function idleRunUid(): number | undefined {
  const { first, last } = parseUidRange(process.env['SKILL_MCP_UID_RANGE'] || DEFAULT_UID_RANGE);
  for (let uid = last; uid >= first; uid--) if (processesOfUid(uid).length === 0) return uid;
  return undefined;
}

function mechanisms(platform: Platform): Check[] {
  const { tools } = platform;
  const maxUserNs = readText('/proc/sys/user/max_user_namespaces');
  const cloneSysctl = readText('/proc/sys/kernel/unprivileged_userns_clone');
  const apparmor = readText('/proc/sys/kernel/apparmor_restrict_unprivileged_userns');
  const usernsBlocked = maxUserNs === '0' || cloneSysctl === '0' || apparmor === '1';
  const cgroup2 = existsSync('/sys/fs/cgroup/cgroup.controllers');
  const peer = loadPeerCredReader();
  const reads = rootReads();
  const spawnPath = probePosixSpawn();
  const bwrapOk = platform.isolation === 'namespace' || platform.isolation === 'namespace-uid';
  const memory = platform.mechanisms.find((m) => m.startsWith('memory-cgroup-'));
  return [
    {
      name: 'bubblewrap',
      found: tools.bwrap !== undefined,
      detail: tools.bwrap ?? 'not installed',
      fix: 'the namespace sandbox (own user/mount/pid/net/ipc/uts namespaces, nothing of the host but system folders and the skill): apt-get install bubblewrap (dnf install bubblewrap, pacman -S bubblewrap)',
    },
    {
      name: 'unprivileged user namespaces',
      found: !usernsBlocked && (tools.bwrap === undefined || bwrapOk),
      detail: [
        `user.max_user_namespaces=${maxUserNs ?? '?'}`,
        ...(cloneSysctl !== undefined ? [`kernel.unprivileged_userns_clone=${cloneSysctl}`] : []),
        ...(apparmor !== undefined ? [`kernel.apparmor_restrict_unprivileged_userns=${apparmor}`] : []),
      ].join(', '),
      fix: 'bubblewrap needs them: sysctl user.max_user_namespaces=15000 (and kernel.unprivileged_userns_clone=1 on Debian kernels that have it); on Ubuntu 24.04+ give bwrap an AppArmor profile allowing userns; in a container, allow user namespaces (e.g. seccomp/--security-opt)',
    },
    {
      name: 'util-linux setpriv and prlimit',
      found: tools.setpriv !== undefined && tools.prlimit !== undefined,
      detail: [tools.setpriv ?? 'setpriv missing', tools.prlimit ?? 'prlimit missing'].join(', '),
      fix: 'rlimits (memory, processes, file size, CPU), no_new_privs, death with the runner, and for a root runner the drop to per-run uids: install util-linux',
    },
    {
      name: 'syscall filter',
      found: platform.mechanisms.includes('seccomp'),
      detail: platform.mechanisms.includes('seccomp')
        ? `seccomp-bpf on every run (${usesBwrap(platform) ? 'loaded by bubblewrap' : 'installed by the run launcher'}), an allowlist: keyrings, socket families beyond unix/IPv4/IPv6, io_uring, bpf, perf events, userfaultfd, mount, namespaces, modules, kexec, ptrace and every other call outside it answer EPERM, calls newer than its table ENOSYS`
        : (platform.missing.find((m) => m.includes('syscall filter')) ?? 'none at this level'),
      fix: 'a syscall filter at the levels without bubblewrap needs the run launcher: install the optional koffi package (npm ci installs it) on x86_64 or aarch64 Linux',
    },
    {
      name: 'fresh session keyring',
      found: platform.mechanisms.includes('session-keyring'),
      detail: platform.mechanisms.includes('session-keyring')
        ? usesBwrap(platform)
          ? 'the runner joins a new, empty session keyring at start; its runs can neither read nor write it (the filter denies every keyring call)'
          : 'each run joins a new, empty session keyring before its script starts'
        : (platform.missing.find((m) => m.includes('keyring')) ?? "runs share the runner's session keyring"),
      fix: 'needs the run launcher: install the optional koffi package',
    },
    {
      name: 'memory cgroup',
      found: memory !== undefined,
      detail:
        memory !== undefined
          ? `${memory === 'memory-cgroup-v2' ? 'cgroup v2 (memory.max, swap off)' : 'cgroup v1 memory controller (limit_in_bytes and memsw)'}: every page of a run is counted against its cap, shared memory and tmpfs included, and the run is ended by its group`
          : `none: memory is capped per process by RLIMIT_DATA, which does not count shared memory; ${platform.mechanisms.includes('sysv-shm-refused') ? 'System V shm is refused instead (the syscall filter answers shmget EPERM), and' : 'System V shm and'} memory shared with MAP_SHARED or a memfd ${platform.mechanisms.includes('sysv-shm-refused') ? 'is' : 'are'} not counted${usesBwrap(platform) ? ' (/dev/shm is a 16 MiB tmpfs, /tmp a capped tmpfs)' : ''}; ${cgroup2 ? 'cgroup v2 is mounted, but this runner makes a memory group only as root (a delegated user subtree is not used)' : 'this host has no cgroup v2, and cgroup v1 gives an ordinary user no memory group'}`,
      fix: 'counts every page of a run: start the runner as root on a host with cgroup v2 (memory controller) or the v1 memory controller',
    },
    {
      name: 'SO_PEERCRED',
      found: 'read' in peer,
      detail: 'read' in peer ? "koffi loads: the runner checks each peer's uid" : peer.why,
      fix: 'a second check of who connects to the runner socket besides its folder modes: install the optional koffi package',
    },
    {
      name: 'openat2 for skill reads',
      found: reads.fallbackWhy === undefined,
      detail:
        reads.fallbackWhy === undefined
          ? 'skill files are opened in one openat2 call (RESOLVE_BENEATH|NO_SYMLINKS|NO_MAGICLINKS|NO_XDEV): the kernel refuses any link, ".." or mount point between the skill folder and the file'
          : `skill files are opened one folder at a time with O_NOFOLLOW (${reads.fallbackWhy})`,
      fix: 'one syscall per file instead of one per folder, and mount points inside a skill refused: Linux 5.6 or later, and the optional koffi package',
    },
    {
      name: 'posix_spawn for runs',
      found: 'spawner' in spawnPath,
      detail:
        'spawner' in spawnPath
          ? `each run is started by libc's posix_spawn (no fork of the runner)${spawnPath.spawner.closesInherited ? '; fds the runner inherited are closed in the child (closefrom)' : ''}`
          : `runs are started by Node's child_process, which forks the runner for each (${spawnPath.why})`,
      fix: "a few ms and the runner's copy-on-write CPU less per run: the optional koffi package on glibc 2.29+ or musl 1.1.24+ (and SKILL_MCP_SPAWN unset)",
    },
    ...(bwrapOk
      ? [
          {
            name: 'rlimits without a prlimit step',
            found: platform.limitsBy === 'runner',
            detail:
              platform.limitsBy === 'runner'
                ? "the runner sets each run's rlimits on bubblewrap's sandbox while it waits, before anything of the script starts (prlimit(2))"
                : `a prlimit step between bubblewrap and the interpreter sets them (${platform.limitsByWhy ?? 'unknown'})`,
            fix: 'one exec (2-3 ms) less per run: posix_spawn for runs (above), SKILL_MCP_GO_AHEAD not set to off and, as root, CAP_SYS_RESOURCE',
          },
        ]
      : []),
  ];
}

/** The served skills' environments (as the runner would check them), or why they cannot be listed. */
async function environments(platform: Platform, bundledSkills: string): Promise<StatusRow[] | { why: string }> {
  try {
    return await environmentStatus(process.env, bundledSkills, platform, new Identities(), new EnvVerifier(), undefined);
  } catch (error) {
    return { why: (error as Error).message };
  }
}

export async function doctorMain(argv: string[], options: { bundledSkills: string } = { bundledSkills: '' }): Promise<void> {
  if (wantsHelp(argv)) {
    process.stdout.write(`${DOCTOR_USAGE}\n`);
    return;
  }
  let json: boolean;
  try {
    json = parseFlags(argv, { json: { type: 'boolean' } }).values['json'] === true;
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`skill-mcp doctor: ${error.message}\n${DOCTOR_USAGE}\n`);
    process.exitCode = UsageError.EXIT;
    return;
  }
  const asRoot = process.getuid?.() === 0;
  // The same keyring step a runner takes at start (harmless for this short-lived process).
  const platform = probePlatform({
    searchPath: process.env['PATH'],
    bwrapSetting: process.env['SKILL_MCP_BWRAP'] || undefined,
    probeUid: asRoot ? idleRunUid() : undefined,
    tmpBytes: 256 * 1024 * 1024,
    ownKeyring: joinFreshSessionKeyring(),
    programs: loadHostPrograms(),
  });
  const bwrapOk = platform.isolation === 'namespace' || platform.isolation === 'namespace-uid';
  const interpreters = [...platform.interpreters].map(([name, r]) => ({
    name,
    available: 'path' in r,
    ...('why' in r ? { why: r.why } : {}),
  }));
  // The folder a runner started here with these variables would keep its state and environments in.
  const stateDir = resolve(stateDirOf(process.env));
  const stateProblem = stateDirProblem(stateDir, stateDirSource(process.env), asRoot);
  const refused =
    platform.refuseWhy ?? (interpreters.some((i) => i.available) ? undefined : 'no interpreter (node, python3) is available to the runner');
  // The non-root answer follows from the same probe: a root runner tries bubblewrap as an unprivileged uid.
  const nonRoot = asRoot ? (bwrapOk ? 'namespace' : 'same-uid') : platform.isolation;
  const report = {
    uid: process.getuid?.(),
    platform: process.platform,
    thisRunner: { asRoot, level: platform.isolation, mechanisms: platform.mechanisms, detail: platform.isolationDetail },
    levels: asRoot
      ? { root: platform.isolation, nonRoot }
      : { nonRoot, root: 'not checked (run skill-mcp doctor as root to see what a root runner gives)' },
    interpreters,
    mechanisms: mechanisms(platform),
    missing: platform.missing,
    stateDir: { path: stateDir, from: stateDirSource(process.env), ...(stateProblem !== undefined ? { problem: stateProblem } : {}) },
    skillRun: refused
      ? { allowed: false, why: refused }
      : { allowed: true, ...(stateProblem !== undefined ? { withRequirements: false, why: stateProblem } : {}) },
    environments: await environments(platform, options.bundledSkills),
  };
  if (json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    const lines = [
      `skill-mcp doctor (${asRoot ? 'root' : `uid ${report.uid}`}, ${process.platform})`,
      '',
      `A runner started here (${asRoot ? 'as root' : 'as this user'}): ${platform.isolation}`,
      `  ${platform.isolationDetail}`,
      `  mechanisms: ${platform.mechanisms.join(', ') || 'none'}`,
      asRoot
        ? `A runner started as an ordinary user: ${nonRoot}`
        : 'A runner started as root: not checked from here (run skill-mcp doctor as root)',
      '',
      'Interpreters:',
      ...interpreters.map((i) => `  ${i.available ? 'ok     ' : 'missing'} ${i.name}${i.why ? ` — ${i.why}` : ''}`),
      '',
      'Mechanisms:',
      ...report.mechanisms.flatMap((c) => [
        `  ${c.found ? 'ok     ' : 'missing'} ${c.name}: ${c.detail}`,
        ...(!c.found && c.fix ? [`          adds: ${c.fix}`] : []),
      ]),
      '',
      `State folder (${report.stateDir.from}): ${stateDir}`,
      stateProblem !== undefined ? `  PROBLEM: ${stateProblem}` : `  ok${asRoot ? ': the run uids can reach it' : ''}`,
      '',
      'Environments (skill-mcp deps install builds the missing ones; SKILL_MCP_STATE_DIR as the runner):',
      ...('why' in report.environments
        ? [`  cannot be listed: ${report.environments.why}`]
        : report.environments.length === 0
          ? ['  no served skill declares requirements']
          : report.environments.map((r) =>
              'problem' in r
                ? `  problem ${r.skill}: ${r.problem}`
                : `  ${r.state === 'ready' ? 'ok     ' : r.state.padEnd(7)} ${r.skill}: ${r.kind} ${r.digest}`,
            )),
      '',
      refused
        ? `skill_run would be REFUSED here: ${refused}`
        : stateProblem !== undefined
          ? `skill_run works here, at level ${platform.isolation}, but NOT for skills with requirements: see the state folder above.`
          : `skill_run works here, at level ${platform.isolation}.`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  if (refused || stateProblem !== undefined) process.exitCode = 1;
}
