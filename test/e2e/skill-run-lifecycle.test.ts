/**
 * The one-bin, two-process launch under stress, as a client sees it (both eras): the front killed,
 * the runner killed between runs and during one, a client cancelling a long run. The front must
 * survive all of it, the guard must bring the runner back and say so, and no script or product
 * process may outlive its run.
 *
 * Tier `level`: these tests kill processes and assert what is left (a script's processes after a
 * cancel or a runner's death, the guard and runner after the front's): how a run's processes are
 * held and ended differs between the sandboxes (bubblewrap's pid namespace, per-run uids, the same
 * uid), and who may signal whom differs as root. The root launch's privilege split is in
 * skill-run-lifecycle-uid.test.ts (uid); progress notifications in skill-run-lifecycle-once.test.ts
 * (front).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ERAS, callTool, expectNoLeftovers, processesNaming, serve, skillList, tempDir, type Served } from './harness.js';
import { askToken, awaitAudit, cmdline, guardOf, refusal, reported, runnerPid, writeRunSkills } from './run-skills.js';

let root: string;
beforeAll(() => {
  root = writeRunSkills();
});
afterAll(expectNoLeftovers);

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

describe('no orphans', () => {
  test('a front killed with SIGKILL takes its guard and runner with it (the guard sees its pipe close)', async () => {
    const served = await serve({ SKILLS_DIR: root, SKILL_MCP_STATE_DIR: join(tempDir('state'), 'state') }, ERAS[0]!);
    await skillList(served.client); // wakes the runner
    const runner = runnerPid(served.pid);
    const guard = guardOf(served.pid)!;
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
