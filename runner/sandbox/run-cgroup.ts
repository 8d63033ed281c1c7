/**
 * @module One run's cgroup(s) (docs/isolation.md, "Memory" and "Reaping"): made before the spawn
 * with the run's memory cap, entered by the first process of the spawn chain (so the script and
 * everything it starts is inside before any of it runs), killed whole after the run, removed.
 *
 * The kill is bounded ({@link REAP_DEADLINE_MS}) and never by a pid read from anywhere but the
 * group itself, with the tasks held still first where the host allows it: `cgroup.kill` (v2)
 * kills atomically in the kernel; the v1 freezer stops the tasks so none can fork or exit (and
 * free its pid for reuse) between reading the list and the kill.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SHM_BYTES } from './bwrap.js';
import type { CgroupHost } from './cgroup.js';

/**
 * The cap of a run's group: its memory cap plus its RAM-backed /tmp and /dev/shm, whose pages are
 * charged to the group too. The per-process RLIMIT_DATA stays as well.
 */
export function runCgroupLimit(memoryBytes: number, tmpBytes: number): number {
  return memoryBytes + tmpBytes + SHM_BYTES;
}

/** How long the kill may take before the run is reported with leftovers (audited) and let go. */
export const REAP_DEADLINE_MS = 2000;
const POLL_MS = 10;

export interface RunCgroup {
  /** `cgroup.procs` files the first process writes its pid into, in this order. */
  procs: string[];
  /** Which mechanism caps the run's memory. */
  memory: 'cgroup-v2' | 'cgroup-v1';
  /** Kills every task of the run; how many were found, and how many were still there at the deadline. */
  kill(): Promise<{ killed: number; remaining: number }>;
  /** Whether the kernel's OOM killer acted inside the group. */
  oomKilled(): boolean;
  /** Removes the groups (after kill); false when one could not be removed (it still has tasks). */
  remove(): boolean;
}

