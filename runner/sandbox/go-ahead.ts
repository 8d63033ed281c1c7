/**
 * @module The sandbox's go-ahead (docs/isolation.md, "Limits without a prlimit step"): at the
 * bubblewrap levels the runner sets a run's rlimits itself, with prlimit(2) on bubblewrap's
 * sandbox child, while that child waits — its namespaces, mounts and uid maps made, nothing of the
 * script started — and only then lets it go on to exec the interpreter. It replaces a `prlimit`
 * program between bubblewrap and the interpreter (one exec of a dynamically linked binary, 2.4–2.8
 * ms of every run here: bench/RESULTS.md).
 *
 * How bubblewrap is held (its own options, bubblewrap 0.1+):
 *   - `--json-status-fd 6`: the outer bubblewrap writes `{"child-pid": N, …}` on one line (N in
 *     the runner's pid namespace) right after the clone, and `{"exit-code": N}` once its command
 *     ended, if the command was started (runner/sandbox/start-failure.ts reads that one);
 *   - `--block-fd 5`: the child reads one byte from it after every setup step and before its
 *     session, its death signal, the filter and the exec;
 *   - `--seccomp 4`: the child then reads the filter from fd 4 to its end.
 * fds 4 and 5 are the two ends of one unix socket pair (made in posix-spawn.ts): the filter is
 * written into 5's end at the spawn and that end shut down for writing, so fd 4 reads the filter
 * and then its end; the go-ahead byte is written into 4's end and read on 5.
 *
 * Security: why a socket pair and not a pipe — bubblewrap ignores what the read on its block fd
 * returns, so end-of-file lets it go on just as a byte does. With a pipe, a runner killed between
 * the spawn and its byte would close the pipe's last writer, and the sandbox would start the
 * script with no rlimits at all. Here the child itself holds fd 4, the other end of its block fd,
 * until after that read: the read can never see end-of-file, only the runner's byte. A runner that
 * dies leaves the child waiting (its outer bubblewrap dies with the runner), never running, until
 * the next runner's start finds it by its argv and kills it (runner/workspace/scratch.ts).
 *
 * Security: the limits are set on the process the info names only if its parent is the spawned
 * chain (the outer bubblewrap), so a pid reused since cannot get another process's limits. Any
 * failure — no info, an unexpected parent, a prlimit refused — gives no byte: the caller kills the
 * chain's group (the waiting child has not left it yet), and the run fails with what went wrong.
 */
import { readFileSync } from 'node:fs';
import { errnoName } from '../../shared/libc.js';

/** The fds of the chain's first program (bubblewrap inherits them through setpriv and sh). */
export const GATE_FILTER_FD = 4;
export const GATE_BLOCK_FD = 5;
/** bubblewrap's `--json-status-fd`, gated or not: every run learns its sandbox's pid 1 (process.ts) and whether its command started. */
export const SANDBOX_INFO_FD = 6;

/** Linux resource numbers (asm-generic/resource.h: the same on x86_64 and aarch64). */
export const RLIMIT = { cpu: 0, fsize: 1, data: 2, core: 4, nproc: 6, nofile: 7 } as const;

export interface Rlimit {
  /** The option's name as util-linux prlimit spells it (`nproc`), for messages. */
  name: keyof typeof RLIMIT;
  /** Soft and hard limit, the same (as prlimit `--nproc=N` sets them). */
  value: number;
}

/**
 * The pid in bubblewrap's first status line, or why there is none. The line is JSON (`{"child-pid":
 * 123, …}`); anything else — cut, two objects, a pid that is not a positive integer — is refused.
 * Later lines (the command's exit code) are not read here.
 */
export function parseInfo(text: string): { pid: number } | { why: string } {
  const newline = text.indexOf('\n');
  const first = newline >= 0 ? text.slice(0, newline) : text;
  let value: unknown;
  try {
    value = JSON.parse(first);
  } catch {
    return { why: text.length === 0 ? 'bubblewrap wrote no info (it ended before its sandbox was made)' : "bubblewrap's info is not JSON" };
  }
  const pid = (value as Record<string, unknown> | null)?.['child-pid'];
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 1) return { why: "bubblewrap's info names no child pid" };
  return { pid };
}

