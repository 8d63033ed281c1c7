/**
 * A run's spawn (runner/sandbox/posix-spawn.ts): through libc's posix_spawn where it is there, else
 * Node's child_process. Every case runs through both paths and must come out the same: the exit
 * code or signal, the streams, stdin, the extra fds, the working folder, the environment given
 * whole, the child in its own session with default signals — and no runner fd in the child.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  decodeWaitStatus,
  loadPosixSpawn,
  onSpawnFallback,
  probePosixSpawn,
  spawnFallbackCount,
  type PosixSpawner,
} from '../../runner/sandbox/posix-spawn.js';
import { loadLibc } from '../../shared/libc.js';
import { runProcess } from '../../runner/sandbox/process.js';
import type { SpawnSpec } from '../../runner/sandbox/spawn.js';

const temp = realpathSync(mkdtempSync(join(tmpdir(), 'skill-mcp-posix-spawn-')));
afterAll(() => rmSync(temp, { recursive: true, force: true }));
const PATH = '/usr/bin:/bin';

function spec(command: string, args: string[], extra: Partial<SpawnSpec> = {}): SpawnSpec {
  return { command, args, env: { PATH }, cwd: temp, envNames: [], fds: [], ...extra };
}

function run(s: SpawnSpec) {
  return runProcess(s, { timeoutMs: 30_000, killGraceMs: 1000, drainMs: 2000, maxStreamBytes: 1 << 20, afterExit: async () => undefined })
    .outcome;
}

const sh = (script: string, extra: Partial<SpawnSpec> = {}): SpawnSpec => spec('/bin/sh', ['-c', script], extra);

// koffi is an optional dependency: without it the runner spawns through Node only, and says so nowhere
// else than here — this test names it.
const posixAvailable = loadPosixSpawn() !== undefined;

describe('the posix_spawn path is there', () => {
  it.skipIf(process.platform !== 'linux')('on Linux with koffi, runs go through posix_spawn; SKILL_MCP_SPAWN=node turns it off', () => {
    expect(posixAvailable).toBe(true);
    expect(loadPosixSpawn({ SKILL_MCP_SPAWN: 'node' })).toBeUndefined();
    expect(probePosixSpawn({ SKILL_MCP_SPAWN: 'node' })).toEqual({ why: 'SKILL_MCP_SPAWN=node' });
  });

  it.skipIf(!posixAvailable)(
    "a spawn posix_spawn cannot set up (its pipes would sit below the child's fds) goes to child_process, is said and counted, and still runs",
    async () => {
      const heard: [string, number][] = [];
      onSpawnFallback((why, count) => heard.push([why, count]));
      try {
        const before = spawnFallbackCount();
        // 200 fds in the child: every pipe the runner makes is numbered below 203.
        const wide = sh('exit 4', { fds: Array.from({ length: 200 }, () => undefined) });
        const direct = loadPosixSpawn()!.spawn(wide);
        expect(direct).toEqual({ fallback: expect.stringMatching(/^a pipe got fd \d+, at or below the child's fd 202$/) });
        const o = await run(wide);
        expect(o).toMatchObject({ exitCode: 4, signal: null });
        expect(spawnFallbackCount()).toBe(before + 1);
        expect(heard).toEqual([[expect.stringContaining("at or below the child's fd 202"), before + 1]]);
      } finally {
        onSpawnFallback(undefined);
      }
    },
  );

  it.skipIf(!posixAvailable)(
    'fault: no fd left for a pipe (EMFILE) — the spawn is given up before posix_spawn, closing what it made, and the reason names the errno',
    () => {
      const libc = loadLibc();
      if (!libc.ok) throw new Error('koffi loads (posixAvailable said so)');
      const getrlimit = libc.libc.func('int getrlimit(int resource, _Out_ uint64_t *limits)') as (r: number, l: bigint[]) => number;
      const setrlimit = libc.libc.func('int setrlimit(int resource, uint64_t *limits)') as (r: number, l: bigint[]) => number;
      const RLIMIT_NOFILE = 7;
      const saved = [0n, 0n];
      expect(getrlimit(RLIMIT_NOFILE, saved)).toBe(0);
      const open = (): Set<number> => new Set(readdirSync('/proc/self/fd').map(Number));
      const before = open();
      // The soft limit just above the two lowest free fd numbers: the first pipe2 (stdin's) takes
      // both, the next finds no fd left. Nothing between the two setrlimit calls yields to the event loop.
      const free: number[] = [];
      for (let fd = 0; free.length < 2; fd += 1) if (!before.has(fd)) free.push(fd);
      expect(setrlimit(RLIMIT_NOFILE, [BigInt(free[1]! + 1), saved[1]!])).toBe(0);
      let made: ReturnType<PosixSpawner['spawn']>;
      try {
        made = loadPosixSpawn()!.spawn(sh('exit 0', { stdin: Buffer.from('x'), fds: [Buffer.from('y')] }));
      } finally {
        expect(setrlimit(RLIMIT_NOFILE, saved)).toBe(0);
      }
      expect(made).toEqual({ fallback: 'a pipe could not be made (EMFILE)' });
      // Nothing it made is left open: the pipe made before the one that failed is closed again.
      expect([...open()].filter((fd) => !before.has(fd))).toEqual([]);
    },
  );

  it('decodes wait statuses as Node reports them', () => {
    expect(decodeWaitStatus(3 << 8)).toEqual({ code: 3, signal: null });
    expect(decodeWaitStatus(0)).toEqual({ code: 0, signal: null });
    expect(decodeWaitStatus(9)).toEqual({ code: null, signal: 'SIGKILL' });
    expect(decodeWaitStatus(15 | 0x80)).toEqual({ code: null, signal: 'SIGTERM' }); // core dumped
  });
});

const paths = [
  ['posix_spawn', undefined],
  ['child_process', 'node'],
] as const;

describe.each(paths)('spawned through %s', (_name, force) => {
  const before = process.env['SKILL_MCP_SPAWN'];
  const use = (): void => {
    if (force === undefined) delete process.env['SKILL_MCP_SPAWN'];
    else process.env['SKILL_MCP_SPAWN'] = force;
  };
  afterEach(() => {
    if (before === undefined) delete process.env['SKILL_MCP_SPAWN'];
    else process.env['SKILL_MCP_SPAWN'] = before;
  });
  const skip = force === undefined && !posixAvailable;

  it.skipIf(skip)('exit code, stdout and stderr', async () => {
    use();
    const o = await run(sh('printf out; printf err >&2; exit 3'));
    expect(o).toMatchObject({ exitCode: 3, signal: null, ending: 'exit' });
    expect(o.stdout.toString()).toBe('out');
    expect(o.stderr.toString()).toBe('err');
  });

  it.skipIf(skip)('a death by signal is reported by its name', async () => {
    use();
    const o = await run(sh('kill -TERM $$'));
    expect(o).toMatchObject({ exitCode: null, signal: 'SIGTERM' });
  });

  it.skipIf(skip)('stdin holds the bytes given; without them it is /dev/null', async () => {
    use();
    const bytes = Buffer.from('line one\nline two\n');
    expect((await run(spec('/bin/cat', [], { stdin: bytes }))).stdout).toEqual(bytes);
    expect((await run(sh('readlink /proc/self/fd/0'))).stdout.toString().trim()).toBe('/dev/null');
  });

  it.skipIf(skip)('fds 3, 4, … hold their bytes; a slot given none is not open', async () => {
    use();
    const o = await run(
      sh('cat <&4; if [ -e /proc/self/fd/3 ]; then echo " 3 open"; else echo " 3 closed"; fi', {
        fds: [undefined, Buffer.from('filter-bytes')],
      }),
    );
    expect(o.stdout.toString()).toBe('filter-bytes 3 closed\n');
  });

  it.skipIf(skip)("attack: the runner's own files do not reach the child (Node opens them close-on-exec)", async () => {
    use();
    const held = openSync(join(temp, 'runner-file'), 'w');
    try {
      const o = await run(sh(`ls -l /proc/$$/fd`));
      expect(o.stdout.toString()).not.toContain('runner-file');
    } finally {
      closeSync(held);
    }
  });

  // child_process (libuv) closes nothing itself: an fd the runner inherited without close-on-exec
  // would pass on there, which is why posix_spawn closes every fd above the child's own.
  it.skipIf(force !== undefined || !posixAvailable || !loadPosixSpawn()?.closesInherited)(
    'attack: an fd the runner inherited without close-on-exec does not reach the child',
    async () => {
      use();
      const libc = loadLibc();
      if (!libc.ok) throw libc.error;
      const dup = libc.libc.func('int dup(int fd)');
      const close = libc.libc.func('int close(int fd)');
      const held = openSync(join(temp, 'inherited-file'), 'w');
      const leaky = dup(held); // dup: no close-on-exec on the copy
      try {
        expect(leaky).toBeGreaterThan(2);
        const o = await run(sh('ls /proc/$$/fd', { fds: [undefined, Buffer.from('x')] }));
        expect(o.stdout.toString().split('\n').filter(Boolean).sort()).toEqual(['0', '1', '2', '4']);
      } finally {
        close(leaky);
        closeSync(held);
      }
    },
  );

  it.skipIf(skip)("the working folder, and the environment exactly as given (nothing of the runner's)", async () => {
    use();
    const o = await run(spec('/usr/bin/env', [], { env: { ONLY: 'this', PATH } }));
    expect(o.stdout.toString().split('\n').filter(Boolean).sort()).toEqual([`PATH=${PATH}`, 'ONLY=this'].sort());
    expect((await run(spec('/bin/pwd', ['-P']))).stdout.toString().trim()).toBe(temp);
  });

  it.skipIf(skip)(
    'security: the child leads its own session and group, with no signal ignored or blocked (Node ignores SIGPIPE)',
    async () => {
      use();
      // Read by the spawned program itself: a shell blocks every signal for a moment while it forks,
      // so a shell's status read by its own child can show that instead of what the spawn gave.
      const stat = (await run(spec('/bin/cat', ['/proc/self/stat']))).stdout.toString();
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const pid = stat.split(' ')[0];
      expect(fields[2]).toBe(pid); // process group
      expect(fields[3]).toBe(pid); // session
      const masks = (await run(spec('/bin/grep', ['-E', '^Sig(Ign|Blk):', '/proc/self/status']))).stdout.toString().trim().split('\n');
      expect(masks).toEqual(['SigBlk:\t0000000000000000', 'SigIgn:\t0000000000000000']);
    },
  );

  it.skipIf(skip)('a command that cannot be started is spawn-failed, and the call returns', async () => {
    use();
    const o = await run(spec(join(temp, 'no-such-program'), []));
    expect(o.ending).toBe('spawn-failed');
    expect(o.exitCode).toBeNull();
    expect(o.startError).toBe("the run's first program could not be started (ENOENT)");
    expect(o.stderr.toString()).toBe("skill-mcp: the run's first program could not be started (ENOENT); the script was not started\n");
  });

  it.skipIf(skip)('twenty children at once are each reaped with their own code', async () => {
    use();
    const codes = Array.from({ length: 20 }, (_, i) => i);
    const outcomes = await Promise.all(codes.map((code) => run(sh(`exit ${code}`))));
    expect(outcomes.map((o) => o.exitCode)).toEqual(codes);
  });

  it.skipIf(skip)('children Node spawns itself are still reaped by Node alongside', async () => {
    use();
    await run(sh('exit 0'));
    const code = await new Promise<number | null>((resolve) => spawn('/bin/sh', ['-c', 'exit 7']).on('exit', resolve));
    expect(code).toBe(7);
  });
});
