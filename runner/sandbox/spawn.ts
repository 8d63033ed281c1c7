/**
 * @module How one run is started (docs/isolation.md), in the order Postfix's pipe_command does it:
 * build the environment from the allowlist, then the command line that drops everything a script
 * must not have, then exec the declared interpreter by absolute path with an argv array — never a
 * shell around the script. The chains by level (each step execs or supervises the next):
 *
 *   namespace-uid: setpriv (run uid/gid, no groups, no caps, no_new_privs, die with the runner)
 *                    → bwrap (namespaces, file-system view) → interpreter
 *   namespace:     bwrap (no_new_privs and death with the runner by itself) → interpreter
 *   uid-sandbox:   setpriv (die with the runner) → unshare (mount/pid/net/ipc/uts) → sh (fixed text: a capped tmpfs HOME, read-only binds over shared
 *                    writable dirs) → prlimit → setpriv (run uid …) → interpreter
 *   uid:           prlimit → setpriv (run uid …) → interpreter
 *   same-uid:      prlimit → setpriv (no_new_privs, die with the runner) → interpreter
 *
 * Around every chain (docs/isolation.md, "The syscall filter", "Memory"): as root with a run
 * cgroup, a first `sh` step writes its own pid into the group's `cgroup.procs` and execs the rest,
 * so nothing of the run starts outside it. The launcher (launch.ts) gives the run a fresh session
 * keyring and, at the levels without bubblewrap, installs the syscall filter right before the
 * interpreter; bubblewrap loads the same filter itself (`--seccomp 4`). The launcher takes the
 * script's environment on fd 3, so it and the steps before it run with {@link LAUNCHER_ENV}.
 *
 * In bubblewrap the runner sets the rlimits itself, with prlimit(2) on bubblewrap's child while it
 * waits before the exec (go-ahead.ts, `platform.limitsBy === 'runner'`); where it cannot (no
 * posix_spawn path, no filter) a `prlimit` step goes between bwrap and the interpreter. Either way
 * the limits are set inside bubblewrap's user namespace, where RLIMIT_NPROC counts only the run's
 * own processes (outside it would count every process of the person's uid and stop bubblewrap itself).
 * The `sh` step runs a constant script whose only inputs are the HOME path the runner made and
 * the mount binary; the script's own argv goes through `exec "$@"` untouched.
 *
 * Every level starts the script in the run's workspace (bubblewrap: at /work) with the script
 * named by its absolute path in the read-only skill copy, which is also `SKILL_DIR`; relative
 * paths in the arguments are then relative to the workspace, as in a terminal.
 */
import { buildScriptEnv } from '../../shared/env.js';
import { bwrapArgs, DATA_MOUNT, SANDBOX_HOME, sandboxPwd, SKILL_MOUNT } from './bwrap.js';
import { bridgeArgv, pythonBridgeArgv } from '../egress/bridge.js';
import { bridgeNode } from '../egress/plan.js';
import type { Platform } from './platform.js';
import { UNSHARE_FLAGS, usesBwrap } from './platform.js';
import { depsBinds, depsVariables } from '../deps/run-env.js';
import type { RunDeps } from '../deps/run-env.js';
import type { EgressPlan } from '../egress/plan.js';
import type { SecretBinding } from '../secrets/binding.js';
import type { WillRun } from '../../shared/protocol.js';
import { caBundleEnv } from '../secrets/trust.js';
import { GATE_BLOCK_FD, SANDBOX_INFO_FD, type Rlimit } from './go-ahead.js';
import type { SpawnSpec } from './spawn-spec.js';

export interface SandboxLimits {
  /** RLIMIT_NPROC for the run uid: Node alone needs ~12 threads, each counts. */
  nproc: number;
  fsizeBytes: number;
  nofile: number;
  /** The runner's memory cap per run (RLIMIT_DATA); a declaration may only lower it. */
  memoryBytes: number;
  /** Size of the run's private /tmp (HOME, TMPDIR) in the namespace sandbox. */
  tmpBytes: number;
  /** A run's workspace: the most bytes (real usage) and entries it may hold (runner/workspace/capacity.ts). */
  workspaceBytes: number;
  workspaceFiles: number;
  /** The most a run may bring in (input files and stdin), and carry back as output files. */
  inputBytes: number;
  outputFilesBytes: number;
}

