/**
 * The sandbox's go-ahead (runner/sandbox/go-ahead.ts): at the bubblewrap levels the runner sets a
 * run's rlimits on bubblewrap's waiting child and only then lets it exec. The pure part (bubblewrap's
 * info, the parent check, the order of the limits and the byte) by attack name; then real
 * bubblewrap through the real posix_spawn path and runProcess: nothing runs before the go-ahead,
 * a runner gone before it leaves the sandbox waiting (never running without limits), a limit the
 * kernel refuses stops the run with a clear error, and the script sees exactly the limits asked.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bwrapArgs } from '../../runner/sandbox/bwrap.js';
import {
  GATE_BLOCK_FD,
  GATE_FILTER_FD,
  SANDBOX_INFO_FD,
  openGate,
  parentOf,
  parseInfo,
  readStat,
  RLIMIT,
  runnerMaySetLimits,
  type GateOps,
  type Rlimit,
} from '../../runner/sandbox/go-ahead.js';
import { loadHostPrograms } from '../../runner/sandbox/seccomp-programs.js';
import { readHostLayout, type Platform } from '../../runner/sandbox/platform.js';
import { loadPidfdKiller } from '../../runner/sandbox/pidfd.js';
import { loadPosixSpawn, type SpawnedChild } from '../../runner/sandbox/posix-spawn.js';
import { runProcess } from '../../runner/sandbox/process.js';
import { buildSpawn, type SandboxLimits, type SpawnSpec } from '../../runner/sandbox/spawn.js';
import type { RunPlan } from '../../runner/requests/derive.js';
import { staleSandboxes } from '../../runner/workspace/scratch.js';

const LIMITS: Rlimit[] = [
  { name: 'nproc', value: 77 },
  { name: 'fsize', value: 12_345_678 },
  { name: 'nofile', value: 99 },
  { name: 'cpu', value: 11 },
  { name: 'data', value: 300 * 1024 * 1024 },
  { name: 'core', value: 0 },
];

/** Fake system calls that record what was asked, in order. */
function fakeOps(over: Partial<GateOps> & { parent?: number } = {}): GateOps & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    prlimit:
      over.prlimit ??
      ((pid, resource, value) => {
        calls.push(`prlimit ${pid} ${resource} ${value}`);
        return 0;
      }),
    readStat: over.readStat ?? ((pid) => `${pid} (bwrap) S ${over.parent ?? 4242} 1 1 0 -1`),
    goAhead: over.goAhead ?? (() => calls.push('go') > 0),
  };
}

