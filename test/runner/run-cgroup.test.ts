/**
 * A run's cgroup by its file writes (runner/sandbox/cgroup.ts, run-cgroup.ts), against a temporary
 * folder standing in for cgroupfs: v2 (this CI machine has only v1, so the v2 path is proven
 * here) and v1, what is written where, and how the kill goes. The real v1 groups are exercised
 * by real runs as root (kernel-attacks.test.ts).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { cgroupMounts, detectCgroupHost, memoryMechanism, ownGroups } from '../../runner/sandbox/cgroup.js';
import { makeRunCgroup, runCgroupLimit, sweepRunCgroups } from '../../runner/sandbox/run-cgroup.js';

const dirs: string[] = [];
const temp = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-cgtest-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  vi.restoreAllMocks();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const files =
  (...names: string[]) =>
  (dir: string): void => {
    for (const name of names) writeFileSync(join(dir, name), '');
  };
const read = (path: string): string => readFileSync(path, 'utf8');
const waitFor = async (done: () => boolean): Promise<void> => {
  while (!done()) await new Promise((r) => setImmediate(r));
};

// This machine's layout: v1 controllers plus a controller-less v2 hierarchy (hybrid).
const MOUNTINFO = [
  '30 25 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
  '31 25 0:27 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer',
  '32 25 0:28 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
  '33 25 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu',
].join('\n');
const PROC_CGROUP = '6:freezer:/\n4:memory:/process_api/a05a\n1:cpu:/\n0::/\n';

describe('cgroup host detection', () => {
  it("reads the hierarchies and the runner's own group in each", () => {
    expect([...cgroupMounts(MOUNTINFO)]).toEqual([
      ['memory', '/sys/fs/cgroup/memory'],
      ['freezer', '/sys/fs/cgroup/freezer'],
      ['', '/sys/fs/cgroup/unified'],
    ]);
    expect(ownGroups(PROC_CGROUP).get('memory')).toBe('/process_api/a05a');
    expect(ownGroups(PROC_CGROUP).get('')).toBe('/');
  });

  it("v2: a memory controller already delegated to the runner's group is used", () => {
    const root = temp();
    mkdirSync(join(root, 'svc'));
    writeFileSync(join(root, 'svc', 'cgroup.controllers'), 'cpu memory pids\n');
    writeFileSync(join(root, 'svc', 'cgroup.subtree_control'), 'memory\n');
    const host = detectCgroupHost(`40 25 0:30 / ${root} rw - cgroup2 cgroup2 rw`, '0::/svc\n');
    expect(host.v2).toEqual({ base: join(root, 'svc'), memory: true });
    expect(memoryMechanism(host)).toBe('cgroup-v2');
  });

  it('v2 without the memory controller (hybrid) is not a memory mechanism; v1 memory is', () => {
    const root = temp();
    writeFileSync(join(root, 'cgroup.controllers'), 'hugetlb\n');
    mkdirSync(join(root, 'mem'));
    writeFileSync(join(root, 'mem', 'cgroup.procs'), '');
    const host = detectCgroupHost(
      `40 25 0:30 / ${root} rw - cgroup2 cgroup2 rw\n41 25 0:31 / ${join(root, 'mem')} rw - cgroup cgroup rw,memory`,
      '4:memory:/\n0::/\n',
    );
    expect(host.v2?.memory).toBe(false);
    expect(host.v1Memory).toBe(join(root, 'mem'));
    expect(memoryMechanism(host)).toBe('cgroup-v1');
  });
});

describe('a run cgroup', () => {
  it('v2: memory.max is the cap, swap is off, one OOM kill takes the whole group, and the kill is cgroup.kill (no pid signalled by us)', async () => {
    const base = temp();
    const cap = runCgroupLimit(64 << 20, 8 << 20);
    const group = makeRunCgroup(
      { v2: { base, memory: true } },
      'run-1-ab',
      cap,
      files('memory.max', 'memory.swap.max', 'memory.oom.group', 'memory.events', 'cgroup.kill', 'cgroup.procs'),
    );
    const dir = join(base, 'run-1-ab');
    expect(group.memory).toBe('cgroup-v2');
    expect(group.procs).toEqual([join(dir, 'cgroup.procs')]);
    expect(read(join(dir, 'memory.max'))).toBe(String((64 << 20) + (8 << 20) + (16 << 20)));
    expect(read(join(dir, 'memory.swap.max'))).toBe('0');
    expect(read(join(dir, 'memory.oom.group'))).toBe('1');
    writeFileSync(join(dir, 'cgroup.procs'), '4242\n4243\n');
    const signalled = vi.spyOn(process, 'kill');
    const killing = group.kill();
    await waitFor(() => read(join(dir, 'cgroup.kill')) === '1');
    writeFileSync(join(dir, 'cgroup.procs'), ''); // the kernel empties the group
    expect(await killing).toEqual({ killed: 2, remaining: 0 });
    expect(signalled).not.toHaveBeenCalled();
    expect(group.oomKilled()).toBe(false);
    writeFileSync(join(dir, 'memory.events'), 'low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n');
    expect(group.oomKilled()).toBe(true);
    rmSync(join(dir), { recursive: true }); // stands in for the kernel's rmdir of an empty group
  });

  it('v1: limit and memsw set to the cap, the freezer holds the tasks while each is killed, then thaws', async () => {
    const root = temp();
    mkdirSync(join(root, 'memory'));
    mkdirSync(join(root, 'freezer'));
    const kernel = (dir: string): void =>
      dir.includes('memory')
        ? files('memory.limit_in_bytes', 'memory.memsw.limit_in_bytes', 'memory.oom_control', 'cgroup.procs')(dir)
        : files('freezer.state', 'cgroup.procs')(dir);
    const group = makeRunCgroup({ v1Memory: join(root, 'memory'), v1Freezer: join(root, 'freezer') }, 'run-2-cd', 100 << 20, kernel);
    const mem = join(root, 'memory', 'run-2-cd');
    const frz = join(root, 'freezer', 'run-2-cd');
    expect(group.memory).toBe('cgroup-v1');
    expect(group.procs).toEqual([join(mem, 'cgroup.procs'), join(frz, 'cgroup.procs')]);
    expect(read(join(mem, 'memory.limit_in_bytes'))).toBe(String(100 << 20));
    expect(read(join(mem, 'memory.memsw.limit_in_bytes'))).toBe(String(100 << 20));
    const child = spawn('sleep', ['100'], { stdio: 'ignore' });
    const gone = new Promise((resolve) => child.on('exit', resolve));
    for (const dir of [mem, frz]) writeFileSync(join(dir, 'cgroup.procs'), `${child.pid}\n`);
    const states: string[] = [];
    const killing = group.kill();
    states.push(read(join(frz, 'freezer.state')));
    await gone;
    for (const dir of [mem, frz]) writeFileSync(join(dir, 'cgroup.procs'), '');
    expect(await killing).toEqual({ killed: 1, remaining: 0 });
    expect(child.signalCode).toBe('SIGKILL');
    expect(states[0]).toBe('FROZEN');
    expect(read(join(frz, 'freezer.state'))).toBe('THAWED');
  });

  it('v1 without swap accounting: swappiness 0 (swap is not capped, and docs/isolation.md says so)', () => {
    const root = temp();
    const group = makeRunCgroup(
      { v1Memory: root },
      'run-3-ef',
      1 << 26,
      files('memory.limit_in_bytes', 'memory.swappiness', 'cgroup.procs'),
    );
    expect(read(join(root, 'run-3-ef', 'memory.swappiness'))).toBe('0');
    expect(group.procs).toEqual([join(root, 'run-3-ef', 'cgroup.procs')]);
  });

  it('never takes over an existing group of the same name, and refuses a name with a slash', () => {
    const root = temp();
    mkdirSync(join(root, 'run-4-aa'));
    expect(() => makeRunCgroup({ v1Memory: root }, 'run-4-aa', 1 << 26)).toThrow(/EEXIST/);
    expect(() => makeRunCgroup({ v1Memory: root }, '../x', 1 << 26)).toThrow(/bad cgroup name/);
  });

  it('a kill that cannot empty the group stops at its deadline and reports what is left', async () => {
    const root = temp();
    const group = makeRunCgroup({ v1Memory: root }, 'run-5-bb', 1 << 26, files('memory.limit_in_bytes', 'cgroup.procs'));
    // A pid that is not ours to kill stays listed: the kill gives up, bounded.
    writeFileSync(join(root, 'run-5-bb', 'cgroup.procs'), '999999999\n');
    expect(await group.kill()).toEqual({ killed: 1, remaining: 1 });
  });

  it("at start, a dead runner's run groups are killed (cgroup.kill) and removed; a live runner's and other groups are left", async () => {
    const base = temp();
    const dead = join(base, 'run-999999-0123456789abcdef');
    const live = join(base, `run-${process.pid}-0123456789abcdef`);
    const other = join(base, 'system.slice');
    for (const dir of [dead, live, other]) mkdirSync(dir);
    writeFileSync(join(dead, 'cgroup.kill'), '');
    writeFileSync(join(dead, 'cgroup.procs'), '999998\n');
    // A real kernel empties the group on cgroup.kill and lets rmdir remove it; here the files stand in.
    const swept = sweepRunCgroups({ v2: { base, memory: true } }, (pid) => pid === process.pid);
    await waitFor(() => read(join(dead, 'cgroup.kill')) === '1');
    for (const file of ['cgroup.kill', 'cgroup.procs']) rmSync(join(dead, file));
    expect(await swept).toEqual({ removed: 1, left: 0 });
    expect(readdirSync(base).sort()).toEqual([`run-${process.pid}-0123456789abcdef`, 'system.slice']);
  });

  it('race: a group another runner, starting at the same moment, removes between our listing and our kill is gone, not an error', async () => {
    const base = temp();
    const v2 = join(base, 'run-999997-0123456789abcdef');
    const v1 = join(base, 'run-999996-0123456789abcdef');
    mkdirSync(v2);
    writeFileSync(join(v2, 'cgroup.kill'), '');
    mkdirSync(v1);
    // The other runner's sweep removes each group as ours decides its runner is dead.
    const alive = (pid: number) => {
      rmSync(pid === 999997 ? v2 : v1, { recursive: true, force: true });
      return false;
    };
    expect(await sweepRunCgroups({ v2: { base, memory: true } }, alive)).toEqual({ removed: 0, left: 0 });
    expect(readdirSync(base)).toEqual([]);
  });
});