export type { SpawnSpec };

/** Host folders of one run (runner/workspace/workspace.ts): its workspace (the cwd) and, outside bubblewrap, its HOME. */
export interface RunDirs {
  workspace: string;
  home: string;
  /** A proxied run's helper folder: its egress socket and, with secret bindings, its CA bundle (runner/egress/helper-link.ts). */
  helper?: string;
  /** The skill's data folder and (root) its group, which the run joins (runner/data/folder.ts). */
  data?: { dir: string; gid?: number };
}

/**
 * What of a derived run (runner/requests/derive.ts RunPlan) its spawn is built from: the sandbox
 * layer names only these fields, so it never depends on the request layer above it.
 */
export interface SpawnPlan {
  willRun: Pick<WillRun, 'interpreter' | 'memoryBytes' | 'timeoutMs'>;
  interpreterPath: string;
  realDir: string;
  scriptRelative: string;
  args: readonly string[];
  grantedEnv: readonly string[];
  egress: Pick<EgressPlan, 'mode' | 'env' | 'rules'>;
  deps: RunDeps;
  secrets: readonly Pick<SecretBinding, 'name' | 'placeholder'>[];
}

/** What one run's spawn is built from. */
export interface SpawnInputs {
  plan: SpawnPlan;
  platform: Platform;
  /** The runner's environment, which the allowlist takes the script's variables from. */
  sourceEnv: Readonly<Record<string, string | undefined>>;
  /** The run's own uid (root), or undefined (the runner's uid). */
  uid: number | undefined;
  limits: SandboxLimits;
  dirs: RunDirs;
  extras?: RunExtras;
}

/** What the runner made for this run before its spawn. */
export interface RunExtras {
  /** `cgroup.procs` files the chain's first process enters (root, a run cgroup). */
  cgroupProcs?: string[];
}

/** The launcher's own environment: nothing a script could have chosen (node reads NODE_OPTIONS at start). */
export const LAUNCHER_ENV: Record<string, string> = { PATH: '/usr/bin:/bin', LANG: 'C' };
/** The fd bubblewrap reads the filter from (`--seccomp`); fd 3 is the launcher's orders. */
export const SECCOMP_FD = 4;

// Security: the first process of the chain moves itself into the run's cgroup(s) before it execs
// anything else, so every process of the run is counted and can be killed with the group.
const CGROUP_SCRIPT = [
  'n=$1; shift',
  'while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done',
  'unset PWD OLDPWD',
  'exec "$@"',
].join('\n');

// Security: /tmp, /var/tmp, /dev/shm and /run/lock are writable by every uid; inside the run's
// mount namespace they become read-only, and only the run's own folder (HOME, workspace) stays writable.
const MOUNT_SCRIPT = [
  'set -e',
  'home=$1; mount=$2; size=$3; owner=$4; work=$5; data=$6; shift 6',
  // Security: the run's HOME/TMPDIR becomes a size-capped RAM disk owned by the run uid, so a run
  // filling it cannot fill the disk the runner's state and audit log live on.
  '"$mount" -t tmpfs -o "size=$size,mode=0700,uid=$owner,gid=$owner,nosuid,nodev" skill-mcp-tmp "$home"',
  // The workspace becomes a mount of its own first, so the read-only remounts below (the scratch
  // folder may sit under /tmp) leave it writable, as the recursive binds carry it along.
  '"$mount" --bind "$work" "$work"; "$mount" -o remount,bind,nosuid,nodev "$work"',
  // The data folder likewise, when the run has one.
  'if [ -n "$data" ]; then "$mount" --bind "$data" "$data"; "$mount" -o remount,bind,nosuid,nodev "$data"; fi',
  'for d in /tmp /var/tmp /dev/shm /run/lock; do',
  '  if [ -d "$d" ] && [ ! -L "$d" ]; then "$mount" --rbind "$d" "$d"; "$mount" -o remount,bind,ro "$d"; fi',
  'done',
  // sh exports PWD itself; the script must get exactly the approved variables.
  'unset PWD OLDPWD',
  'exec "$@"',
].join('\n');