describe('the go-ahead, by attack name', () => {
  it("reads the pid from bubblewrap's first status line, and refuses a line that is cut, not JSON, or names no usable pid", () => {
    // --json-status-fd: one object a line; the command's exit code follows once it ended.
    expect(parseInfo('{ "child-pid": 4243, "cgroup-namespace": 4026531835, "mnt-namespace": 4026531841 }\n')).toEqual({ pid: 4243 });
    expect(parseInfo('{ "child-pid": 4243, "mnt-namespace": 4026531841 }\n{ "exit-code": 1 }\n')).toEqual({ pid: 4243 });
    expect(parseInfo('')).toEqual({ why: 'bubblewrap wrote no info (it ended before its sandbox was made)' });
    expect(parseInfo('{ "child-pid": 42')).toEqual({ why: "bubblewrap's info is not JSON" });
    // Two objects on the first line: refused, not the first one taken.
    expect(parseInfo('{"child-pid": 4243}{"child-pid": 99}\n')).toEqual({ why: "bubblewrap's info is not JSON" });
    for (const bad of [
      '{}',
      '{"child-pid": "4243"}',
      '{"child-pid": 1}',
      '{"child-pid": 0}',
      '{"child-pid": -5}',
      '{"child-pid": 4.5}',
      'null',
      '[4243]',
    ]) {
      expect(parseInfo(bad)).toEqual({ why: "bubblewrap's info names no child pid" });
    }
  });

  it('reads the parent from /proc/PID/stat even when the process name holds ") " and digits', () => {
    expect(parentOf('4243 (bwrap) S 4242 4242 4242 0 -1 4194560')).toBe(4242);
    expect(parentOf('4243 (a) S 1 (b) S 7) S 4242 1 1')).toBe(4242);
    expect(parentOf('4243 (x) S')).toBeUndefined();
  });

  it('sets all six limits on the child, in order, and only then writes the byte', () => {
    const ops = fakeOps();
    expect(openGate('{"child-pid": 4243}', 4242, LIMITS, ops)).toEqual({ ok: true, pid: 4243 });
    expect(ops.calls).toEqual([...LIMITS.map((l) => `prlimit 4243 ${RLIMIT[l.name]} ${l.value}`), 'go']);
  });

  it('pid reuse: a pid whose parent is not the spawned chain gets no limits and no byte', () => {
    const ops = fakeOps({ parent: 1 });
    expect(openGate('{"child-pid": 4243}', 4242, LIMITS, ops)).toEqual({
      ok: false,
      gone: false,
      why: 'the process bubblewrap named (4243) is not its child (its parent is 1)',
    });
    expect(ops.calls).toEqual([]);
  });

  it('a limit the kernel refuses: no later limit is tried and the byte is never written', () => {
    const calls: string[] = [];
    const prlimit = (_pid: number, resource: number): number => {
      calls.push(String(resource));
      return resource === RLIMIT.nofile ? 1 : 0;
    };
    const ops = fakeOps({ prlimit, goAhead: () => calls.push('go') > 0 });
    expect(openGate('{"child-pid": 4243}', 4242, LIMITS, ops)).toEqual({
      ok: false,
      gone: false,
      why: "the sandbox's nofile limit could not be set (EPERM)",
    });
    expect(calls).toEqual([String(RLIMIT.nproc), String(RLIMIT.fsize), String(RLIMIT.nofile)]);
  });

  it('a child that ended by itself (bubblewrap failed its setup) is "gone": its exit says why, no byte', () => {
    const noStat = fakeOps({ readStat: () => undefined });
    expect(openGate('{"child-pid": 4243}', 4242, LIMITS, noStat)).toMatchObject({ ok: false, gone: true });
    const esrch = fakeOps({ prlimit: () => 3 });
    expect(openGate('{"child-pid": 4243}', 4242, LIMITS, esrch)).toMatchObject({ ok: false, gone: true });
    expect([...noStat.calls, ...esrch.calls]).not.toContain('go');
    expect(openGate('', 4242, LIMITS, fakeOps())).toMatchObject({ ok: false, gone: true });
  });

  it("root may set a run uid's limits only with CAP_SYS_RESOURCE; an ordinary runner always may (its child is its own uid)", () => {
    expect(runnerMaySetLimits(false, undefined)).toBe(true);
    expect(runnerMaySetLimits(true, '000001ffffffffff')).toBe(true);
    expect(runnerMaySetLimits(true, '000001fffeffffff')).toBe(false); // bit 24 dropped, as some containers do
    expect(runnerMaySetLimits(true, undefined)).toBe(false);
    expect(runnerMaySetLimits(true, 'not hex')).toBe(false);
  });
});

