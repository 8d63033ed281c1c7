/**
 * The workspace's size and file-count caps (SKILL_MCP_RUN_WORKSPACE_BYTES, _FILES), through a real
 * MCP client over stdio and the real runner, at whatever level this machine gives (CI: root and
 * uid 40100, bubblewrap and not). As root the workspace is a tmpfs of the cap's size: a write past
 * it fails with ENOSPC inside the script; otherwise the runner's watcher stops the run (and each
 * file is held to the cap by RLIMIT_FSIZE). Either way the answer says the workspace filled —
 * never silently — and nothing of the run stays mounted. Attack-named tests.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mountsAtOrBelow } from '../../runner/workspace/mount.js';
import { isRoot } from '../levels.js';
import { ERAS, expectNoLeftovers, serve, SUITE_TMP, tempDir, type Served } from './harness.js';
import { callSkillRun, type RunAnswer } from './workspace-calls.js';
import { audit } from './run-skills.js';
import { runFoldersGone, runFoldersIn } from '../scratch-wait.js';

const MIB = 1024 * 1024;
const CAP = 8 * MIB;
const FILES = 200;
/** As root the kernel keeps the cap (a tmpfs per run); otherwise the runner's watcher does. */
const MODE = isRoot ? 'tmpfs' : 'watch';
const ENOSPC = 28;
const EFBIG = 27;

const SCRIPTS: Record<string, string> = {
  // One file, written until the kernel says no (unbuffered: each write is one syscall).
  'scripts/one-huge.py': `n = 0
try:
    with open("huge.bin", "wb", buffering=0) as f:
        while n < 64 * 1024 * 1024:
            n += f.write(b"h" * (1024 * 1024))
    print("wrote", n)
except OSError as e:
    print("refused", e.errno)
`,
  // Empty files, many more than the file cap.
  'scripts/many-small.py': `import os
n = 0
try:
    os.makedirs("many")
    for i in range(5000):
        open("many/%05d" % i, "w").close()
        n += 1
    print("made", n)
except OSError as e:
    print("refused", e.errno)
`,
  // Apparent size 32 MiB (four times the cap, under the 64 MiB per-file limit), one page of real data.
  'scripts/sparse.py': `import os
try:
    with open("sparse.bin", "wb") as f:
        f.truncate(32 * 1024 ** 2)
        f.write(b"x" * 4096)
    st = os.stat("sparse.bin")
    print("made", st.st_size)
except OSError as e:
    print("refused", e.errno)
`,
  // Eight writers at once, each with a file of its own.
  'scripts/writers.py': `import os
kids = []
for k in range(8):
    pid = os.fork()
    if pid == 0:
        n = 0
        try:
            with open("w%d.bin" % k, "wb", buffering=0) as f:
                while n < 64 * 1024 * 1024:
                    n += f.write(b"w" * (256 * 1024))
        except OSError as e:
            os._exit(e.errno)
        os._exit(0)
    kids.append(pid)
print("writers", sorted(os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in kids))
`,
  // Small files, one after another, and it never stops by itself: only the cap (or its timeout) ends it.
  'scripts/keep-writing.py': `import time
n = 0
try:
    for i in range(160):
        with open("part%03d.bin" % i, "wb", buffering=0) as f:
            f.write(b"k" * (1024 * 1024))
        n += 1
        time.sleep(0.02)
    time.sleep(600)
except OSError as e:
    print("refused", e.errno, n)
`,
  // The same writer inside a folder named with a byte that is not valid UTF-8 (read as text, that
  // name did not open again, and the watcher never counted what the folder held).
  'scripts/hidden-writer.py': `import os, time
n = 0
try:
    os.makedirs(b"hide\\xff")
    for i in range(160):
        with open(b"hide\\xff/part%03d.bin" % i, "wb", buffering=0) as f:
            f.write(b"k" * (1024 * 1024))
        n += 1
        time.sleep(0.02)
    time.sleep(600)
except OSError as e:
    print("refused", e.errno, n)
`,
  // Adds MiBs to the workspace its inputs are already in.
  'scripts/append.py': `import sys
n = 0
try:
    with open("out.bin", "wb", buffering=0) as f:
        while n < int(sys.argv[1]) * 1024 * 1024:
            n += f.write(b"a" * (1024 * 1024))
    print("wrote", n)
except OSError as e:
    print("refused", e.errno)
`,
  // Crashes after writing.
  'scripts/crash.py': `import os
open("before.txt", "w").write("x" * 100000)
os.abort()
`,
  // Runs until killed (timeout or cancel), after marking that it started.
  'scripts/hold.py': `import time
open("started", "w").write("yes")
time.sleep(120)
`,
};
const TIMEOUTS: Record<string, number> = { 'scripts/hold.py': 3, 'scripts/keep-writing.py': 60, 'scripts/hidden-writer.py': 60 };

