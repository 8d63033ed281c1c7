/**
 * A held start (docs/isolation.md, "The spend and the accept line while bubblewrap starts"): where
 * the runner gives bubblewrap its go-ahead, a run's token is spent and its accept line written after
 * the spawn call, while the sandbox is built, and the script waits for both. Through the real runner
 * on its real socket as an ordinary uid (level `namespace`, the go-ahead's level; setpriv to 40213
 * when the test is root), by attack name: a token sent twice at once runs once, and an accept line
 * the disk refuses (the runner's RLIMIT_FSIZE lowered under the log: EFBIG) refuses the run, and fd
 * exhaustion at the spawn (RLIMIT_NOFILE lowered: EMFILE) refuses it before the spend. That the
 * script itself never starts without the hold is test/runner/go-ahead.test.ts's (runProcess).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { namespaceVariants } from '../levels.js';
import { loadPosixSpawn } from '../../runner/sandbox/posix-spawn.js';
import { auditLines, prepareAndRun, slotsFree, startRunner, tempDir, text, tokenLogIdOf, uidRange, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

// 'always', as root too: the held start's only namespace-level check on Node 22 and 24 (root passes).
const variant = namespaceVariants(40213, 'always')[0]!;
// An ordinary uid's runner always sets its sandboxes' limits itself (go-ahead.ts runnerMaySetLimits).
const skipWhy = !variant.run
  ? 'bubblewrap cannot build a sandbox here'
  : loadPosixSpawn()?.gates !== true
    ? 'no posix_spawn go-ahead here'
    : undefined;

describe.skipIf(skipWhy !== undefined)(`a held start at \`namespace\`${skipWhy ? ` (skipped: ${skipWhy})` : ''}`, () => {
  let runner: RunnerHandle;
  const skills = writeSkills({
    s: {
      run: [{ script: 'a.js', interpreter: 'node', timeout: 20 }],
      files: { 'a.js': 'process.stdout.write("ran " + process.argv.slice(2).join(" "))' },
    },
  });

  beforeAll(async () => {
    const base = tempDir('held');
    if (variant.uid !== undefined) execFileSync('chown', ['-R', `${variant.uid}:${variant.uid}`, base]);
    chmodSync(base, 0o755);
    runner = await startRunner({
      env: { SKILLS_DIR: skills },
      base,
      args: ['--uid-range', uidRange(4)],
      ...(variant.uid !== undefined
        ? { spawnPrefix: ['setpriv', `--reuid=${variant.uid}`, `--regid=${variant.uid}`, '--clear-groups'] }
        : {}),
    });
    const described = await runner.client.describe();
    expect(described.ok && described.result.isolation.level).toBe('namespace');
  });
  afterAll(async () => {
    await runner?.stop();
  });

  it('a run goes as before: it ran, its token is spent, one accept line before its exit line', async () => {
    const { token, result } = await prepareAndRun(runner.client, 's', 'a.js', ['plain']);
    expect(result.exitCode).toBe(0);
    expect(text(result.stdout)).toBe('ran plain');
    const again = await runner.client.run({ skill: 's', script: 'a.js', args: ['plain'], confirmToken: token });
    expect(again).toMatchObject({ ok: false, error: { code: 'TOKEN_REUSED' } });
    const lines = auditLines(runner.stateDir).filter((l) => l['run_id'] === result.runId);
    expect(lines.map((l) => l['event'])).toEqual(['run.accept', 'run.exit']);
  });

  it('token replay: the same token sent twice at once runs once; the other is TOKEN_REUSED, whichever check caught it', async () => {
    const prepared = await runner.client.prepare({ skill: 's', script: 'a.js', args: ['twice'] });
    if (!prepared.ok) throw new Error(prepared.error.message);
    const request = { skill: 's', script: 'a.js', args: ['twice'], confirmToken: prepared.result.confirmToken };
    const answers = await Promise.all([runner.client.run(request), runner.client.run(request)]);
    const ran = answers.filter((a) => a.ok);
    expect(ran).toHaveLength(1);
    expect(ran[0]!.ok && ran[0]!.result.exitCode).toBe(0);
    expect(ran[0]!.ok && text(ran[0]!.result.stdout)).toBe('ran twice');
    expect(answers.filter((a) => !a.ok)).toEqual([
      expect.objectContaining({ ok: false, error: expect.objectContaining({ code: 'TOKEN_REUSED' }) }),
    ]);
    const accepts = auditLines(runner.stateDir).filter((l) => l['event'] === 'run.accept' && (l['argv'] as string[]).includes('twice'));
    expect(accepts).toHaveLength(1);
  });

  it('an accept line the disk refuses (EFBIG) refuses the run AUDIT_UNAVAILABLE: no accept or exit line for it, its token spent, and runs go on once the log can grow', async () => {
    const prepared = await runner.client.prepare({ skill: 's', script: 'a.js', args: ['refused'] });
    if (!prepared.ok) throw new Error(prepared.error.message);
    const log = join(runner.stateDir, 'audit.log');
    const before = auditLines(runner.stateDir).length;
    // The log may not grow past its size now; the ledger's small files still may be written. As the
    // runner's own uid: root here may lack CAP_SYS_RESOURCE, which prlimit(2) on another uid needs.
    const pid = String(runner.proc.pid);
    const asRunner =
      variant.uid !== undefined ? ['setpriv', `--reuid=${variant.uid}`, `--regid=${variant.uid}`, '--clear-groups', '--'] : [];
    const prlimit = (value: string): void => {
      const [command, ...args] = [...asRunner, 'prlimit', '--pid', pid, `--fsize=${value}`];
      execFileSync(command!, args);
    };
    prlimit(`${statSync(log).size}:unlimited`);
    let refused: Awaited<ReturnType<typeof runner.client.run>>;
    try {
      refused = await runner.client.run({ skill: 's', script: 'a.js', args: ['refused'], confirmToken: prepared.result.confirmToken });
    } finally {
      prlimit('unlimited:unlimited');
    }
    expect(refused).toMatchObject({ ok: false, error: { code: 'AUDIT_UNAVAILABLE' } });
    expect(!refused.ok && refused.error.message).toContain('its token was spent');
    // The log takes lines again: the next run goes, the gap and the refusal on record before it.
    const after = await prepareAndRun(runner.client, 's', 'a.js', ['after']);
    expect(after.result.exitCode).toBe(0);
    expect(text(after.result.stdout)).toBe('ran after');
    const lines = auditLines(runner.stateDir).slice(before);
    expect(lines.some((l) => l['event'] === 'run.accept' && (l['argv'] as string[]).includes('refused'))).toBe(false);
    expect(lines.some((l) => l['event'] === 'run.exit' && l['run_id'] !== after.result.runId)).toBe(false);
    expect(lines.find((l) => l['event'] === 'audit.gap')).toMatchObject({ error: 'EFBIG' });
    expect(lines.some((l) => l['event'] === 'run.reject' && l['reason'] === 'audit-unavailable')).toBe(true);
    // Spent before the line was tried: never usable again.
    const replay = await runner.client.run({ skill: 's', script: 'a.js', args: ['refused'], confirmToken: prepared.result.confirmToken });
    expect(replay).toMatchObject({ ok: false, error: { code: 'TOKEN_REUSED' } });
  });

  it('fd exhaustion at the spawn (EMFILE): a go-ahead that cannot be set up refuses the run SANDBOX_UNAVAILABLE before the spend — no accept line, the same token runs once fds are back, the runner keeps serving', async () => {
    // The runner's RLIMIT_NOFILE lowered to what it holds now plus k, for k = 1, 2, …: below some k
    // the connection or the skill's copy fails first; at some k they fit and the spawn's pipes and
    // socket pair do not. Whatever fails, the runner answers; the spawn's failure must not spend.
    const pid = String(runner.proc.pid);
    const asRunner =
      variant.uid !== undefined ? ['setpriv', `--reuid=${variant.uid}`, `--regid=${variant.uid}`, '--clear-groups', '--'] : [];
    const prlimit = (...args: string[]): string => {
      const [command, ...rest] = [...asRunner, 'prlimit', '--pid', pid, ...args];
      return execFileSync(command!, rest, { encoding: 'utf8' });
    };
    const [soft, hard] = prlimit('--nofile', '--output=SOFT,HARD', '--noheadings', '--raw').trim().split(/\s+/);
    const gateRefused: { token: string; arg: string }[] = [];
    let ran = false;
    for (let k = 1; k <= 40 && !ran; k++) {
      const arg = `fds-${k}`;
      const prepared = await runner.client.prepare({ skill: 's', script: 'a.js', args: [arg] });
      if (!prepared.ok) throw new Error(prepared.error.message);
      // The last run's folders are removed after its answer (fds of their own): counted once it is done.
      await slotsFree(runner.client);
      const open = readdirSync(`/proc/${pid}/fd`).length;
      prlimit(`--nofile=${open + k}:${hard}`);
      let answer: Awaited<ReturnType<typeof runner.client.run>> | Error;
      try {
        answer = await runner.client
          .run({ skill: 's', script: 'a.js', args: [arg], confirmToken: prepared.result.confirmToken })
          .catch((error: Error) => error);
      } finally {
        prlimit(`--nofile=${soft}:${hard}`);
      }
      if (answer instanceof Error) continue; // not reached: the connection itself could not be accepted
      if (answer.ok && answer.result.exitCode === 0) {
        expect(text(answer.result.stdout)).toBe(`ran ${arg}`);
        ran = true;
      } else if (answer.ok) {
        // Past the spawn, a step that found no fd may still stop the script: never silently.
        expect(text(answer.result.stderr)).toMatch(/^skill-mcp: .+; the script was not started$/m);
      } else if (/go-ahead could not be set up/.test(answer.error.message)) {
        expect(answer.error).toMatchObject({
          code: 'SANDBOX_UNAVAILABLE',
          message: expect.stringMatching(
            /^the sandbox's go-ahead could not be set up \(.*EMFILE.*\); nothing was run and its token was not spent/,
          ),
        });
        gateRefused.push({ token: prepared.result.confirmToken, arg });
      }
    }
    expect(ran).toBe(true);
    expect(gateRefused.length).toBeGreaterThan(0);
    const lines = auditLines(runner.stateDir);
    for (const { token, arg } of gateRefused) {
      // Its own sandbox-failed refusal on record, and no accept line.
      expect(
        lines.some((l) => l['event'] === 'run.reject' && l['reason'] === 'sandbox-failed' && l['token_id'] === tokenLogIdOf(token)),
      ).toBe(true);
      expect(lines.some((l) => l['event'] === 'run.accept' && (l['argv'] as string[]).includes(arg))).toBe(false);
      // Not spent: the approval the person gave still runs, once.
      const again = await runner.client.run({ skill: 's', script: 'a.js', args: [arg], confirmToken: token });
      expect(again.ok && text(again.result.stdout)).toBe(`ran ${arg}`);
    }
  });
});
