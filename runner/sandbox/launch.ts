/**
 * @module The run launcher (docs/isolation.md, "The syscall filter"): a tiny program the spawn
 * chain runs once per run, as `node dist/skill-mcp-launch.cjs -- PROGRAM ARGS…`. It reads its
 * orders from fd 3 (JSON, written by the runner: the environment to exec with, and optionally the
 * filter's BPF bytes), then through koffi:
 *
 *   1. keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL): a new, empty session keyring, so nothing the
 *      runner's (or the person's login) session keyring holds is possessed by the run;
 *   2. with a filter: prctl(PR_SET_NO_NEW_PRIVS), prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER);
 *   3. execve(PROGRAM, ARGS, the environment) — the launcher is gone, its filter stays.
 *
 * The environment comes on a pipe, not in the launcher's own: the launcher is node, and node reads
 * NODE_OPTIONS and friends at start, which the script's environment must not steer before the
 * filter is on. Any failure exits 126 with one line on stderr: the run fails closed, never runs
 * without what the preview promised. Built as its own small bundle (build.mjs) so it starts fast.
 */
import { closeSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { hostArch, KEYCTL_NR } from './seccomp-arch.js';

/** What the runner writes to the launcher's fd 3. */
export interface LaunchOrders {
  /** `NAME=value` strings, exactly the run's environment. */
  env: string[];
  /** base64 of the BPF program (8 bytes per instruction); absent when bubblewrap loads it instead. */
  filter?: string;
  /** fds above 2 the program needs (bubblewrap's `--seccomp` fd). */
  keep?: number[];
}

/** The orders, checked by hand: no zod here, the launcher must start fast. */
export function parseOrders(text: string): LaunchOrders {
  const value = JSON.parse(text) as Partial<LaunchOrders>;
  const env = value.env;
  if (!Array.isArray(env) || !env.every((e) => typeof e === 'string' && e.includes('=')))
    throw new Error('env is not a list of NAME=value');
  if (value.filter !== undefined && typeof value.filter !== 'string') throw new Error('filter is not base64 text');
  const keep = value.keep ?? [];
  if (!Array.isArray(keep) || !keep.every((fd) => Number.isInteger(fd) && fd > 2 && fd !== ORDERS_FD))
    throw new Error('keep is not a list of fds above 3');
  return { env, ...(value.filter !== undefined ? { filter: value.filter } : {}), ...(keep.length > 0 ? { keep } : {}) };
}

/** The fd the orders arrive on. */
export const ORDERS_FD = 3;

const PR_SET_NO_NEW_PRIVS = 38;
const PR_SET_SECCOMP = 22;
const SECCOMP_MODE_FILTER = 2;
const KEYCTL_JOIN_SESSION_KEYRING = 1;
const F_SETFD = 2;

interface Koffi {
  load(name: string): { func(signature: string): (...args: unknown[]) => number };
  struct(name: string, fields: Record<string, string>): unknown;
  alloc(type: unknown, count: number): unknown;
  encode(ref: unknown, type: unknown, value: unknown): void;
  errno(): number;
}

function fail(what: string): never {
  process.stderr.write(`skill-mcp launcher: ${what}; the script was not started\n`);
  process.exit(126);
}

function main(argv: string[]): void {
  const sep = argv.indexOf('--');
  const target = sep >= 0 ? argv.slice(sep + 1) : [];
  if (target.length === 0 || !target[0]!.startsWith('/')) fail('no absolute program to run');
  let orders: LaunchOrders;
  try {
    const raw = readFileSync(ORDERS_FD);
    closeSync(ORDERS_FD);
    orders = parseOrders(raw.toString('utf8'));
  } catch (error) {
    fail(`could not read its orders on fd ${ORDERS_FD} (${(error as Error).message.split('\n')[0]})`);
  }
  const arch = hostArch();
  if (arch === undefined) fail(`no syscall numbers for ${process.arch}`);
  let koffi: Koffi;
  try {
    koffi = createRequire(process.argv[1]!)('koffi') as Koffi;
  } catch (error) {
    fail(`koffi could not be loaded (${(error as Error).message.split('\n')[0]})`);
  }
  const libc = koffi.load('libc.so.6');
  const syscall = libc.func('long syscall(long, ...)');
  const prctl = libc.func('int prctl(int, unsigned long, unsigned long, unsigned long, unsigned long)');
  const prctlPtr = libc.func('int prctl(int, unsigned long, void *, unsigned long, unsigned long)');
  const fcntl = libc.func('int fcntl(int, int, ...)');
  const execve = libc.func('int execve(const char *, const char **, const char **)');
  const keyctlNr = KEYCTL_NR[arch];

  // Security: the run possesses only this new, empty keyring, never the one it was started from.
  if (syscall(keyctlNr, 'int', KEYCTL_JOIN_SESSION_KEYRING, 'void *', null) < 0)
    fail(`keyctl(JOIN_SESSION_KEYRING) failed (errno ${koffi.errno()})`);
  if (orders.filter !== undefined) {
    const prog = Buffer.from(orders.filter, 'base64');
    if (prog.length === 0 || prog.length % 8 !== 0) fail('the filter is not a whole number of BPF instructions');
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) !== 0) fail(`prctl(PR_SET_NO_NEW_PRIVS) failed (errno ${koffi.errno()})`);
    const Fprog = koffi.struct('sock_fprog', { len: 'uint16', filter: 'void *' });
    const fprog = koffi.alloc(Fprog, 1);
    koffi.encode(fprog, Fprog, { len: prog.length / 8, filter: prog });
    // Security: from here on this process and everything it execs or forks is under the filter.
    if (prctlPtr(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, fprog, 0, 0) !== 0)
      fail(`installing the syscall filter failed (errno ${koffi.errno()})`);
  }
  // Node marks the fds it inherited close-on-exec; the program needs these.
  for (const fd of [0, 1, 2, ...(orders.keep ?? [])]) fcntl(fd, F_SETFD, 'int', 0);
  execve(target[0]!, [...target, null], [...orders.env, null]);
  fail(`could not execute ${target[0]} (errno ${koffi.errno()})`);
}

// Only when started as the launcher bundle (tests import parseOrders without running it).
if (process.argv[1]?.endsWith('skill-mcp-launch.cjs')) main(process.argv.slice(2));
