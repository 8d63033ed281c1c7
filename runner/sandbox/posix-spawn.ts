/**
 * @module A run's spawn through libc's `posix_spawn` (docs/isolation.md, "How a run is spawned").
 *
 * Why: Node's `child_process.spawn` forks the runner (libuv 1.46: `fork` + `execve`). On the
 * 2-core VM the bench uses, that call alone took 4.5 ms for `/bin/true` from a bare node and 6-8 ms
 * from the runner, and the fork's copy-on-write left the runner ~11 ms more CPU per run
 * (bench/RESULTS.md, "A run's spawn through posix_spawn"). glibc's and musl's `posix_spawn` start
 * the child with a vfork-style clone (no copy of the runner's page tables): 0.6 ms for the same
 * `/bin/true`.
 *
 * What the child gets is what `runProcess` asked libuv for, made explicit here:
 *   - stdin `/dev/null` (or a pipe holding the approved stdin), stdout and stderr pipes, and for
 *     fds 3, 4, … a pipe each (the launcher's orders, bubblewrap's filter) or nothing;
 *   - no other fd: Node opens every fd O_CLOEXEC and so does this module (pipe2), and dup2 clears
 *     the flag on the copies only. Security: a runner fd reaching the script would hand it the
 *     audit log or the runner's socket (tested: test/runner/posix-spawn.test.ts);
 *   - every signal at its default disposition and none blocked. Security/correctness: Node ignores
 *     SIGPIPE, and an ignored signal survives exec — a script must not start with it ignored;
 *   - its own session and process group (`setsid`), so the group kill reaches all of it;
 *   - argv and the environment as given, whole, no shell; the working folder by
 *     `posix_spawn_file_actions_addchdir_np` (glibc 2.29+, musl 1.1.24+).
 * Reaping: libuv reaps only its own children, each by its pid, never `waitpid(-1)`, so a SIGCHLD
 * listener reaps ours the same way (`waitpid(pid, WNOHANG)` for each child still waited for).
 *
 * Everything needed is bound once, through koffi (shared/libc.ts); when any of it is missing
 * (no koffi, another libc, an old glibc) `probePosixSpawn` says why, and runs go through
 * `child_process.spawn` as before. `SKILL_MCP_SPAWN=node` forces that path. Nothing silent: the
 * runner says at start which path its runs take (and `skill-mcp doctor` does), and a single spawn
 * that could not be set up here (then spawned by child_process) is said through
 * {@link onSpawnFallback} and counted in the runner's stop line.
 */
import { EventEmitter } from 'node:events';
import { Socket } from 'node:net';
import { constants as osConstants } from 'node:os';
import { writeSync } from 'node:fs';
import { errnoName, koffiWhy, loadLibc } from '../../shared/libc.js';
import { GATE_BLOCK_FD, GATE_FILTER_FD, SANDBOX_INFO_FD } from './go-ahead.js';
import type { Readable } from 'node:stream';
import type { SpawnSpec } from './spawn-spec.js';

const O_CLOEXEC = 0o2000000;
const O_RDONLY = 0;
// <spawn.h>, the same values in glibc and musl.
const POSIX_SPAWN_SETSIGDEF = 0x04;
const POSIX_SPAWN_SETSIGMASK = 0x08;
const POSIX_SPAWN_SETSID = 0x80;
const WNOHANG = 1;
const AF_UNIX = 1;
const SOCK_STREAM = 1;
const SHUT_WR = 1;
/** The filter is written whole into the socket before the spawn: far under any socket's buffer. */
const MAX_GATE_FILTER_BYTES = 32 * 1024;
/** Opaque libc objects, given more room than any libc uses (glibc x86_64: 80, 336 and 128 bytes). */
const FILE_ACTIONS_BYTES = 256;
const ATTR_BYTES = 1024;
const SIGSET_BYTES = 256;

type Fn = (...args: unknown[]) => number;

interface Bound {
  pipe2: Fn;
  spawn: Fn;
  faInit: Fn;
  faDestroy: Fn;
  faDup2: Fn;
  faOpen: Fn;
  faClose: Fn;
  faChdir: Fn;
  attrInit: Fn;
  attrDestroy: Fn;
  attrFlags: Fn;
  attrMask: Fn;
  attrDefault: Fn;
  sigEmpty: Fn;
  sigFill: Fn;
  waitpid: Fn;
  close: Fn;
  /** glibc 2.34+: closes every fd from N up in the child; undefined where libc lacks it. */
  faCloseFrom: Fn | undefined;
  /** For the sandbox's go-ahead (go-ahead.ts); undefined where libc lacks one of them. */
  gate: { socketpair: Fn; shutdown: Fn; prlimit: Fn } | undefined;
  /** The errno the last call left. */
  errno: () => number;
}