describe('the chain buildSpawn makes at the bubblewrap levels', () => {
  const MIB = 1024 * 1024;
  const limits: SandboxLimits = {
    nproc: 64,
    fsizeBytes: 64 * MIB,
    nofile: 256,
    memoryBytes: 1024 * MIB,
    tmpBytes: 64 * MIB,
    workspaceBytes: 64 * MIB,
    workspaceFiles: 1000,
    inputBytes: MIB,
    outputFilesBytes: MIB,
  };
  const plan = {
    willRun: {
      skill: 's',
      interpreter: 'python3',
      argv: ['a.py'],
      cwd: 's',
      timeoutMs: 29_500,
      envNames: [],
      isolation: 'namespace',
      sandbox: [],
      memoryBytes: 300 * MIB,
      content: { script: '', files: '', fileCount: 1, bytes: 1 },
    },
    interpreterPath: '/usr/bin/python3',
    realDir: '/srv/skills/s',
    scriptRelative: 'a.py',
    args: ['x'],
    grantedEnv: [],
    egress: { mode: 'none', env: {}, entries: [] },
    deps: {},
    secrets: [],
    redact: [],
  } as unknown as RunPlan;
  const platform = (over: Partial<Platform>): Platform => ({
    asRoot: false,
    interpreters: new Map(),
    isolation: 'namespace',
    isolationDetail: '',
    mechanisms: [],
    missing: [],
    tools: { bwrap: '/usr/bin/bwrap', prlimit: '/usr/bin/prlimit', setpriv: '/usr/bin/setpriv', sh: '/bin/sh' },
    layout: { links: [], dirs: [], extra: [] },
    seccomp: Buffer.alloc(16, 7),
    ...over,
  });
  const build = (p: Platform, uid?: number): SpawnSpec =>
    buildSpawn({
      plan,
      platform: p,
      sourceEnv: { PATH: '/usr/bin' },
      uid,
      limits,
      dirs: { workspace: '/run/x/work', home: '/run/x/home' },
    });
  /** The prlimit step's options as the gate's names and values. */
  const stepLimits = (argv: string[]): Record<string, number> =>
    Object.fromEntries(
      argv.filter((a) => /^--[a-z]+=\d+$/.test(a)).map((a) => [a.slice(2, a.indexOf('=')), Number(a.slice(a.indexOf('=') + 1))]),
    );

  it('gated: no prlimit step, bubblewrap execs the interpreter; it is told --seccomp 4, --json-status-fd 6, --block-fd 5; the filter and the six limits go with the spawn', () => {
    const spec = build(platform({ limitsBy: 'runner' }));
    const argv = [spec.command, ...spec.args];
    expect(argv).not.toContain('/usr/bin/prlimit');
    expect(argv.slice(argv.indexOf('--') + 1)).toEqual([
      '/usr/bin/python3',
      '-B',
      '-X',
      'pycache_prefix=/dev/null/skill-mcp-no-bytecode',
      '/skill/a.py',
      'x',
    ]);
    const options = argv.join(' ');
    expect(options).toContain(`--seccomp ${GATE_FILTER_FD}`);
    expect(options).toContain(`--json-status-fd ${SANDBOX_INFO_FD} --block-fd ${GATE_BLOCK_FD}`);
    expect(spec.fds).toEqual([undefined]);
    expect(spec.gate?.filter).toEqual(Buffer.alloc(16, 7));
  });

  it("the gate sets exactly what the prlimit step sets where there is no gate (nproc, fsize, nofile, cpu = timeout + 1 s, data = the run's memory, core 0)", () => {
    const gated = build(platform({ limitsBy: 'runner' })).gate!.limits;
    const plain = build(platform({}));
    const argv = [plain.command, ...plain.args];
    const step = argv.slice(argv.indexOf('/usr/bin/prlimit'));
    expect(step.slice(step.indexOf('--') + 1, step.indexOf('--') + 2)).toEqual(['/usr/bin/python3']);
    expect(plain.gate).toBeUndefined();
    expect(plain.fds).toEqual([undefined, Buffer.alloc(16, 7)]);
    expect(Object.fromEntries(gated.map((l) => [l.name, l.value]))).toEqual(stepLimits(step));
    expect(stepLimits(step)).toEqual({ nproc: 64, fsize: 64 * MIB, nofile: 256, cpu: 31, data: 300 * MIB, core: 0 });
  });

  it("as root (namespace-uid) the gated chain is setpriv to the run uid, then bubblewrap: the spawned pid is bubblewrap's own, the parent the gate checks", () => {
    const spec = build(platform({ asRoot: true, isolation: 'namespace-uid', limitsBy: 'runner' }), 40_123);
    expect(spec.command).toBe('/usr/bin/setpriv');
    expect(spec.args).toContain('--reuid=40123');
    expect(spec.args[spec.args.indexOf('--') + 1]).toBe('/usr/bin/bwrap');
    expect(spec.args).not.toContain('/usr/bin/prlimit');
  });

  it('without the filter there is no gate (the filter travels on its fd): the prlimit step stays', () => {
    const spec = build(platform({ limitsBy: 'runner', seccomp: undefined }));
    expect(spec.gate).toBeUndefined();
    expect(spec.args).toContain('/usr/bin/prlimit');
  });
});

// Real bubblewrap, run as this test's own uid: its child is this uid, so this process may set its
// limits (an ordinary runner's case; as root the child is root's too).
const spawner = loadPosixSpawn();
const bwrap = ['/usr/bin/bwrap', '/bin/bwrap'].find((p) => existsSync(p));
// The program the build shipped for a level without a memory cgroup (dist/seccomp/).
const filter = loadHostPrograms(join(import.meta.dirname, '../../dist/seccomp'))?.shmRefused;
const layout = readHostLayout([realpathSync('/bin/sh')]);
const temp = realpathSync(mkdtempSync(join(tmpdir(), 'skill-mcp-go-ahead-')));
afterAll(() => rmSync(temp, { recursive: true, force: true }));
const bwrapWorks =
  bwrap !== undefined &&
  filter !== undefined &&
  spawnSync(bwrap, [...bwrapArgs(layout, { skillDir: temp, tmpBytes: 1 << 20 }), '--', '/bin/true']).status === 0;