/** The PATH a sandboxed script gets: only folders that exist inside (host PATHs name places it cannot see). */
function sandboxPath(platform: Platform): string {
  return [...(platform.layout?.extra ?? []).map((dir) => `${dir}/bin`), '/usr/local/bin', '/usr/bin', '/bin'].join(':');
}

/** A cache folder that cannot exist: /dev/null is a device, so nothing is ever below it. */
const NO_BYTECODE_DIR = '/dev/null/skill-mcp-no-bytecode';

/**
 * Interpreter options before the script path. Security: python never reads or writes bytecode —
 * `-B` writes none, and `-X pycache_prefix` at a folder that cannot exist makes it look for cached
 * bytecode only where there is none, never in a `__pycache__` beside a source — so every module
 * runs from its reviewed `.py` (PYTHON* variables are never grantable, shared/declaration.ts, so
 * nothing in the environment turns this back on).
 */
export function interpreterFlags(interpreter: string): string[] {
  return interpreter === 'python3' ? ['-B', '-X', `pycache_prefix=${NO_BYTECODE_DIR}`] : [];
}

/**
 * Whether this platform's runs go through the go-ahead (go-ahead.ts): bubblewrap with its filter,
 * the runner setting the limits. Such a spawn is held until the runner lets it go, so what must
 * precede the script but not the sandbox (the token's spend, the accept line) may follow the spawn call.
 */
export function heldSpawn(platform: Platform): boolean {
  return usesBwrap(platform) && platform.limitsBy === 'runner' && platform.seccomp !== undefined;
}

/**
 * Builds the spawn of one run. `uid` is the run's own id (root) or undefined (the runner's uid).
 * The script path handed to the interpreter is absolute (bubblewrap) or `./`-prefixed, so no
 * declared name can ever read as an interpreter option.
 */