/** The child as `runProcess` uses it: the subset of Node's ChildProcess it touches. */
export interface SpawnedChild extends EventEmitter {
  readonly pid: number | undefined;
  readonly stdin: Socket | null;
  readonly stdout: Socket;
  readonly stderr: Socket;
  /** fds 0, 1, 2, then 3, 4, …: the parent's end of each pipe, or null. */
  readonly stdio: (Socket | null)[];
  /** With `spec.infoFd`: the read end of bubblewrap's info. */
  readonly info?: Readable;
  /** With `spec.gate`: the runner's side of the sandbox's go-ahead (go-ahead.ts). */
  readonly gate?: ChildGate;
}

/** The runner's end of a gated spawn: the byte that lets bubblewrap's child go on. */
export interface ChildGate {
  /** prlimit(pid, resource, {value, value}) through libc: 0, or the errno. */
  prlimit(pid: number, resource: number, value: number): number;
  /**
   * Writes the go-ahead byte (once) and lets go of the runner's end. False when the child's end is
   * already closed (EPIPE: bubblewrap's setup failed after it named its child; its exit says why).
   */
  goAhead(): boolean;
  /** Lets go of the runner's end without the byte: the child stays waiting until it is killed. */
  close(): void;
}

export interface PosixSpawner {
  /** Whether fds the runner inherited without close-on-exec are closed in the child too (closefrom). */
  readonly closesInherited: boolean;
  /** Whether a spawn can carry a sandbox go-ahead (`spec.gate`: socketpair, shutdown, prlimit bound). */
  readonly gates: boolean;
  /** Starts `spec`; `fallback` says why the spawn could not even be set up (then use child_process). */
  spawn(spec: SpawnSpec): { child: SpawnedChild } | { fallback: string };
}

const signalNames = new Map<number, string>(Object.entries(osConstants.signals).map(([name, n]) => [n, name]));

/** A wait status as Node reports it: the exit code, or the signal's name. */
export function decodeWaitStatus(status: number): { code: number | null; signal: string | null } {
  const signal = status & 0x7f;
  if (signal === 0) return { code: (status >> 8) & 0xff, signal: null };
  return { code: null, signal: signalNames.get(signal) ?? `SIG${signal}` };
}

let probed: { spawner: PosixSpawner } | { why: string } | undefined;

/** The posix_spawn path, or why runs go through child_process instead (see the module doc). */
export function probePosixSpawn(env: NodeJS.ProcessEnv = process.env): { spawner: PosixSpawner } | { why: string } {
  if (env['SKILL_MCP_SPAWN'] === 'node') return { why: 'SKILL_MCP_SPAWN=node' };
  if (process.platform !== 'linux') return { why: `not Linux (${process.platform})` };
  probed ??= bindSpawner();
  return probed;
}

/** Binds every function through koffi, once; the first one missing says why none is used. */
function bindSpawner(): { spawner: PosixSpawner } | { why: string } {
  const libc = loadLibc();
  if (!libc.ok) return { why: koffiWhy(libc.error) };
  const f = (signature: string): Fn => libc.libc.func(signature) as Fn;
  const signatures = {
    pipe2: 'int pipe2(_Out_ int *fds, int flags)',
    spawn: 'int posix_spawn(_Out_ int *pid, const char *path, void *actions, void *attr, const char **argv, const char **envp)',
    faInit: 'int posix_spawn_file_actions_init(void *actions)',
    faDestroy: 'int posix_spawn_file_actions_destroy(void *actions)',
    faDup2: 'int posix_spawn_file_actions_adddup2(void *actions, int fd, int to)',
    faOpen: 'int posix_spawn_file_actions_addopen(void *actions, int fd, const char *path, int flags, int mode)',
    faClose: 'int posix_spawn_file_actions_addclose(void *actions, int fd)',
    faChdir: 'int posix_spawn_file_actions_addchdir_np(void *actions, const char *path)',
    attrInit: 'int posix_spawnattr_init(void *attr)',
    attrDestroy: 'int posix_spawnattr_destroy(void *attr)',
    attrFlags: 'int posix_spawnattr_setflags(void *attr, short flags)',
    attrMask: 'int posix_spawnattr_setsigmask(void *attr, void *set)',
    attrDefault: 'int posix_spawnattr_setsigdefault(void *attr, void *set)',
    sigEmpty: 'int sigemptyset(void *set)',
    sigFill: 'int sigfillset(void *set)',
    waitpid: 'int waitpid(int pid, _Out_ int *status, int options)',
    close: 'int close(int fd)',
  } as const;
  const bound: Partial<Bound> = {};
  for (const [key, signature] of Object.entries(signatures)) {
    try {
      bound[key as keyof typeof signatures] = f(signature);
    } catch {
      return { why: `libc has no ${signature.split('(')[0]!.split(' ').pop()} (glibc 2.29+ or musl 1.1.24+ has every function used)` };
    }
  }
  bound.errno = libc.libc.errno;
  bound.faCloseFrom = optional(() => f('int posix_spawn_file_actions_addclosefrom_np(void *actions, int from)'));
  const socketpair = optional(() => f('int socketpair(int domain, int type, int protocol, _Out_ int *fds)'));
  const shutdown = optional(() => f('int shutdown(int fd, int how)'));
  const prlimit = optional(() => f('int prlimit(int pid, int resource, void *limit, void *old)'));
  bound.gate = socketpair && shutdown && prlimit ? { socketpair, shutdown, prlimit } : undefined;
  return { spawner: spawnerOf(bound as Bound) };
}

