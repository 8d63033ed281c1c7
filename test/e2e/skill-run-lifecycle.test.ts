/**
 * The one-bin, two-process launch under stress, as a client sees it (both eras): the runner killed
 * between runs and during one, a client cancelling a long run, progress while a run lasts. The
 * front must survive all of it, the guard must bring the runner back and say so, and no script
 * process may outlive its run.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ERAS, callTool, expectNoLeftovers, processesNaming, serve, skillList, tempDir, type Served } from './harness.js';
import { askToken, awaitAudit, childrenOf, cmdline, refusal, reported, writeRunSkills } from './run-skills.js';

let root: string;
beforeAll(() => {
  root = writeRunSkills();
});
afterAll(expectNoLeftovers);

/** The front's runner, found as the front's guard's child (the runner starts when first needed). */
function runnerPid(frontPid: number): number {
  const guard = childrenOf(frontPid).find((pid) => cmdline(pid).includes('runner-guard'));
  if (guard === undefined) throw new Error('the front has no runner-guard child');
  const runner = childrenOf(guard).find((pid) => / runner --socket /.test(cmdline(pid)));
  if (runner === undefined) throw new Error('the guard has no runner child');
  return runner;
}

/**
 * A marker for one test's sleep run, passed in its argv (sleep.js ignores it), so the scan below
 * finds that run's processes only — never a sleeper of another test or test file, which may end
 * at any moment.
 */
function sleepMarker(): string {
  return `mark-${randomBytes(8).toString('hex')}`;
}

/** Processes of the sleep run carrying `marker` (the sandbox's own process names its argv too). */
function sleepers(marker: string): { pid: number; cmdline: string }[] {
  return processesNaming(marker).filter((p) => p.cmdline.includes('sleep.js'));
}

/**
 * Waits until no process of the sleep run carrying `marker` remains. What is left at the deadline
 * comes with what the kernel says of it (state, parent, namespaces' pids, uids, cgroups), so a
 * failure shows how the process escaped, not only that it did.
 */
async function sleepersGone(marker: string, withinMs = 20_000): Promise<{ pid: number; cmdline: string; proc?: string }[]> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const left = sleepers(marker);
    if (left.length === 0) return left;
    if (Date.now() > deadline) return left.map((p) => ({ ...p, proc: procReport(p.pid) }));
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function procReport(pid: number): string {
  const read = (name: string): string => {
    try {
      return readFileSync(`/proc/${pid}/${name}`, 'utf8');
    } catch (error) {
      return `(${(error as NodeJS.ErrnoException).code})`;
    }
  };
  const status = read('status')
    .split('\n')
    .filter((l) => /^(State|PPid|NSpid|NSsid|NSpgid|Uid|SigPnd|ShdPnd|SigBlk|SigIgn):/.test(l));
  return [...status, `cgroup: ${read('cgroup').trim().split('\n').join(' | ')}`, `wchan: ${read('wchan')}`].join('; ');
}

const isRoot = process.getuid?.() === 0;

describe('the one-bin launch started as root', () => {
  // Needs root: the privilege split only happens when the launcher starts as root (CI does).
  test.skipIf(!isRoot)(
    'the front serves as uid 61183 with a cleared environ; the guard and the runner keep root; the runner clears its environ too',
    async () => {
      const secret = 'e2e-secret-value-only-for-the-runner';
      const served = await serve({ SKILLS_DIR: root, E2E_SECRET: secret, SKILL_MCP_STATE_DIR: join(tempDir('state'), 'state') }, ERAS[0]!);
      try {
        await skillList(served.client); // wakes the runner
        const uids = (pid: number): string =>
          /^Uid:\s+(.*)$/m
            .exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]!
            .split(/\s+/)
            .join(' ');
        const runner = runnerPid(served.pid);
        const guard = childrenOf(served.pid).find((pid) => cmdline(pid).includes('runner-guard'))!;
        expect(uids(served.pid)).toBe('61183 61183 61183 61183');
        expect(uids(guard)).toBe('0 0 0 0');
        expect(uids(runner)).toBe('0 0 0 0');
        expect(readFileSync(`/proc/${served.pid}/environ`, 'latin1')).not.toContain(secret);
        expect(readFileSync(`/proc/${runner}/environ`, 'latin1')).not.toContain(secret);
      } finally {
        await served.close();
      }
    },
  );
});

describe('no orphans', () => {
  test('a front killed with SIGKILL takes its guard and runner with it (the guard sees its pipe close)', async () => {
    const served = await serve({ SKILLS_DIR: root, SKILL_MCP_STATE_DIR: join(tempDir('state'), 'state') }, ERAS[0]!);
    await skillList(served.client); // wakes the runner
    const runner = runnerPid(served.pid);
    const guard = childrenOf(served.pid).find((pid) => cmdline(pid).includes('runner-guard'))!;
    process.kill(served.pid, 'SIGKILL');
    const deadline = Date.now() + 20_000;
    while ((cmdline(guard) !== '' || cmdline(runner) !== '') && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 25));
    expect(cmdline(guard)).toBe('');
    expect(cmdline(runner)).toBe('');
    await served.close().catch(() => undefined);
  });
});