export function buildSpawn(inputs: SpawnInputs): SpawnSpec {
  const { plan, platform, sourceEnv, uid, limits, dirs, extras = {} } = inputs;
  const sandboxed = usesBwrap(platform);
  // Issue 30: only a proxied run in bubblewrap has bindings the proxy injects (derive refuses the rest).
  const withBundle = sandboxed && plan.egress.mode === 'proxy' && plan.secrets.length + (plan.egress.rules?.length ?? 0) > 0;
  const overrides: Record<string, string | null> = {
    ...plan.egress.env,
    ...(sandboxed ? { HOME: SANDBOX_HOME, TMPDIR: SANDBOX_HOME, PATH: sandboxPath(platform) } : { HOME: dirs.home, TMPDIR: dirs.home }),
    SKILL_DIR: sandboxed ? SKILL_MOUNT : plan.realDir,
    MCP_DATA_DIR: dirs.data === undefined ? null : sandboxed ? DATA_MOUNT : dirs.data.dir,
  };
  const built = buildScriptEnv(sourceEnv, plan.grantedEnv, overrides);
  // The runner's own variables for the environments, the CA bundle and bubblewrap's PWD (never grantable, never from the host).
  const env: Record<string, string> = {
    ...built.env,
    ...depsVariables(plan.deps, sandboxed),
    ...caBundleEnv(withBundle),
    ...sandboxPwd(sandboxed),
  };
  // Security: a secret's variable holds its run's placeholder, never the value (runner/secrets/);
  // the proxy alone swaps it in, and only for the secret's hosts.
  for (const secret of plan.secrets) env[secret.name] = secret.placeholder;
  const names = Object.keys(env).sort();
  const cpuSeconds = Math.ceil(plan.willRun.timeoutMs / 1000) + 1;
  const { prlimit, setpriv, unshare, sh, mount, bwrap } = platform.tools;
  const gated = heldSpawn(platform);
  const rlimits = (withNproc: boolean): string[] => [
    ...(withNproc ? [`--nproc=${limits.nproc}`] : []),
    `--fsize=${limits.fsizeBytes}`,
    `--nofile=${limits.nofile}`,
    `--cpu=${cpuSeconds}`,
    `--data=${plan.willRun.memoryBytes}`,
    '--core=0',
    '--',
  ];
  // Security: no_new_privs, no capabilities and death with the runner; as root also the run's own uid/gid.
  const drop =
    uid === undefined
      ? setpriv
        ? [setpriv, '--no-new-privs', '--pdeathsig=KILL', '--']
        : []
      : [
          setpriv!,
          `--reuid=${uid}`,
          `--regid=${uid}`,
          // Security: no group but the data folder's, so the run reaches that folder and no other.
          ...(dirs.data?.gid !== undefined ? [`--groups=${dirs.data.gid}`] : ['--clear-groups']),
          '--no-new-privs',
          '--inh-caps=-all',
          '--bounding-set=-all',
          '--pdeathsig=KILL',
          '--',
        ];
  let chain: string[];
  if (sandboxed) {
    const script = [
      plan.interpreterPath,
      ...interpreterFlags(plan.willRun.interpreter),
      `${SKILL_MOUNT}/${plan.scriptRelative}`,
      ...plan.args,
    ];
    const proxied = plan.egress.mode === 'proxy';
    // Never a proxied run whose socket would be missing from its sandbox.
    if (proxied && dirs.helper === undefined) throw new Error('a proxied run needs its helper folder (its egress socket)');
    // A proxied run starts the bridge first (under the same limits); it starts the script once it
    // listens, handing it NODE_EXTRA_CA_CERTS, which the bridge's own node start does without (bridge.ts).
    const extraCa = proxied ? env['NODE_EXTRA_CA_CERTS'] : undefined;
    if (extraCa !== undefined) delete env['NODE_EXTRA_CA_CERTS'];
    // A python3 script's bridge is a python one, in its own interpreter (a fraction of a node start).
    const target = !proxied
      ? script
      : plan.willRun.interpreter === 'python3'
        ? pythonBridgeArgv(plan.interpreterPath, script, extraCa)
        : bridgeArgv(bridgeNode(platform)!, script, extraCa);
    // bubblewrap exports PWD=/work itself: the env above holds the same (sandboxPwd), so no step removes it.
    // Gated: bubblewrap execs the target itself, once the runner has set the limits on its child.
    const inside = gated ? target : [prlimit!, ...rlimits(true), ...target];
    const view = {
      skillDir: plan.realDir,
      tmpBytes: limits.tmpBytes,
      workspace: dirs.workspace,
      // The helper's folder whole: its socket and bundle are made there once it is given its run,
      // maybe while bubblewrap builds the sandbox (run-path.ts); the script starts after.
      ...(proxied ? { helperDir: dirs.helper! } : {}),
      ...(platform.seccomp ? { seccompFd: SECCOMP_FD } : {}),
      infoFd: SANDBOX_INFO_FD,
      ...(gated ? { blockFd: GATE_BLOCK_FD } : {}),
      deps: depsBinds(plan.deps),
      ...(dirs.data !== undefined ? { data: dirs.data.dir } : {}),
    };
    // Security: at `namespace` bubblewrap is the chain's first step, as it gives by itself what a
    // setpriv before it gave (one exec less, docs/isolation.md): no_new_privs, set first thing in
    // its main for itself and all it starts, and death with the runner, as `--die-with-parent`
    // arms the parent-death signal in its own outer process too, not only in the sandbox's pid 1.
    // A runner killed before that is the gap either chain has (until pid 1 arms its own, just
    // before the exec). As root setpriv stays: only it switches the real uid.
    chain = [...(uid === undefined ? [] : drop), bwrap!, ...bwrapArgs(platform.layout!, view), '--', ...inside];
    const spec = {
      ...finish(platform, extras, {
        chain: [...launcherStep(platform), ...chain],
        env,
        cwd: '/',
        names,
        filterInLauncher: false,
        shared: dirs.data?.gid !== undefined,
      }),
      infoFd: SANDBOX_INFO_FD,
    };
    if (!gated) return spec;
    // The same limits the prlimit step sets (`--nproc=N` is soft and hard N), and the filter goes with the go-ahead's fds.
    const gateLimits: Rlimit[] = [
      { name: 'nproc', value: limits.nproc },
      { name: 'fsize', value: limits.fsizeBytes },
      { name: 'nofile', value: limits.nofile },
      { name: 'cpu', value: cpuSeconds },
      { name: 'data', value: plan.willRun.memoryBytes },
      { name: 'core', value: 0 },
    ];
    return { ...spec, fds: spec.fds.slice(0, 1), gate: { filter: platform.seccomp!, limits: gateLimits } };
  }
  // The launcher goes last, right before the interpreter: unshare and mount above it need the
  // calls its filter denies.
  const target = [
    ...launcherStep(platform),
    plan.interpreterPath,
    ...interpreterFlags(plan.willRun.interpreter),
    `${plan.realDir}/${plan.scriptRelative}`,
    ...plan.args,
  ];
  if (uid === undefined) {
    // Same uid: RLIMIT_NPROC would count the runner's own processes too, so it is left out.
    chain = prlimit ? [prlimit, ...rlimits(false), ...drop, ...target] : [...drop, ...target];
  } else {
    chain = [prlimit!, ...rlimits(true), ...drop, ...target];
    if (platform.isolation === 'uid-sandbox' && unshare && sh && mount) {
      // Security: `unshare --fork` stays behind as the namespace's parent; it must die with the runner
      // (its --kill-child then takes the namespace down), or a SIGKILLed runner leaves the run alive.
      chain = [
        setpriv!,
        '--pdeathsig=KILL',
        '--',
        unshare,
        ...UNSHARE_FLAGS,
        '--',
        sh,
        '-c',
        MOUNT_SCRIPT,
        'skill-mcp-sandbox',
        dirs.home,
        mount,
        String(limits.tmpBytes),
        String(uid),
        dirs.workspace,
        dirs.data?.dir ?? '',
        ...chain,
      ];
    }
  }
  return finish(platform, extras, { chain, env, cwd: dirs.workspace, names, filterInLauncher: true, shared: dirs.data?.gid !== undefined });
}