/** The posix_spawn path, or undefined where it is not available ({@link probePosixSpawn} says why). */
export function loadPosixSpawn(env: NodeJS.ProcessEnv = process.env): PosixSpawner | undefined {
  const found = probePosixSpawn(env);
  return 'spawner' in found ? found.spawner : undefined;
}

type FallbackListener = (why: string, count: number) => void;
let fallbackListener: FallbackListener | undefined;
let fallbacks = 0;

/** Who hears of a spawn that posix_spawn could not set up (the runner: its log). One listener. */
export function onSpawnFallback(listener: FallbackListener | undefined): void {
  fallbackListener = listener;
}

/** How many spawns went to child_process because their posix_spawn setup failed, since start. */
export function spawnFallbackCount(): number {
  return fallbacks;
}

/** Records one such spawn and tells the listener. */
export function noteSpawnFallback(why: string): void {
  fallbacks += 1;
  fallbackListener?.(why, fallbacks);
}

function optional(bind: () => Fn): Fn | undefined {
  try {
    return bind();
  } catch {
    return undefined;
  }
}

/**
 * Every signal 1-64 in `set`. sigfillset leaves out the two libc keeps for itself (32 and 33 in
 * glibc), and posix_spawn sets those to SIG_IGN in the child while it runs there — an ignored
 * signal survives exec, so the script would start with them ignored. Set in the mask by hand, they
 * are reset to the default like the rest (Linux: the set is a little-endian bit mask, signal n at
 * bit n - 1, 64 signals on x86_64 and aarch64).
 */
function allSignals(c: Bound, set: Buffer): number {
  const rc = c.sigFill(set);
  set.fill(0xff, 0, 8);
  return rc;
}

