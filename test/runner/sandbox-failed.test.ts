/**
 * A sandbox that cannot start is reported as such — `SANDBOX_FAILED` with bubblewrap's own words,
 * host paths removed from what the model reads — never as the script's exit code (docs/isolation.md,
 * "A sandbox that cannot start"). Through the real runner on its socket, at this machine's
 * bubblewrap level: bubblewrap itself is made to fail its setup the way a root runner's state
 * folder under a 0700 home made it fail (a bind source the sandbox's uid cannot reach), through
 * SKILL_MCP_BWRAP naming a wrapper that adds that one bind once a marker file exists.
 */
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bwrapWorks, isRoot } from '../levels.js';
import { auditLines, prepareAndRun, startRunner, tempDir, text, uidRange, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

const bwrap = ['/usr/bin/bwrap', '/bin/bwrap', '/usr/local/bin/bwrap'].find(existsSync);

describe.skipIf(!bwrapWorks || !bwrap)('a bubblewrap sandbox that cannot start', () => {
  let runner: RunnerHandle;
  let marker: string;
  let hidden: string;
  let base: string;
  const skills = writeSkills({
    s: {
      run: [
        { script: 'ok.js', interpreter: 'node' },
        { script: 'forge.js', interpreter: 'node' },
      ],
      files: {
        'ok.js': 'process.stdout.write("ran")',
        // A script that says what bubblewrap says, then exits 1: its own failure, reported as its exit.
        'forge.js': `process.stderr.write("bwrap: Can't find source path /etc/x: Permission denied\\n"); process.exit(1)`,
      },
    },
  });

  beforeAll(async () => {
    base = tempDir('sandbox-failed');
    marker = join(base, 'fail-now');
    // As root the run's uid meets a 0700 folder on the way, as under root's home; as an ordinary
    // uid (who may enter its own 0700 folders) the source is simply not there.
    const locked = join(base, 'home');
    mkdirSync(join(locked, 'state', 'envs', 'x'), { recursive: true });
    chmodSync(locked, 0o700);
    hidden = isRoot ? join(locked, 'state', 'envs', 'x') : join(base, 'gone', 'x');
    const wrapper = join(base, 'bwrap-wrapper');
    writeFileSync(
      wrapper,
      `#!/bin/sh\nif [ -e '${marker}' ]; then exec '${bwrap}' --ro-bind '${hidden}' /deps/python "$@"; fi\nexec '${bwrap}' "$@"\n`,
      {
        mode: 0o755,
      },
    );
    runner = await startRunner({ env: { SKILLS_DIR: skills, SKILL_MCP_BWRAP: wrapper }, base, args: ['--uid-range', uidRange(31)] });
  });
  afterAll(async () => {
    await runner?.stop();
  });

  it('runs as usual while bubblewrap can build the sandbox', async () => {
    const { result } = await prepareAndRun(runner.client, 's', 'ok.js');
    expect(result.exitCode).toBe(0);
    expect(text(result.stdout)).toBe('ran');
  });

  it("SANDBOX_FAILED with bubblewrap's words and no host path, not `completed, exitCode: 1`; the exit line says spawn-failed; the operator's log has the whole words", async () => {
    writeFileSync(marker, '');
    try {
      const prepared = await runner.client.prepare({ skill: 's', script: 'ok.js', args: [] });
      if (!prepared.ok) throw new Error(prepared.error.message);
      const ran = await runner.client.run({ skill: 's', script: 'ok.js', args: [], confirmToken: prepared.result.confirmToken });
      expect(ran.ok).toBe(false);
      if (ran.ok) return;
      expect(ran.error.code).toBe('SANDBOX_FAILED');
      const why = isRoot ? 'Permission denied' : 'No such file or directory';
      expect(ran.error.message).toContain(`the sandbox could not be set up, so the script did not start`);
      expect(ran.error.message).toContain(`bwrap: Can't find source path [a host path]: ${why}`);
      // Security: nothing of the host's folders reaches the model.
      expect(ran.error.message).not.toContain(base);
      const exit = auditLines(runner.stateDir).findLast((l) => l['event'] === 'run.exit')!;
      expect(exit).toMatchObject({
        ended: 'spawn-failed',
        exit_code: 1,
        start_error: `bwrap: Can't find source path [a host path]: ${why}`,
      });
      expect(JSON.stringify(exit)).not.toContain(base);
      expect(runner.stderr()).toContain(
        `the sandbox could not be set up, the script did not start: bwrap: Can't find source path ${hidden}: ${why}`,
      );
      // The token was spent with the run's accept line: it does not run twice.
      const again = await runner.client.run({ skill: 's', script: 'ok.js', args: [], confirmToken: prepared.result.confirmToken });
      expect(again).toMatchObject({ ok: false, error: { code: 'TOKEN_REUSED' } });
    } finally {
      rmSync(marker);
    }
  });

  it("a script forging bubblewrap's words on stderr and exiting 1 is reported as its own exit, not as a sandbox failure", async () => {
    const { result } = await prepareAndRun(runner.client, 's', 'forge.js');
    expect(result.exitCode).toBe(1);
    expect(text(result.stderr)).toContain("bwrap: Can't find source path /etc/x: Permission denied");
    const exit = auditLines(runner.stateDir).findLast((l) => l['event'] === 'run.exit')!;
    expect(exit).toMatchObject({ ended: 'exit', exit_code: 1 });
    expect(exit['start_error']).toBeUndefined();
  });
});