/** `node launch.cjs --`, when this runner has the launcher. */
function launcherStep(platform: Platform): string[] {
  return platform.launcher ? [...platform.launcher, '--'] : [];
}

/** The spawn itself: the cgroup step first, the environment moved to the launcher's fd when there is one. */
function finish(
  platform: Platform,
  extras: RunExtras,
  the: { chain: string[]; env: Record<string, string>; cwd: string; names: string[]; filterInLauncher: boolean; shared: boolean },
): SpawnSpec {
  const { chain, env, cwd, names, filterInLauncher, shared } = the;
  const procs = extras.cgroupProcs ?? [];
  // A data folder its group shares across runs of different uids (runner/data/folder.ts): umask 007,
  // so what one run writes the next may change (the runner's own 077 would leave it to its writer).
  const umasked = shared ? [platform.tools.sh!, '-c', 'umask 007 && exec "$@"', 'skill-mcp-umask', ...chain] : chain;
  const full =
    procs.length > 0 ? [platform.tools.sh!, '-c', CGROUP_SCRIPT, 'skill-mcp-cgroup', String(procs.length), ...procs, ...umasked] : umasked;
  const orders = platform.launcher
    ? Buffer.from(
        JSON.stringify({
          env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
          ...(filterInLauncher && platform.seccomp ? { filter: platform.seccomp.toString('base64') } : {}),
          ...(!filterInLauncher && platform.seccomp ? { keep: [SECCOMP_FD] } : {}),
        }),
      )
    : undefined;
  const seccomp = !filterInLauncher ? platform.seccomp : undefined;
  return { command: full[0]!, args: full.slice(1), env: orders ? LAUNCHER_ENV : env, cwd, envNames: names, fds: [orders, seccomp] };
}
