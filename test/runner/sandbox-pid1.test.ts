/**
 * A run's sandbox pid 1 is killed with the run (runner/sandbox/process.ts, docs/isolation.md "The
 * sandbox's pid 1"). bubblewrap's child leaves the chain's group for a session of its own a moment
 * before it arms its own death signal; a group kill in that moment left its script running with no
 * time limit (CI saw it at `namespace`). Here a stand-in chain does what bubblewrap does at that
 * moment, with real processes: it starts a process in a session of its own with no death signal
 * and names it on its info fd, as bubblewrap's `--info-fd` does. Through both spawn paths.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SANDBOX_INFO_FD } from '../../runner/sandbox/go-ahead.js';
import { runProcess } from '../../runner/sandbox/process.js';
import type { SpawnSpec } from '../../runner/sandbox/spawn.js';
import { until } from './harness.js';

const temp = realpathSync(mkdtempSync(join(tmpdir(), 'skill-mcp-pid1-')));
afterAll(() => rmSync(temp, { recursive: true, force: true }));
let n = 0;

/** Alive and not a zombie (an orphan may wait for a reaper a moment). */
function alive(pid: number): boolean {
  try {
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/**
 * The stand-in: `setsid sleep` (a session of its own, no death signal, as bubblewrap's child just
 * after its setsid), its pid in `pidFile`; then, once `go` exists, `{"child-pid": N}` on fd 6
 * (N: `named`, or the sleeper) and the chain waits for the sleeper, as bubblewrap's monitor does.
 */
function standIn(opts: { named?: number } = {}) {
  const dir = join(temp, String(n++));
  const pidFile = `${dir}.pid`;
  const go = `${dir}.go`;
  const script = [
    `setsid sleep 1000 ${SANDBOX_INFO_FD}>&- & s=$!`,
    `echo $s > ${pidFile}`,
    `while [ ! -e ${go} ]; do sleep 0.01; done`,
    `printf '{"child-pid": %d}' ${opts.named ?? '$s'} >&${SANDBOX_INFO_FD}`,
    `exec ${SANDBOX_INFO_FD}>&-`,
    'wait',
  ].join('\n');
  const spec: SpawnSpec = {
    command: '/bin/sh',
    args: ['-c', script],
    env: { PATH: '/usr/bin:/bin' },
    cwd: temp,
    envNames: [],
    fds: [],
    infoFd: SANDBOX_INFO_FD,
  };
  return {
    spec,
    sleeper: async (): Promise<number> => {
      expect(await until(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').endsWith('\n'), 20_000), 'the sleeper starts').toBe(
        true,
      );
      return Number(readFileSync(pidFile, 'utf8'));
    },
    letInfoGo: () => writeFileSync(go, ''),
  };
}

const paths = [
  ['posix_spawn', undefined],
  ['child_process', 'node'],
] as const;

describe.each(paths)('the sandbox pid 1, spawned through %s', (_name, force) => {
  const before = process.env['SKILL_MCP_SPAWN'];
  beforeEach(() => {
    if (force === undefined) delete process.env['SKILL_MCP_SPAWN'];
    else process.env['SKILL_MCP_SPAWN'] = force;
  });
  afterEach(() => {
    if (before === undefined) delete process.env['SKILL_MCP_SPAWN'];
    else process.env['SKILL_MCP_SPAWN'] = before;
  });

  it("outside the chain's group, without a death signal: a cancel kills it", async () => {
    const s = standIn();
    s.letInfoGo();
    const proc = runProcess(s.spec, {
      timeoutMs: 60_000,
      killGraceMs: 0,
      drainMs: 200,
      maxStreamBytes: 1 << 20,
      afterExit: async () => undefined,
    });
    const sleeper = await s.sleeper();
    // The info read before the cancel: the chain has closed its info fd.
    expect(await until(() => !existsSync(`/proc/${proc.pid}/fd/${SANDBOX_INFO_FD}`), 20_000), 'the chain closed its info fd').toBe(true);
    await new Promise((r) => setTimeout(r, 50));
    proc.cancel();
    const o = await proc.outcome;
    expect(o.ending).toBe('cancelled');
    expect(await until(() => !alive(sleeper), 20_000), 'the sleeper is killed').toBe(true);
  });

  it('at its timeout, it is killed with the group', async () => {
    const s = standIn();
    s.letInfoGo();
    const proc = runProcess(s.spec, {
      timeoutMs: 500,
      killGraceMs: 0,
      drainMs: 200,
      maxStreamBytes: 1 << 20,
      afterExit: async () => undefined,
    });
    const sleeper = await s.sleeper();
    const o = await proc.outcome;
    expect(o.ending).toBe('timeout');
    expect(await until(() => !alive(sleeper), 20_000), 'the sleeper is killed').toBe(true);
  });

  it('a cancel that comes before the info is read waits for it, then kills the pid 1 it names', async () => {
    const s = standIn();
    const proc = runProcess(s.spec, {
      timeoutMs: 60_000,
      killGraceMs: 0,
      drainMs: 200,
      maxStreamBytes: 1 << 20,
      afterExit: async () => undefined,
    });
    const sleeper = await s.sleeper();
    proc.cancel();
    // A group kill now would leave the sleeper for good: the chain would die before naming it.
    await new Promise((r) => setTimeout(r, 100));
    expect(alive(proc.pid!)).toBe(true);
    s.letInfoGo();
    const o = await proc.outcome;
    expect(o.ending).toBe('cancelled');
    expect(await until(() => !alive(sleeper), 20_000), 'the sleeper is killed').toBe(true);
  });

  it("pid reuse: a pid the info names that is not the chain's child is never signalled", async () => {
    const other = spawn('sleep', ['1000'], { stdio: 'ignore' });
    try {
      const s = standIn({ named: other.pid! });
      s.letInfoGo();
      const proc = runProcess(s.spec, {
        timeoutMs: 60_000,
        killGraceMs: 0,
        drainMs: 200,
        maxStreamBytes: 1 << 20,
        afterExit: async () => undefined,
      });
      const sleeper = await s.sleeper();
      await new Promise((r) => setTimeout(r, 100));
      proc.cancel();
      await proc.outcome;
      await new Promise((r) => setTimeout(r, 100));
      expect(alive(other.pid!)).toBe(true);
      process.kill(sleeper, 'SIGKILL');
    } finally {
      other.kill('SIGKILL');
    }
  });
});