const skipWhy = !spawner?.gates
  ? 'no posix_spawn go-ahead here'
  : !bwrapWorks
    ? 'bubblewrap cannot build a sandbox as this uid here'
    : undefined;

/** A gated bubblewrap running `script` in sh, the way spawn.ts builds a run's (fd 4 filter, 5 block, 6 info). */
function gated(script: string, limits: Rlimit[] = LIMITS, skillDir = temp): SpawnSpec {
  const args = [
    ...bwrapArgs(layout, { skillDir, tmpBytes: 1 << 20, seccompFd: GATE_FILTER_FD, blockFd: GATE_BLOCK_FD, infoFd: SANDBOX_INFO_FD }),
    '--',
    '/bin/sh',
    '-c',
    script,
  ];
  return {
    command: bwrap!,
    args,
    env: { PATH: '/usr/bin:/bin' },
    cwd: '/',
    envNames: [],
    fds: [undefined],
    gate: { filter: filter!, limits },
    infoFd: SANDBOX_INFO_FD,
  };
}

/** The child bubblewrap named, once its first status line is read (the status fd stays open until bubblewrap exits). */
async function childPid(child: SpawnedChild): Promise<number> {
  const chunks: Buffer[] = [];
  return new Promise((ok, fail) => {
    child.info!.on('data', (c: Buffer) => {
      chunks.push(c);
      const found = parseInfo(Buffer.concat(chunks).toString());
      if ('pid' in found) ok(found.pid);
    });
    child.info!.once('end', () => {
      const found = parseInfo(Buffer.concat(chunks).toString());
      if ('why' in found) fail(new Error(found.why));
    });
  });
}

/** Whether `pid` sits in read(2) on the block fd: /proc/PID/syscall is "0 0x5 …" (x86_64) or "63 0x5 …" (aarch64). */
function waitingOnBlockFd(pid: number): boolean {
  try {
    const [nr, fd] = readFileSync(`/proc/${pid}/syscall`, 'utf8').split(' ');
    return (nr === '0' || nr === '63') && Number(fd) === GATE_BLOCK_FD;
  } catch {
    return false;
  }
}

/** The child of `parent` (the sandbox's pid 1 under its outer bubblewrap), from /proc; undefined while there is none. */
function childOf(parent: number): number | undefined {
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readStat(Number(name));
    if (stat !== undefined && parentOf(stat) === parent) return Number(name);
  }
  return undefined;
}

/** No such process, or a zombie (an orphan may wait for its reaper a moment). */
function gone(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z');
  } catch {
    return true;
  }
}