function writeCapSkill(root: string): void {
  const rows = Object.keys(SCRIPTS)
    .map((s) => `    - script: ${s}\n      interpreter: python3\n      timeout: ${TIMEOUTS[s] ?? 60}`)
    .join('\n');
  const files: Record<string, string> = {
    'SKILL.md': `---\nname: capped\ndescription: Scripts that fill their workspace.\nmcp-host:\n  version: 1\n  run:\n${rows}\n---\nRun the scripts.\n`,
    ...SCRIPTS,
  };
  for (const [path, text] of Object.entries(files)) {
    const full = join(root, 'capped', path);
    mkdirSync(dirname(full), { recursive: true, mode: 0o755 });
    writeFileSync(full, text, { mode: 0o644 });
  }
}

let served: Served;
const stateDir = join(SUITE_TMP, 'state');
const scratch = join(SUITE_TMP, 'scratch');

beforeAll(async () => {
  const root = tempDir('workspace-cap');
  writeCapSkill(root);
  // A 3 MiB output budget keeps each answer under the SDK stdio client's 10 MiB line buffer (the
  // watcher's eight writers can leave 64 MiB behind).
  served = await serve(
    {
      SKILLS_DIR: root,
      SKILL_MCP_SCRATCH_DIR: scratch,
      MCP_CONFIRM_MODE: 'auto',
      SKILL_MCP_RUN_OUTPUT_FILES_BYTES: String(3 * MIB),
      SKILL_MCP_RUN_WORKSPACE_BYTES: String(CAP),
      SKILL_MCP_RUN_WORKSPACE_FILES: String(FILES),
    },
    ERAS[1]!,
  );
}, 60_000);
afterEach(async () => {
  // Security: whatever way a run ended, nothing of it is left on the host: its folder goes after
  // its answer (the run holding its slot until then), its tmpfs before its folder.
  expect(await runFoldersGone(scratch)).toEqual([]);
  expect(mountsAtOrBelow(scratch)).toEqual([]);
});
afterAll(async () => {
  await served?.close();
  expect(mountsAtOrBelow(scratch)).toEqual([]);
  await expectNoLeftovers();
});

const runFolders = (): string[] => runFoldersIn(scratch);

function call(args: Record<string, unknown>, signal?: AbortSignal): Promise<RunAnswer> {
  return callSkillRun(served.client, 'capped', args, signal);
}

async function run(args: Record<string, unknown>): Promise<RunAnswer> {
  const first = await call(args);
  expect(first.value['status'], JSON.stringify(first.value)).toBe('confirmation-required');
  return call({ ...args, confirmToken: first.value['confirmToken'] });
}

const exitLine = (answer: RunAnswer): Record<string, unknown> =>
  audit(stateDir).find((l) => l.event === 'run.exit' && l.run_id === answer.value['runId'])!;
const brief = (answer: RunAnswer): string =>
  `${JSON.stringify({ ...answer.value, files: undefined }).slice(0, 1500)}\n${served.stderr().slice(-2000)}`;

