/**
 * A run's cgroup whose kill fails (runner/requests/run-path.ts, reapLeftovers): the failure is
 * never swallowed. The uid sweep kills what the run's uid still has, and the exit line says the
 * group could not be killed (`reap_error`). The fault is made for real: a read-only
 * file bound over the run group's `cgroup.kill`, so the runner's write fails with EROFS.
 *
 * A run whose script dies with its sandbox leaves its group empty before the runner looks, and an
 * empty group is not written to at all. So the test puts a stand-in for a process of the run that
 * outlived it into the group: `sleep` as the run's uid, which only the kill or the uid sweep ends.
 *
 * Root only: a run uid of its own, cgroups and mounts; skipped where the run's groups have no
 * `cgroup.kill` (cgroup v1 with a freezer only), which this fault needs.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { awaitAllTitled, findTitled, HELD_JS, tags } from '../held-scripts.js';
import { awaitAuditLine, isRoot, runUid, startRunner, tempDir, uidRange, until, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

const runners: RunnerHandle[] = [];
const leftovers: ChildProcess[] = [];
afterAll(async () => {
  for (const child of leftovers) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await Promise.all(runners.map((r) => r.stop()));
});

/** The cgroup v2 folder of `pid` that has a `cgroup.kill`, if any (a hybrid host's unified tree too). */
function killableGroupOf(pid: number): string | undefined {
  const v2 = /^0::(\/.*)$/m.exec(readFileSync(`/proc/${pid}/cgroup`, 'utf8'))?.[1];
  if (v2 === undefined) return undefined;
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const fields = line.split(' ');
    const dash = fields.indexOf('-');
    if (dash < 0 || fields[dash + 1] !== 'cgroup2') continue;
    const dir = join(fields[4]!, v2);
    if (existsSync(join(dir, 'cgroup.kill'))) return dir;
  }
  return undefined;
}

describe('a run whose cgroup cannot be killed', () => {
  it.skipIf(!isRoot)(
    'fault: cgroup.kill fails (EROFS) — the uid sweep still kills the run, and the exit line says reap_error (root only)',
    async (ctx) => {
      const skills = writeSkills({
        held: { run: [{ script: 'held.js', interpreter: 'node', timeout: 60 }], files: { 'held.js': HELD_JS } },
      });
      // The runner has a mount namespace of its own, so the bind below is seen by it alone and ends with it.
      const r = await startRunner({
        env: { SKILLS_DIR: skills },
        args: ['--uid-range', uidRange(41)],
        spawnPrefix: ['unshare', '--mount', '--propagation', 'private', '--'],
      });
      runners.push(r);
      const [tag] = tags(1);
      const prepared = await r.client.prepare({ skill: 'held', script: 'held.js', args: [tag!] });
      if (!prepared.ok) throw new Error(`prepare refused: ${prepared.error.message}`);
      const cancelId = randomBytes(16).toString('hex');
      const answer = r.client.run(
        { skill: 'held', script: 'held.js', args: [tag!], confirmToken: prepared.result.confirmToken },
        { cancelId },
      );
      const [seen] = await awaitAllTitled([`held:${tag}`]);
      const group = killableGroupOf(seen!.pid);
      if (group === undefined || !group.includes(`run-${r.proc.pid}-`)) {
        await r.client.cancel(cancelId);
        await answer;
        ctx.skip(`the run's groups have no cgroup.kill here (${group ?? 'no cgroup v2 folder'}): this fault needs one`);
        return;
      }
      // The stand-in leftover: the run's uid, in the run's group, outside its process group and sandbox.
      const uid = runUid(r.stateDir, String((await awaitAuditLine(r.stateDir, (l) => l['event'] === 'run.accept'))['run_id']));
      const leftover = spawn('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--', 'sleep', '120'], {
        stdio: 'ignore',
        detached: true,
      });
      leftovers.push(leftover);
      writeFileSync(join(group, 'cgroup.procs'), String(leftover.pid));
      // Only once it runs as the run's uid is it the sweep's to find.
      const asRunUid = (): boolean => {
        try {
          return (
            new RegExp(`^Uid:\\s+${uid}\\s`, 'm').test(readFileSync(`/proc/${leftover.pid}/status`, 'utf8')) &&
            readFileSync(`/proc/${leftover.pid}/cmdline`, 'utf8').startsWith('sleep')
          );
        } catch {
          return false;
        }
      };
      expect(await until(asRunUid, 20_000)).toBe(true);
      const blocker = join(tempDir('reap-fault'), 'cgroup.kill');
      writeFileSync(blocker, '');
      const target = join(group, 'cgroup.kill');
      const inRunner = (...argv: string[]): void => void execFileSync('nsenter', ['-t', String(r.proc.pid), '-m', '--', ...argv]);
      inRunner('mount', '--bind', blocker, target);
      inRunner('mount', '-o', 'remount,bind,ro', target);
      expect(await r.client.cancel(cancelId)).toMatchObject({ ok: true, result: { cancelled: true } });
      await answer;
      const exit = await awaitAuditLine(r.stateDir, (l) => l['event'] === 'run.exit');
      expect(exit).toMatchObject({
        ended: 'cancelled',
        reap_error: "the run's cgroup could not be killed (EROFS)",
        leftovers_remaining: 0,
      });
      expect(exit['leftovers_killed']).toBeGreaterThanOrEqual(1);
      // The uid sweep ended the leftover; the script is gone too.
      expect(await until(() => leftover.exitCode !== null || leftover.signalCode !== null, 10_000)).toBe(true);
      expect(leftover.signalCode).toBe('SIGKILL');
      expect(await until(() => findTitled(`held:${tag}`) === undefined, 10_000)).toBe(true);
    },
  );
});