function spawnerOf(c: Bound): PosixSpawner {
  /** Our children not reaped yet, by pid. */
  const waiting = new Map<number, (status: number) => void>();
  let listening = false;
  const reap = (): void => {
    for (const [pid, done] of waiting) {
      const status = [0];
      // Only our own pids: libuv's children are libuv's to reap.
      if (c.waitpid(pid, status, WNOHANG) !== pid) continue;
      waiting.delete(pid);
      done(status[0]!);
    }
  };
  const closeAll = (fds: (number | undefined)[]): void => {
    for (const fd of fds) if (fd !== undefined) c.close(fd);
  };

  const gateOps = c.gate;
  return {
    closesInherited: c.faCloseFrom !== undefined,
    gates: gateOps !== undefined,
    spawn(spec) {
      const made: number[] = [];
      let pipeErrno = 0;
      const pipe = (): [number, number] | undefined => {
        const fds = [-1, -1];
        if (c.pipe2(fds, O_CLOEXEC) !== 0) {
          pipeErrno ||= c.errno(); // read now: the closes below may change errno
          return undefined;
        }
        made.push(fds[0]!, fds[1]!);
        return [fds[0]!, fds[1]!];
      };
      const stdinPipe = spec.stdin !== undefined ? pipe() : undefined;
      const out = pipe();
      const err = pipe();
      const extra = spec.fds.map((bytes) => (bytes === undefined ? undefined : pipe()));
      // The file actions run in order: a pipe numbered below the child's last fd could be
      // overwritten by an earlier dup2 before its own. Never so in a running runner (its low fds
      // are long taken); if it happens, child_process (which moves them first) spawns this one.
      if ((spec.stdin !== undefined && !stdinPipe) || !out || !err || extra.some((p, i) => p === undefined && spec.fds[i] !== undefined)) {
        closeAll(made);
        return { fallback: `a pipe could not be made (${errnoName(pipeErrno)})` };
      }
      // bubblewrap's info (the sandbox's pid 1): a pipe the child writes on `spec.infoFd`.
      const info = spec.infoFd !== undefined ? pipe() : undefined;
      if (spec.infoFd !== undefined && !info) {
        closeAll(made);
        return { fallback: `a pipe could not be made (${errnoName(pipeErrno)})` };
      }
      // The go-ahead's fds (go-ahead.ts): a socket pair, the filter's fd and the block fd.
      let pair: [number, number] | undefined;
      if (spec.gate) {
        if (!gateOps) {
          closeAll(made);
          return { fallback: "libc has no socketpair, shutdown or prlimit for the sandbox's go-ahead" };
        }
        if (spec.fds.length !== GATE_FILTER_FD - 3 || spec.infoFd !== SANDBOX_INFO_FD || spec.gate.filter.length > MAX_GATE_FILTER_BYTES) {
          closeAll(made);
          return { fallback: 'the go-ahead needs fds 4-6 free and a filter under 32 KiB' };
        }
        const fds = [-1, -1];
        if (gateOps.socketpair(AF_UNIX, SOCK_STREAM | O_CLOEXEC, 0, fds) !== 0) {
          const errno = c.errno();
          closeAll(made);
          return { fallback: `the go-ahead's socket pair could not be made (${errnoName(errno)})` };
        }
        made.push(fds[0]!, fds[1]!);
        // The filter waits in fd 4's end; shut for writing, fd 4 then reads its end after it.
        // Blocking writes of a few KiB into an empty socket: they cannot wait.
        writeSync(fds[1]!, spec.gate.filter);
        if (gateOps.shutdown(fds[1]!, SHUT_WR) !== 0) {
          const errno = c.errno();
          closeAll(made);
          return { fallback: `the go-ahead's socket could not be shut (${errnoName(errno)})` };
        }
        pair = [fds[0]!, fds[1]!];
      }
      const lastFd = Math.max(pair ? GATE_BLOCK_FD : 0, spec.infoFd ?? 0, 2 + spec.fds.length);
      if (made.some((fd) => fd <= lastFd)) {
        closeAll(made);
        return { fallback: `a pipe got fd ${Math.min(...made)}, at or below the child's fd ${lastFd}` };
      }
      const actions = Buffer.alloc(FILE_ACTIONS_BYTES);
      const attr = Buffer.alloc(ATTR_BYTES);
      const signals = Buffer.alloc(SIGSET_BYTES);
      if (c.faInit(actions) !== 0) {
        closeAll(made);
        return { fallback: 'posix_spawn_file_actions_init failed' };
      }
      if (c.attrInit(attr) !== 0) {
        c.faDestroy(actions);
        closeAll(made);
        return { fallback: 'posix_spawnattr_init failed' };
      }
      try {
        const steps = [
          stdinPipe ? c.faDup2(actions, stdinPipe[0], 0) : c.faOpen(actions, 0, '/dev/null', O_RDONLY, 0),
          c.faDup2(actions, out[1], 1),
          c.faDup2(actions, err[1], 2),
          ...extra.map((p, i) => (p ? c.faDup2(actions, p[0], 3 + i) : 0)),
          ...(pair ? [c.faDup2(actions, pair[0], GATE_FILTER_FD), c.faDup2(actions, pair[1], GATE_BLOCK_FD)] : []),
          ...(info ? [c.faDup2(actions, info[1], spec.infoFd!)] : []),
          // Security: an fd below the last one given that is not given itself (fd 3 or 5 at the
          // bubblewrap levels) is closed too, as closefrom closes those above.
          ...gaps(lastFd, spec, pair !== undefined).map((fd) => c.faClose(actions, fd)),
          // Security: an fd the runner itself inherited without close-on-exec (from whoever started
          // it) goes no further: every fd above the child's own is closed in the child.
          c.faCloseFrom ? c.faCloseFrom(actions, lastFd + 1) : 0,
          c.faChdir(actions, spec.cwd),
          c.sigEmpty(signals),
          c.attrMask(attr, signals),
          allSignals(c, signals),
          c.attrDefault(attr, signals),
          c.attrFlags(attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF),
        ];
        const failed = steps.findIndex((rc) => rc !== 0);
        if (failed >= 0) {
          closeAll(made);
          return { fallback: `a file action or attribute could not be set (step ${failed + 1}: ${errnoName(steps[failed]!)})` };
        }
        if (!listening) {
          listening = true;
          process.on('SIGCHLD', reap);
        }
        const pid = [0];
        const argv = [spec.command, ...spec.args, null];
        const envp = [...Object.entries(spec.env).map(([name, value]) => `${name}=${value}`), null];
        const rc = c.spawn(pid, spec.command, actions, attr, argv, envp);
        // The child's ends are the child's (or nobody's) now. Of the go-ahead's pair the runner
        // keeps fd 4's end, to write the byte into (or to close without it).
        closeAll([stdinPipe?.[0], out[1], err[1], ...extra.map((p) => p?.[0]), pair?.[1], info?.[1]]);
        const child = new EventEmitter() as SpawnedChild & {
          pid: number | undefined;
          stdin: Socket | null;
          stdout: Socket;
          stderr: Socket;
          stdio: (Socket | null)[];
        };
        if (rc !== 0) {
          // The chain's first program could not be started (ENOENT, EACCES …): `error`, as libuv says it.
          closeAll([stdinPipe?.[1], ...extra.map((p) => p?.[1]), pair?.[0], info?.[0]]);
          Object.assign(child, {
            pid: undefined,
            stdin: null,
            stdout: new Socket({ fd: out[0], readable: true, writable: false }),
            stderr: new Socket({ fd: err[0], readable: true, writable: false }),
          });
          child.stdio = [null, child.stdout, child.stderr];
          const error = Object.assign(new Error(`spawn ${spec.command}: ${errnoName(rc)}`), { code: errnoName(rc), errno: -rc });
          queueMicrotask(() => child.emit('error', error));
          return { child };
        }
        child.pid = pid[0]!;
        child.stdin = stdinPipe ? new Socket({ fd: stdinPipe[1], readable: false, writable: true }) : null;
        child.stdout = new Socket({ fd: out[0], readable: true, writable: false });
        child.stderr = new Socket({ fd: err[0], readable: true, writable: false });
        child.stdio = [
          child.stdin,
          child.stdout,
          child.stderr,
          ...extra.map((p) => (p ? new Socket({ fd: p[1], readable: false, writable: true }) : null)),
        ];
        if (info) Object.assign(child, { info: new Socket({ fd: info[0], readable: true, writable: false }) });
        if (pair && gateOps) Object.assign(child, { gate: childGate(c, gateOps.prlimit, pair[0]) });
        waiting.set(child.pid, (status) => {
          const { code, signal } = decodeWaitStatus(status);
          child.emit('exit', code, signal);
        });
        // A child that exited before the listener saw its SIGCHLD is reaped on the next turn.
        setImmediate(reap);
        return { child };
      } finally {
        c.faDestroy(actions);
        c.attrDestroy(attr);
      }
    },
  };
}