describe(`the workspace cap (${MODE === 'tmpfs' ? 'a tmpfs per run: exact' : "the runner's watcher: approximate"})`, () => {
  it('the runner says how it keeps the cap, and a run well under it is not flagged', async () => {
    const answer = await run({ script: 'scripts/append.py', args: ['1'] });
    // Written before the runner's first decided line.
    const start = audit(stateDir).find((l) => l.event === 'runner.start')!;
    expect(start).toMatchObject({ workspace_mode: MODE, workspace_bytes: CAP, workspace_files: FILES });
    expect(start['sandbox']).toContain(MODE === 'tmpfs' ? 'workspace-tmpfs' : 'workspace-watch');
    expect(answer.value, brief(answer)).toMatchObject({ status: 'completed', exitCode: 0, stdout: `wrote ${MIB}\n` });
    expect(answer.value['workspaceFull']).toBeUndefined();
    expect(exitLine(answer)).toMatchObject({ workspace_files: 1 });
    expect(exitLine(answer)['workspace_full']).toBeUndefined();
  });

  it('attack: one huge file written past the cap is stopped at the cap, and the answer says the workspace filled', async () => {
    const answer = await run({ script: 'scripts/one-huge.py' });
    expect(answer.value['workspaceFull'], brief(answer)).toBe(true);
    expect(answer.value['workspaceNote']).toMatch(new RegExp(`cap of ${CAP} bytes \\(SKILL_MCP_RUN_WORKSPACE_BYTES\\)`));
    if (MODE === 'tmpfs') {
      // The kernel refused the write: the script saw ENOSPC and went on to exit by itself.
      expect(answer.value).toMatchObject({ exitCode: 0, stdout: `refused ${ENOSPC}\n` });
      expect(answer.value['workspaceNote']).toMatch(/No space left on device/);
    } else {
      // RLIMIT_FSIZE holds the file to the cap (EFBIG), unless the watcher stopped the run first.
      expect(answer.value['stdout'] === `refused ${EFBIG}\n` || answer.value['signal'] === 'SIGKILL', brief(answer)).toBe(true);
    }
    // Real usage never passed the cap: one file, held to it either way.
    expect(exitLine(answer)['workspace_bytes'] as number).toBeLessThanOrEqual(CAP + 64 * 1024);
    expect(exitLine(answer)).toMatchObject({ workspace_full: 'bytes' });
    // Listed, never dropped: the file is there, past the output budget or with its bytes.
    expect((answer.value['files'] as { path: string }[]).map((f) => f.path)).toEqual(['huge.bin']);
  });

  it('attack: many small files past the file count are refused (tmpfs) or caught (watcher)', async () => {
    const answer = await run({ script: 'scripts/many-small.py' });
    expect(answer.value['workspaceFull'], brief(answer)).toBe(true);
    expect(answer.value['workspaceNote']).toMatch(new RegExp(`cap of ${FILES} files and folders \\(SKILL_MCP_RUN_WORKSPACE_FILES\\)`));
    expect(exitLine(answer)).toMatchObject({ workspace_full: 'files' });
    // tmpfs: the folder and 199 files fit, the next file is ENOSPC.
    if (MODE === 'tmpfs') expect(answer.value['stdout']).toBe(`refused ${ENOSPC}\n`);
  });

  it('attack: a sparse file (32 MiB apparent, one page real) — the cap is on real usage', async () => {
    const answer = await run({ script: 'scripts/sparse.py' });
    expect(answer.value['exitCode'], brief(answer)).toBe(0);
    expect(answer.value['workspaceFull']).toBeUndefined();
    if (MODE === 'tmpfs') {
      // Costs its one page; listed past the output budget by its apparent size, never read.
      expect(answer.value['stdout']).toBe(`made ${32 * MIB}\n`);
      expect((answer.value['files'] as { path: string; size: number; omitted?: string }[])[0]).toMatchObject({
        path: 'sparse.bin',
        size: 32 * MIB,
        omitted: expect.stringMatching(/past the output budget/),
      });
      expect(exitLine(answer)['workspace_bytes'] as number).toBeLessThan(MIB);
    } else {
      // Without a tmpfs each file's size limit is the cap (RLIMIT_FSIZE): a sparse file past it is EFBIG.
      expect(answer.value['stdout']).toBe(`refused ${EFBIG}\n`);
    }
  });

  it('attack: a fork of eight writers fills the workspace; the answer says so', async () => {
    const answer = await run({ script: 'scripts/writers.py' });
    expect(answer.value['workspaceFull'], brief(answer)).toBe(true);
    expect(exitLine(answer)).toMatchObject({ workspace_full: 'bytes' });
    if (MODE === 'tmpfs') {
      // Exact: every writer got ENOSPC, and all eight together never passed the cap.
      expect(answer.value['stdout']).toBe(`writers [${Array(8).fill(ENOSPC).join(', ')}]\n`);
      expect(exitLine(answer)['workspace_bytes'] as number).toBeLessThanOrEqual(CAP);
    } else {
      // Approximate: at most each writer's file held to the cap by RLIMIT_FSIZE (docs/isolation.md).
      expect(exitLine(answer)['workspace_bytes'] as number).toBeLessThanOrEqual(8 * CAP + MIB);
    }
  });

  it('attack: a writer that keeps going in many small files is refused (tmpfs) or stopped by the watcher', async () => {
    const answer = await run({ script: 'scripts/keep-writing.py' });
    expect(answer.value['timedOut'], brief(answer)).toBe(false);
    expect(answer.value['workspaceFull']).toBe(true);
    if (MODE === 'tmpfs') {
      expect(answer.value).toMatchObject({ exitCode: 0, stdout: expect.stringMatching(new RegExp(`^refused ${ENOSPC} [0-8]\\n$`)) });
    } else {
      // Nothing but the watcher ends this script before its timeout.
      expect(answer.value).toMatchObject({ exitCode: null, signal: 'SIGKILL', status: 'completed' });
      expect(answer.value['workspaceNote']).toMatch(/^the run was stopped: its workspace went past its cap/);
      expect(exitLine(answer)).toMatchObject({ ended: 'workspace-full' });
    }
  });

  it('attack: the same writer inside a folder whose name is not valid UTF-8 is refused (tmpfs) or stopped by the watcher all the same', async () => {
    const answer = await run({ script: 'scripts/hidden-writer.py' });
    expect(answer.value['timedOut'], brief(answer)).toBe(false);
    expect(answer.value['workspaceFull']).toBe(true);
    expect(exitLine(answer)).toMatchObject({ workspace_full: 'bytes' });
    if (MODE === 'tmpfs') {
      expect(answer.value).toMatchObject({ exitCode: 0, stdout: expect.stringMatching(new RegExp(`^refused ${ENOSPC} [0-8]\\n$`)) });
    } else {
      expect(answer.value).toMatchObject({ exitCode: null, signal: 'SIGKILL', status: 'completed' });
      expect(exitLine(answer)).toMatchObject({ ended: 'workspace-full' });
      // Stopped near the cap, not after the 160 MiB it would write.
      expect(exitLine(answer)['workspace_bytes'] as number).toBeLessThan(4 * CAP);
    }
    // What the folder holds is listed, escaped and not read.
    const files = answer.value['files'] as { path: string; omitted?: string }[];
    expect(files[0]).toMatchObject({ path: 'hide\\xff', omitted: expect.stringMatching(/^a folder whose name is not valid UTF-8/) });
    expect(
      files
        .slice(1)
        .every((f) => f.path.startsWith('hide\\xff/part') && /^in a folder whose name is not valid UTF-8/.test(f.omitted ?? '')),
    ).toBe(true);
  });

  it('the inputs count against the cap: 6 MiB in and 3 MiB written fills an 8 MiB workspace', async () => {
    const input = [{ path: 'in.bin', base64: Buffer.alloc(6 * MIB, 1).toString('base64') }];
    const answer = await run({ script: 'scripts/append.py', args: ['3'], files: input });
    expect(answer.value['workspaceFull'], brief(answer)).toBe(true);
    if (MODE === 'tmpfs') expect(answer.value['stdout']).toBe(`refused ${ENOSPC}\n`);
    // And 6 MiB in with 1 MiB written does not.
    const under = await run({ script: 'scripts/append.py', args: ['1'], files: input });
    expect(under.value, brief(under)).toMatchObject({ exitCode: 0, stdout: `wrote ${MIB}\n` });
    expect(under.value['workspaceFull']).toBeUndefined();
  });

  it('attack: input files larger than the workspace are refused before anything runs', async () => {
    const before = audit(stateDir).filter((l) => l.event === 'run.accept').length;
    const big = await call({
      script: 'scripts/append.py',
      args: ['1'],
      files: [{ path: 'big.bin', base64: Buffer.alloc(CAP + 1).toString('base64') }],
    });
    expect(big.isError).toBe(true);
    expect(big.value['error']).toMatchObject({
      code: 'TOO_LARGE',
      message: expect.stringMatching(/more than the 8388608 a run's workspace holds \(SKILL_MCP_RUN_WORKSPACE_BYTES\); nothing was run/),
    });
    // More entries than the file cap: 201 files.
    const many = Array.from({ length: FILES + 1 }, (_, i) => ({ path: `f${i}.txt`, text: 'x' }));
    const counted = await call({ script: 'scripts/append.py', args: ['1'], files: many });
    expect(counted.isError).toBe(true);
    expect(counted.value['error']).toMatchObject({
      code: 'TOO_LARGE',
      message: expect.stringMatching(/201 entries in the workspace .*SKILL_MCP_RUN_WORKSPACE_FILES\); nothing was run/),
    });
    expect(audit(stateDir).filter((l) => l.event === 'run.accept').length).toBe(before);
  });
});

