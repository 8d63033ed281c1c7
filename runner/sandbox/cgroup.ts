/**
 * @module A memory cgroup per run (docs/isolation.md, "Memory"): every page the run's processes
 * touch — private, MAP_SHARED, System V shm, memfd, tmpfs — is charged to the run's group and
 * capped there, which RLIMIT_DATA (private writable memory per process) cannot do. And the group
 * is how the run is ended: every task in it is killed at once, whatever it forked or setsid'd.
 *
 * Where: cgroup v2 when its memory controller can be delegated to the runner's own cgroup
 * (`memory.max`, `memory.swap.max = 0`, `memory.oom.group = 1`, `cgroup.kill`); else the v1
 * memory controller (`memory.limit_in_bytes`, and `memory.memsw.limit_in_bytes` when swap is
 * accounted), with v2's `cgroup.kill` from a controller-less v2 hierarchy on hybrid hosts, else
 * the v1 freezer to hold the tasks still while they are killed. Only a root runner makes groups;
 * the host layout is read once at start and every path here comes from it, so tests run the same
 * code against a temporary folder.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where this runner may make run groups, read at start. */
export interface CgroupHost {
  /** cgroup v2: the runner's own group, and whether its children get the memory controller. */
  v2?: { base: string; memory: boolean };
  /** cgroup v1 memory controller: the runner's own group in it. */
  v1Memory?: string;
  /** cgroup v1 freezer: the runner's own group in it. */
  v1Freezer?: string;
}

/** Parses /proc/self/mountinfo: mount point of each cgroup hierarchy by controller (`''` for v2). */
export function cgroupMounts(mountinfo: string): Map<string, string> {
  const mounts = new Map<string, string>();
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const point = left.split(' ')[4];
    const [fstype, , options] = right.split(' ');
    if (point === undefined) continue;
    if (fstype === 'cgroup2' && !mounts.has('')) mounts.set('', point);
    if (fstype === 'cgroup') for (const opt of (options ?? '').split(',')) if (['memory', 'freezer'].includes(opt)) mounts.set(opt, point);
  }
  return mounts;
}

/** Parses /proc/self/cgroup: this process's group path per controller (`''` for v2). */
export function ownGroups(procCgroup: string): Map<string, string> {
  const groups = new Map<string, string>();
  for (const line of procCgroup.split('\n')) {
    const match = /^\d+:([^:]*):(\/.*)$/.exec(line);
    if (!match) continue;
    for (const name of match[1]!.split(',')) groups.set(name, match[2]!);
  }
  return groups;
}

/** `mount` + the group path, without the trailing slash a root group's `/` would leave. */
function under(mount: string, group: string): string {
  return join(mount, group).replace(/(.)\/+$/, '$1');
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * Finds the groups a root runner can use. `procRoot` and the mount points let tests point it at a
 * fake tree. For v2 it enables the memory controller for the runner's children if it is not yet
 * (moving the runner into a leaf of its own first when its group holds processes, as v2 requires).
 */
export function detectCgroupHost(mountinfo: string, procCgroup: string, pid: number = process.pid): CgroupHost {
  const mounts = cgroupMounts(mountinfo);
  const own = ownGroups(procCgroup);
  const host: CgroupHost = {};
  const v2Mount = mounts.get('');
  if (v2Mount !== undefined && own.has('')) {
    const base = under(v2Mount, own.get('')!);
    host.v2 = { base, memory: enableV2Memory(base, pid) };
  }
  for (const controller of ['memory', 'freezer'] as const) {
    const mount = mounts.get(controller);
    const path = own.get(controller);
    if (mount === undefined || path === undefined) continue;
    const base = under(mount, path);
    if (!existsSync(join(base, 'cgroup.procs'))) continue;
    if (controller === 'memory') host.v1Memory = base;
    else host.v1Freezer = base;
  }
  return host;
}

function enableV2Memory(base: string, pid: number): boolean {
  const has = (): boolean => (read(join(base, 'cgroup.subtree_control')) ?? '').split(/\s+/).includes('memory');
  if (has()) return true;
  if (!(read(join(base, 'cgroup.controllers')) ?? '').split(/\s+/).includes('memory')) return false;
  const enable = (): boolean => {
    try {
      writeFileSync(join(base, 'cgroup.subtree_control'), '+memory');
      return has();
    } catch {
      return false;
    }
  };
  if (enable()) return true;
  // v2 gives controllers only to groups whose parent holds no processes: the runner moves into a
  // leaf of its own (where a systemd unit with Delegate=yes puts it anyway).
  try {
    mkdirSync(join(base, 'skill-mcp-runner'), { recursive: true });
    writeFileSync(join(base, 'skill-mcp-runner', 'cgroup.procs'), String(pid));
  } catch {
    return false;
  }
  return enable();
}

/** What a run group gives, in the words `doctor` and the mechanisms list use. */
export function memoryMechanism(host: CgroupHost | undefined): 'cgroup-v2' | 'cgroup-v1' | undefined {
  if (host?.v2?.memory) return 'cgroup-v2';
  if (host?.v1Memory !== undefined) return 'cgroup-v1';
  return undefined;
}