function pidsIn(dir: string): number[] {
  try {
    return readFileSync(join(dir, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter((l) => /^\d+$/.test(l))
      .map(Number);
  } catch {
    return [];
  }
}

function counter(text: string | undefined, name: string): number {
  const match = new RegExp(`^${name} (\\d+)$`, 'm').exec(text ?? '');
  return match ? Number(match[1]) : 0;
}

function readOr(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `done()` or the deadline; whether it got there. */
async function until(deadline: number, done: () => boolean): Promise<boolean> {
  while (!done()) {
    if (Date.now() >= deadline) return false;
    await sleep(POLL_MS);
  }
  return true;
}

/**
 * Makes the groups of one run, capped at `limitBytes` (memory and swap together). Throws when the
 * host said it could and now cannot: the caller refuses the run rather than run it uncapped.
 */
export function makeRunCgroup(
  host: CgroupHost,
  name: string,
  limitBytes: number,
  kernel: (dir: string) => void = () => undefined,
): RunCgroup {
  if (!/^[A-Za-z0-9_.-]+$/.test(name)) throw new Error(`bad cgroup name ${JSON.stringify(name)}`);
  const made: string[] = [];
  const mk = (base: string): string => {
    const dir = join(base, name);
    // Security: never an existing group (EEXIST): one made by someone else would not be ours to fill.
    mkdirSync(dir);
    made.push(dir);
    kernel(dir); // tests: what cgroupfs does on mkdir (the control files appear)
    return dir;
  };
  try {
    // Security: the limit covers every page charged to the group, shared memory and tmpfs included.
    if (host.v2?.memory) {
      const dir = mk(host.v2.base);
      writeFileSync(join(dir, 'memory.max'), String(limitBytes));
      // Swap off: a run cannot push the host into swap past its cap.
      if (existsSync(join(dir, 'memory.swap.max'))) writeFileSync(join(dir, 'memory.swap.max'), '0');
      // One OOM kill takes the whole run, not one process of it while the rest carries on.
      if (existsSync(join(dir, 'memory.oom.group'))) writeFileSync(join(dir, 'memory.oom.group'), '1');
      return handle({
        procDirs: [dir],
        memory: 'cgroup-v2',
        killDir: dir,
        listDir: dir,
        oomText: () => readOr(join(dir, 'memory.events')),
        made,
      });
    }
    const memDir = mk(host.v1Memory!);
    writeFileSync(join(memDir, 'memory.limit_in_bytes'), String(limitBytes));
    // memsw counts memory + swap: the same number means no swap beyond the cap. Without swap
    // accounting (memsw absent) swap is not capped; swappiness 0 keeps the group out of it.
    if (existsSync(join(memDir, 'memory.memsw.limit_in_bytes')))
      writeFileSync(join(memDir, 'memory.memsw.limit_in_bytes'), String(limitBytes));
    else if (existsSync(join(memDir, 'memory.swappiness'))) writeFileSync(join(memDir, 'memory.swappiness'), '0');
    const procs = [memDir];
    let killDir: string | undefined;
    let freezer: string | undefined;
    // A v2 hierarchy without controllers (hybrid hosts) still has cgroup.kill.
    if (host.v2 && existsSync(join(host.v2.base, 'cgroup.procs'))) {
      try {
        killDir = mk(host.v2.base);
        if (!existsSync(join(killDir, 'cgroup.kill'))) killDir = undefined;
        else procs.push(killDir);
      } catch {
        killDir = undefined;
      }
    }
    if (killDir === undefined && host.v1Freezer !== undefined) {
      freezer = mk(host.v1Freezer);
      procs.push(freezer);
    }
    return handle({
      procDirs: procs,
      memory: 'cgroup-v1',
      killDir,
      listDir: freezer ?? memDir,
      oomText: () => readOr(join(memDir, 'memory.oom_control')),
      made,
      freezer,
    });
  } catch (error) {
    for (const dir of made.reverse()) {
      try {
        rmdirSync(dir);
      } catch {
        // left for the next start's clean-up
      }
    }
    throw error;
  }
}

/** A made run group, as its handle needs it: where its tasks are listed and killed, how its OOM kills are read, what was made. */
interface GroupDirs {
  procDirs: string[];
  memory: RunCgroup['memory'];
  killDir: string | undefined;
  listDir: string;
  oomText: () => string | undefined;
  made: string[];
  freezer?: string | undefined;
}

function handle(group: GroupDirs): RunCgroup {
  const { procDirs, memory, killDir, listDir, oomText, made, freezer } = group;
  return {
    procs: procDirs.map((d) => join(d, 'cgroup.procs')),
    memory,
    async kill() {
      const deadline = Date.now() + REAP_DEADLINE_MS;
      const dirs = [...new Set(procDirs)];
      const all = (): number[] => [...new Set(dirs.flatMap(pidsIn))];
      const found = all().length;
      if (found === 0) return { killed: 0, remaining: 0 };
      if (killDir !== undefined) {
        // Security: the kernel kills every task of the group at once; no pid is read by us.
        writeFileSync(join(killDir, 'cgroup.kill'), '1');
      } else {
        if (freezer !== undefined) {
          // Frozen tasks cannot fork or exit, so no pid read below can be freed and reused.
          writeFileSync(join(freezer, 'freezer.state'), 'FROZEN');
          await until(deadline, () => (readOr(join(freezer, 'freezer.state')) ?? '').trim() === 'FROZEN');
        }
        for (const pid of pidsIn(listDir)) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // gone already
          }
        }
        if (freezer !== undefined) writeFileSync(join(freezer, 'freezer.state'), 'THAWED');
      }
      // Without a freezer a task forked between the read and the kill is caught by the next round.
      await until(deadline, () => {
        if (killDir === undefined && freezer === undefined)
          for (const pid of pidsIn(listDir))
            try {
              process.kill(pid, 'SIGKILL');
            } catch {
              /* gone */
            }
        return all().length === 0;
      });
      return { killed: found, remaining: all().length };
    },
    oomKilled() {
      const text = oomText();
      return counter(text, 'oom_kill') > 0 || counter(text, 'under_oom') > 0;
    },
    remove() {
      let ok = true;
      for (const dir of [...made].reverse()) {
        try {
          rmdirSync(dir);
        } catch {
          ok = false;
        }
      }
      return ok;
    },
  };
}

/** Kills a group's tasks: `cgroup.kill` (v2), else each task. False when the group is gone. */
function killGroup(dir: string): boolean {
  try {
    // r+: never creates the file (a v1 group has none).
    writeFileSync(join(dir, 'cgroup.kill'), '1', { flag: 'r+' });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    if (!existsSync(dir)) return false;
  }
  for (const pid of pidsIn(dir))
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  return true;
}

/** The name runs' groups get (the run's folder name, `run-<runner pid>-<id>`). */
const RUN_GROUP = /^run-([1-9][0-9]{0,9})-[0-9a-f]{16}$/;

/**
 * At start: the groups a runner that died (SIGKILL, power loss of its process) left behind — their
 * tasks killed, the groups removed. Only groups named like a run whose runner pid is not alive.
 * Returns how many groups were removed and how many could not be.
 */
export async function sweepRunCgroups(host: CgroupHost, alive: (pid: number) => boolean): Promise<{ removed: number; left: number }> {
  let removed = 0;
  let left = 0;
  const bases = [host.v2?.base, host.v1Memory, host.v1Freezer].filter((b): b is string => b !== undefined);
  for (const base of bases) {
    let names: string[];
    try {
      names = readdirSync(base);
    } catch {
      continue;
    }
    for (const name of names) {
      const match = RUN_GROUP.exec(name);
      if (!match || alive(Number(match[1]))) continue;
      const dir = join(base, name);
      // Another runner starting at the same moment sweeps the same groups: one it removed between
      // our listing and our kill or rmdir is gone, not an error (it made a starting runner exit 1).
      if (!killGroup(dir)) continue;
      await until(Date.now() + REAP_DEADLINE_MS, () => pidsIn(dir).length === 0);
      try {
        rmdirSync(dir);
        removed += 1;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') left += 1;
      }
    }
  }
  return { removed, left };
}