describe('nothing of a run stays mounted, on any way out', () => {
  it('a script that crashes: no mount, no folder', async () => {
    const answer = await run({ script: 'scripts/crash.py' });
    // SIGABRT, or (as pid 1 of its namespace, where abort() ends in a fault) the sandbox's 128+signal.
    expect(answer.value['exitCode'] !== 0 || answer.value['signal'] !== null, brief(answer)).toBe(true);
    expect(answer.value['workspaceFull']).toBeUndefined();
    expect((answer.value['files'] as { path: string }[]).map((f) => f.path)).toEqual(['before.txt']);
  });

  it('a timeout: the workspace was a capped tmpfs while it ran (root), and is gone after', async () => {
    const pending = run({ script: 'scripts/hold.py' });
    const deadline = Date.now() + 30_000;
    const started = (): string | undefined => runFolders().find((f) => existsSync(join(scratch, f, 'work', 'started')));
    while (started() === undefined && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
    const folder = started();
    expect(folder).toBeDefined();
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .filter((l) => l.includes(`/${folder}/work `));
    if (MODE === 'tmpfs') {
      expect(mounts).toHaveLength(1);
      // Per mount nosuid,nodev (exec stays allowed); the tmpfs sized to the cap, one inode more than the file cap (its root), the run's.
      expect(mounts[0]).toMatch(/\/work rw,nosuid,nodev,\S* - tmpfs skill-mcp-work rw,size=8192k,nr_inodes=201,mode=700,uid=\d+,gid=\d+$/);
    } else {
      expect(mounts).toEqual([]);
    }
    const answer = await pending;
    expect(answer.value).toMatchObject({ timedOut: true });
  }, 120_000);

  it('a cancel: no mount, no folder', async () => {
    const first = await call({ script: 'scripts/hold.py' });
    const aborter = new AbortController();
    const pending = call({ script: 'scripts/hold.py', confirmToken: first.value['confirmToken'] }, aborter.signal).catch(
      (error: unknown) => error,
    );
    const deadline = Date.now() + 30_000;
    const started = (): boolean => runFolders().some((f) => existsSync(join(scratch, f, 'work', 'started')));
    while (!started() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(started()).toBe(true);
    aborter.abort();
    await pending;
    const exit = (): Record<string, unknown> | undefined =>
      audit(stateDir).find((l) => l.event === 'run.exit' && l['ended'] === 'cancelled');
    while (exit() === undefined && Date.now() < deadline + 30_000) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(exit()).toBeDefined();
    expect(await runFoldersGone(scratch)).toEqual([]);
  }, 120_000);
});
