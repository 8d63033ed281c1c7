/**
 * @module How one run is started (docs/architecture.md §8), in the order Postfix's pipe_command does it: build the
 * environment from the allowlist, then the command line that drops everything a script must not
 * have, then exec the declared interpreter by absolute path with an argv array — never a shell
 * around the script. The chain (each step execs the next, one process):
 *
 *   unshare --mount → sh (fixed text: read-only binds over shared writable dirs) → prlimit
 *     → setpriv (run uid/gid, no groups, no caps, no_new_privs, die with the runner) → interpreter
 *
 * The `sh` step runs a constant script whose only inputs are the scratch path the runner made and
 * the mount binary; the script's own argv goes through `exec "$@"` untouched.
 */
import { buildScriptEnv } from '../shared/env.js';
import type { RunPlan } from './derive.js';
import type { Platform } from './platform.js';

export interface SandboxLimits {
  /** RLIMIT_NPROC for the run uid: Node alone needs ~12 threads, each counts. */
  nproc: number;
  fsizeBytes: number;
  nofile: number;
}

export interface SpawnSpec {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** Names of `env`, to compare with the approved `willRun.envNames`. */
  envNames: string[];
}

// Security: /tmp, /var/tmp, /dev/shm and /run/lock are writable by every uid; inside the run's
// mount namespace they become read-only, and only the run's own scratch directory stays writable.
const MOUNT_SCRIPT = [
  'set -e',
  'scratch=$1; mount=$2; shift 2',
  '"$mount" --bind "$scratch" "$scratch"',
  'for d in /tmp /var/tmp /dev/shm /run/lock; do',
  '  if [ -d "$d" ] && [ ! -L "$d" ]; then "$mount" --rbind "$d" "$d"; "$mount" -o remount,bind,ro "$d"; fi',
  'done',
  // sh exports PWD itself; the script must get exactly the approved variables.
  'unset PWD OLDPWD',
  'exec "$@"',
].join('\n');

/** Builds the spawn of one run. `uid` is the run's own id (root) or undefined (same uid). */
export function buildSpawn(plan: RunPlan, platform: Platform, sourceEnv: Readonly<Record<string, string | undefined>>, scratch: string, uid: number | undefined, limits: SandboxLimits): SpawnSpec {
  const { env, names } = buildScriptEnv(sourceEnv, plan.grantedEnv, { HOME: scratch, TMPDIR: scratch });
  const cpuSeconds = Math.ceil(plan.willRun.timeoutMs / 1000) + 1;
  const target = [plan.interpreterPath, plan.scriptRelative, ...plan.args];
  const { prlimit, setpriv, unshare, sh, mount } = platform.tools;
  const rlimits = (withNproc: boolean): string[] => [
    ...(withNproc ? [`--nproc=${limits.nproc}`] : []),
    `--fsize=${limits.fsizeBytes}`,
    `--nofile=${limits.nofile}`,
    `--cpu=${cpuSeconds}`,
    '--core=0',
    '--',
  ];
  if (uid === undefined) {
    // Same uid: RLIMIT_NPROC would count the runner's own processes too, so it is left out.
    // Security: no_new_privs and death with the runner need no privilege, so they apply here too
    // (a runner killed mid-run must not leave its script running).
    const keep = setpriv ? [setpriv, '--no-new-privs', '--pdeathsig=KILL', '--'] : [];
    const chain = prlimit ? [prlimit, ...rlimits(false), ...keep, ...target] : [...keep, ...target];
    return { command: chain[0]!, args: chain.slice(1), env, cwd: plan.realDir, envNames: names };
  }
  const drop = [
    setpriv!, `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--no-new-privs',
    '--inh-caps=-all', '--bounding-set=-all', '--pdeathsig=KILL', '--',
  ];
  let chain = [prlimit!, ...rlimits(true), ...drop, ...target];
  if (platform.isolation === 'uid-sandbox' && unshare && sh && mount) {
    chain = [unshare, '--mount', '--propagation', 'private', '--', sh, '-c', MOUNT_SCRIPT, 'skill-mcp-sandbox', scratch, mount, ...chain];
  }
  return { command: chain[0]!, args: chain.slice(1), env, cwd: plan.realDir, envNames: names };
}