/** The parent pid in /proc/PID/stat (field 4, after the name in parentheses, which may hold anything). */
export function parentOf(stat: string): number | undefined {
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ppid = Number(rest[1]);
  return Number.isSafeInteger(ppid) && ppid > 0 ? ppid : undefined;
}

/** What opening the gate needs from the system; injected so its refusals can be tested by name. */
export interface GateOps {
  /** prlimit(pid, resource, {value, value}): 0, or the errno. */
  prlimit(pid: number, resource: number, value: number): number;
  /** /proc/PID/stat's text, or undefined when the process is gone. */
  readStat(pid: number): string | undefined;
  /** Writes the one byte that lets the child go on: false when the child's end is already closed. */
  goAhead(): boolean;
}

export type GateResult = { ok: true; pid: number } | { ok: false; gone: boolean; why: string };

/**
 * Sets every limit on the child the info names, then writes the byte. `chainPid` is the spawned
 * chain's pid, which is the outer bubblewrap's (every step before it execs the next). `gone`: the
 * child had ended by itself (bubblewrap failed in its setup, and its exit says why).
 */
export function openGate(info: string, chainPid: number, limits: readonly Rlimit[], ops: GateOps): GateResult {
  const found = parseInfo(info);
  if ('why' in found) return { ok: false, gone: info.length === 0, why: found.why };
  const stat = ops.readStat(found.pid);
  if (stat === undefined) return { ok: false, gone: true, why: 'the sandbox ended before its limits were set' };
  const parent = parentOf(stat);
  if (parent !== chainPid)
    return {
      ok: false,
      gone: false,
      why: `the process bubblewrap named (${found.pid}) is not its child (its parent is ${parent ?? 'unknown'})`,
    };
  for (const limit of limits) {
    const errno = ops.prlimit(found.pid, RLIMIT[limit.name], limit.value);
    // ESRCH: the child is gone (bubblewrap's setup failed; its exit says why).
    if (errno === ESRCH) return { ok: false, gone: true, why: 'the sandbox ended before its limits were set' };
    if (errno !== 0) return { ok: false, gone: false, why: `the sandbox's ${limit.name} limit could not be set (${errnoName(errno)})` };
  }
  // A child that ended after its limits were set (bubblewrap failed a later step of its setup) has
  // closed its end: no byte can reach it, and its exit says why.
  if (!ops.goAhead()) return { ok: false, gone: true, why: 'the sandbox ended before it could go ahead' };
  return { ok: true, pid: found.pid };
}

const ESRCH = 3;

/**
 * The operator's way back to the prlimit step (`SKILL_MCP_GO_AHEAD=off`). A sandbox left waiting by
 * a killed runner is ended by the next runner's start (runner/workspace/scratch.ts, `staleSandboxes`).
 */
export const GO_AHEAD_OFF = 'SKILL_MCP_GO_AHEAD=off';

const CAP_SYS_RESOURCE = 24;

/**
 * Whether the kernel lets this runner set the limits of its runs' sandbox child. As an ordinary
 * uid it may: the child has the runner's own uid and gid. As root the child has the run's uid, and
 * only CAP_SYS_RESOURCE (over every user namespace, as root holds it) lets one process set another
 * uid's limits — some containers drop it (seen on the bench machine), and there the prlimit step
 * stays. `capEff` is /proc/self/status's CapEff (hex).
 */
export function runnerMaySetLimits(asRoot: boolean, capEff: string | undefined): boolean {
  if (!asRoot) return true;
  if (capEff === undefined || !/^[0-9a-f]{1,16}$/i.test(capEff)) return false;
  return ((BigInt(`0x${capEff}`) >> BigInt(CAP_SYS_RESOURCE)) & 1n) === 1n;
}

/** This process's effective capabilities (hex), or undefined where /proc says nothing. */
export function ownCapEff(): string | undefined {
  try {
    return /^CapEff:\s*([0-9a-f]+)$/im.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
  } catch {
    return undefined;
  }
}

/** /proc/PID/stat, or undefined when the process is gone. */
export function readStat(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
}