describe.each(ERAS)('runner and run lifecycle, $name', (era) => {
  let served: Served;
  let stateDir: string;

  /** Phase 1 for `script` with `args`; returns the arguments of phase 2. */
  const approved = async (script: string, args: string[]) => {
    const preview = await askToken(served.client, { name: 'reporter', script, args });
    return { name: 'reporter', script, args, confirmToken: preview.confirmToken };
  };

  beforeAll(async () => {
    stateDir = join(tempDir('state'), 'state');
    served = await serve(
      { SKILLS_DIR: root, SKILL_MCP_STATE_DIR: stateDir, SKILL_MCP_KILL_GRACE_MS: '500', SKILL_MCP_DRAIN_MS: '300' },
      era,
    );
  });
  afterAll(async () => {
    await served?.close();
  });

  test('progress: a run lasting ~2.5 s sends progress notifications with the elapsed time', async () => {
    const progress: { progress: number; message?: string }[] = [];
    const result = await served.client.callTool(
      { name: 'skill_run', arguments: await approved('scripts/sleep.js', ['2500']) },
      { onprogress: (p) => void progress.push(p as never) },
    );
    expect(result.isError, JSON.stringify(result)).not.toBe(true);
    expect((result.structuredContent as { stdout: string }).stdout).toBe('started\nslept 2500\n');
    expect(progress.length).toBeGreaterThanOrEqual(1);
    expect(progress[0]!.message).toMatch(/reporter\/scripts\/sleep\.js running for \d+ s/);
    expect(progress.map((p) => p.progress)).toEqual([...progress.map((p) => p.progress)].sort((a, b) => a - b));
  });

  test('a client cancel kills the run: its processes are gone, the audit shows it, the server keeps serving', async () => {
    const controller = new AbortController();
    const marker = sleepMarker();
    const call = served.client.callTool(
      { name: 'skill_run', arguments: await approved('scripts/sleep.js', ['60000', marker]) },
      { signal: controller.signal },
    );
    const accepted = await awaitAudit(stateDir, (l) => l.event === 'run.accept' && l.argv?.[2] === marker);
    // run.accept is logged just before the spawn: wait for the script to really be running (the
    // test's timeout is the backstop).
    while (sleepers(marker).length === 0) await new Promise((resolve) => setTimeout(resolve, 25));
    controller.abort();
    await expect(call).rejects.toThrow();
    const exit = await awaitAudit(stateDir, (l) => l.event === 'run.exit' && l.run_id === accepted.run_id);
    expect(JSON.stringify(exit)).toMatch(/cancel/);
    expect(await sleepersGone(marker), `the run.exit line: ${JSON.stringify(exit)}`).toEqual([]);
    // The slot was released (a second run is not BUSY) and the front still answers.
    const next = await callTool(served.client, 'skill_run', await approved('scripts/report.js', ['after-cancel']));
    expect(reported(next).args).toEqual(['after-cancel']);
  });

  test('runner killed between runs: the front survives, the guard restarts it, the next run works, skill_list reports the restart', async () => {
    expect((await skillList(served.client)).isolation.level).not.toBe('unavailable');
    const before = runnerPid(served.pid);
    const restartsBefore = (await skillList(served.client)).isolation.runnerRestarts ?? 0;
    process.kill(before, 'SIGKILL');
    // Phase 1 already needs the runner: it waits for the restarted one.
    const ran = await callTool(served.client, 'skill_run', await approved('scripts/report.js', ['after-restart']));
    expect(reported(ran).args).toEqual(['after-restart']);
    expect(runnerPid(served.pid)).not.toBe(before);
    expect((await skillList(served.client)).isolation.runnerRestarts).toBe(restartsBefore + 1);
    expect(served.stderr()).toMatch(/the runner exited \(SIGKILL\); restarting it/);
  });

  test('runner killed during a run: that call is RUNNER_UNAVAILABLE saying it was not retried, the script does not outlive it, the next run works', async () => {
    const marker = sleepMarker();
    const call = callTool(served.client, 'skill_run', await approved('scripts/sleep.js', ['59000', marker]));
    await awaitAudit(stateDir, (l) => l.event === 'run.accept' && l.argv?.[2] === marker);
    process.kill(runnerPid(served.pid), 'SIGKILL');
    const { code, message } = refusal(await call);
    expect(code).toBe('RUNNER_UNAVAILABLE');
    expect(message).toMatch(/not retried/);
    expect(await sleepersGone(marker)).toEqual([]);
    const next = await callTool(served.client, 'skill_run', await approved('scripts/report.js', ['after-crash']));
    expect(reported(next).args).toEqual(['after-crash']);
  });
});