async function until(what: string, ok: () => boolean, boundMs = 20_000): Promise<void> {
  const end = Date.now() + boundMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`${what}: not within ${boundMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A gated spawn of `script`, once its child waits on the block fd: nothing of the script has run. */
async function heldSandbox(script: string, skillDir = temp) {
  const made = spawner!.spawn(gated(script, LIMITS, skillDir));
  if (!('child' in made)) throw new Error(made.fallback);
  const { child } = made;
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<[number | null, string | null]>((ok) => child.once('exit', (code, signal) => ok([code, signal])));
  const pid = await childPid(child);
  await until('the sandbox child waits on its block fd', () => waitingOnBlockFd(pid));
  return { child, pid, exited, out: () => out };
}

/** `script` in a gated sandbox through runProcess with a hold, once its child waits on the block fd. */
async function heldRun(script: string) {
  let settle!: (why: string | undefined) => void;
  const hold = new Promise<string | undefined>((resolve) => (settle = resolve));
  const running = runProcess(gated(script), {
    timeoutMs: 30_000,
    killGraceMs: 0,
    drainMs: 1000,
    maxStreamBytes: 1 << 20,
    afterExit: async () => undefined,
    hold,
  });
  await until('the sandbox child waits on its block fd', () => waitingOnBlockFd(childOf(running.pid!) ?? -1));
  return { running, settle, child: childOf(running.pid!)! };
}

describe('a go-ahead byte that cannot be written', () => {
  it('is a sandbox gone by itself (its exit says why), not a started run', () => {
    const ops = fakeOps({ goAhead: () => false });
    expect(openGate('{"child-pid": 4243}', 4242, LIMITS, ops)).toEqual({
      ok: false,
      gone: true,
      why: 'the sandbox ended before it could go ahead',
    });
  });
});

describe.skipIf(skipWhy !== undefined)(`real bubblewrap held by the go-ahead${skipWhy ? ` (skipped: ${skipWhy})` : ''}`, () => {
  it('nothing of the script runs before the byte; after it the script sees exactly the limits set', async () => {
    const { child, pid, exited, out } = await heldSandbox('echo started; cat /proc/self/limits');
    expect(out()).toBe('');
    expect(
      openGate(JSON.stringify({ 'child-pid': pid }), child.pid!, LIMITS, {
        prlimit: child.gate!.prlimit,
        readStat,
        goAhead: child.gate!.goAhead,
      }),
    ).toEqual({ ok: true, pid });
    expect(await exited).toEqual([0, null]);
    expect(out().startsWith('started\n')).toBe(true);
    const row = (label: string): string[] =>
      out()
        .split('\n')
        .find((l) => l.startsWith(label))!
        .slice(26)
        .trim()
        .split(/\s+/)
        .slice(0, 2);
    expect(row('Max processes')).toEqual(['77', '77']);
    expect(row('Max file size')).toEqual(['12345678', '12345678']);
    expect(row('Max open files')).toEqual(['99', '99']);
    expect(row('Max cpu time')).toEqual(['11', '11']);
    expect(row('Max data size')).toEqual([String(300 * 1024 * 1024), String(300 * 1024 * 1024)]);
    expect(row('Max core file size')).toEqual(['0', '0']);
  });

  it('a runner gone before the byte (its end closed, as its death closes it) leaves the sandbox waiting, never running', async () => {
    const { child, pid, exited, out } = await heldSandbox('echo started');
    // What the kernel does with a dead runner's fds. With a pipe as the block fd this end-of-file
    // would let bubblewrap go on and exec the script with no limits; the child holds the pair's
    // other end itself (its filter fd), so its read has no end-of-file to see.
    child.gate!.close();
    await new Promise((r) => setTimeout(r, 500));
    expect(waitingOnBlockFd(pid)).toBe(true);
    expect(out()).toBe('');
    process.kill(-child.pid!, 'SIGKILL');
    process.kill(pid, 'SIGKILL');
    expect((await exited)[1]).toBe('SIGKILL');
    expect(out()).toBe('');
  });

  it('a sandbox that ends after its limits and before the byte: the write finds its end closed, says so, and throws nothing (a throw here took the runner down)', async () => {
    const { child, pid, exited, out } = await heldSandbox('echo started');
    process.kill(-child.pid!, 'SIGKILL');
    process.kill(pid, 'SIGKILL');
    await exited;
    await until('the sandbox child is gone', () => readStat(pid) === undefined);
    expect(child.gate!.goAhead()).toBe(false);
    expect(out()).toBe('');
  });

  it("a sandbox left waiting by a dead runner is found and killed at the next runner's start (its argv binds the dead runner's run folder)", async () => {
    // The run's skill copy, as a runner names it: run-<runner pid>-<run id>-skill, of a runner that is gone.
    const dead = spawnSync('true').pid!;
    const copy = join(temp, `run-${dead}-0123456789abcdef-skill`);
    mkdirSync(copy);
    const { child, pid, exited, out } = await heldSandbox('echo started', copy);
    child.gate!.close();
    const found = staleSandboxes(temp).map((p) => p.pid);
    // The waiting child and its outer bubblewrap (whose parent here is the test, not a dead runner).
    expect(found.sort()).toEqual([child.pid!, pid].sort());
    const killer = loadPidfdKiller();
    expect(killer).toBeDefined();
    for (const p of staleSandboxes(temp)) killer!.kill(p.pid, p.uid);
    expect((await exited)[1]).toBe('SIGKILL');
    await until('the waiting child is gone', () => gone(pid));
    expect(out()).toBe('');
    expect(staleSandboxes(temp)).toEqual([]);
  });

  it('a limit the kernel refuses stops the run through runProcess: spawn-failed, the reason on stderr, the script never started', async () => {
    // RLIMIT_NOFILE above fs.nr_open is refused (EPERM) by every kernel, for every caller.
    const nrOpen = Number(readFileSync('/proc/sys/fs/nr_open', 'utf8'));
    const limits: Rlimit[] = [
      { name: 'nproc', value: 77 },
      { name: 'nofile', value: nrOpen + 1 },
      { name: 'cpu', value: 11 },
    ];
    const marker = join(temp, 'ran');
    const running = runProcess(gated(`echo started; : > ${marker}`, limits), {
      timeoutMs: 30_000,
      killGraceMs: 0,
      drainMs: 1000,
      maxStreamBytes: 1 << 20,
      afterExit: async () => undefined,
    });
    const o = await running.outcome;
    expect(o.ending).toBe('spawn-failed');
    expect(o.startError).toBe("the sandbox's nofile limit could not be set (EPERM)");
    expect(o.stderr.toString()).toContain("skill-mcp: the sandbox's nofile limit could not be set (EPERM); the script was not started");
    expect(o.stdout.toString()).toBe('');
    expect(existsSync(marker)).toBe(false);
  });

  it("the script holds none of the go-ahead's fds (bubblewrap closes 4, 5 and 6 before the exec)", async () => {
    // `ls` itself opens the folder it lists: fd 3, the lowest free one.
    const o = await runProcess(gated('ls /proc/self/fd'), {
      timeoutMs: 30_000,
      killGraceMs: 0,
      drainMs: 1000,
      maxStreamBytes: 1 << 20,
      afterExit: async () => undefined,
    }).outcome;
    expect(o).toMatchObject({ ending: 'exit', exitCode: 0 });
    expect(o.stdout.toString().split('\n').filter(Boolean).sort()).toEqual(['0', '1', '2', '3']);
  });

  it('a gated spawn posix_spawn cannot set up never goes to child_process (it has no prlimit step): spawn-failed, said, nothing ran', async () => {
    const marker = join(temp, 'ran-unset');
    // fd 3 unused but not declared: the go-ahead's fds 4-6 would not be where bubblewrap is told they are.
    const spec = { ...gated(`: > ${marker}`), fds: [] };
    const o = await runProcess(spec, {
      timeoutMs: 30_000,
      killGraceMs: 0,
      drainMs: 1000,
      maxStreamBytes: 1 << 20,
      afterExit: async () => undefined,
    }).outcome;
    expect(o.ending).toBe('spawn-failed');
    expect(o.startError).toBe("the sandbox's go-ahead could not be set up (the go-ahead needs fds 4-6 free and a filter under 32 KiB)");
    expect(o.stderr.toString()).toContain('the script was not started');
    expect(existsSync(marker)).toBe(false);
  });

  it('a held start: the sandbox is built and waits on its block fd while the hold is open; let go, the script runs', async () => {
    const { running, settle, child } = await heldRun('echo started');
    // Long past the moment the limits would have been set and the byte written without a hold.
    await new Promise((r) => setTimeout(r, 300));
    expect(waitingOnBlockFd(child)).toBe(true);
    settle(undefined);
    const o = await running.outcome;
    expect(o).toMatchObject({ ending: 'exit', exitCode: 0 });
    expect(o.stdout.toString()).toBe('started\n');
  });

  it('a held start refused (its token not spent, its accept line not written): the script never starts — spawn-failed, the reason said', async () => {
    const { running, settle, child } = await heldRun('echo started');
    settle('the test would not let it go');
    const o = await running.outcome;
    expect(o.ending).toBe('spawn-failed');
    expect(o.startError).toBe('the test would not let it go');
    expect(o.stderr.toString()).toContain('skill-mcp: the test would not let it go; the script was not started');
    expect(o.stdout.toString()).toBe('');
    await until('the waiting child is gone', () => gone(child));
  });

  it('a held start cancelled before its hold settles is killed unstarted; a hold that lets go afterwards starts nothing', async () => {
    const { running, settle, child } = await heldRun('echo started');
    running.cancel();
    settle(undefined);
    const o = await running.outcome;
    expect(o.ending).toBe('cancelled');
    expect(o.stdout.toString()).toBe('');
    await until('the waiting child is gone', () => gone(child));
  });

  it('the same spawn through runProcess, with the limits the kernel takes, runs to its end', async () => {
    const o = await runProcess(gated('grep -E "^Max (processes|open files)" /proc/self/limits'), {
      timeoutMs: 30_000,
      killGraceMs: 0,
      drainMs: 1000,
      maxStreamBytes: 1 << 20,
      afterExit: async () => undefined,
    }).outcome;
    expect(o).toMatchObject({ ending: 'exit', exitCode: 0 });
    expect(o.startError).toBeUndefined();
    expect(o.stdout.toString()).toMatch(/Max processes\s+77\s+77/);
    expect(o.stdout.toString()).toMatch(/Max open files\s+99\s+99/);
  });
});