/** The child's fds from 3 to `lastFd` that no pipe or socket is put on. */
function gaps(lastFd: number, spec: SpawnSpec, gated: boolean): number[] {
  const given = new Set<number>([...(spec.infoFd !== undefined ? [spec.infoFd] : []), ...(gated ? [GATE_FILTER_FD, GATE_BLOCK_FD] : [])]);
  for (const [i, bytes] of spec.fds.entries()) if (bytes !== undefined) given.add(3 + i);
  const out: number[] = [];
  for (let fd = 3; fd <= lastFd; fd++) if (!given.has(fd)) out.push(fd);
  return out;
}

/** The runner's side of one gated spawn: its end of the pair (fd 4's peer). */
function childGate(c: Bound, prlimit: Fn, go: number): ChildGate {
  let open = true;
  const letGo = (): void => {
    if (!open) return;
    open = false;
    c.close(go);
  };
  return {
    prlimit(pid, resource, value) {
      const limit = Buffer.alloc(16);
      limit.writeBigUInt64LE(BigInt(value), 0);
      limit.writeBigUInt64LE(BigInt(value), 8);
      return prlimit(pid, resource, limit, null) === 0 ? 0 : c.errno() || -1;
    },
    goAhead() {
      if (!open) return false;
      try {
        // One byte into an empty socket (blocking, but it cannot wait).
        writeSync(go, Buffer.of(1));
        return true;
      } catch {
        // The child's end is closed: it ended between its limits and the byte. Thrown, this would
        // take the whole runner down from an event handler (seen under load as uid 40100).
        return false;
      } finally {
        letGo();
      }
    },
    close: letGo,
  };
}
