/**
 * The attack "fill the disk under the audit log" (issue 23 finding 6: an egress line's append threw
 * ENOSPC and crashed the runner), on a real 64 KiB tmpfs: the runner stays up, refuses runs with
 * AUDIT_UNAVAILABLE (nothing runs whose accept line could not be written), and once space is back
 * takes runs again by itself and records the outage in an `audit.gap` line. Root only: mounting a
 * tmpfs needs it.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, prepareAndRun, startRunner, tempDir, uidRange, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

const isRoot = process.getuid?.() === 0;
const base = tempDir('full-disk');
const disk = join(base, 'disk');
let mounted = false;
let runner: RunnerHandle | undefined;

afterAll(async () => {
  await runner?.stop();
  if (mounted) spawnSync('umount', [disk]);
});

/** Fills the filesystem with one file until it is full (ENOSPC). */
function fill(path: string): void {
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(4096, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (error) {
    expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
  } finally {
    closeSync(fd);
  }
}

describe.skipIf(!isRoot)('the audit log on a full disk (root: a 64 KiB tmpfs)', () => {
  it('refuses runs AUDIT_UNAVAILABLE without crashing, and takes runs again when space is back, recording the gap', async () => {
    mkdirSync(disk, { recursive: true });
    const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', disk], { encoding: 'utf8' });
    expect(m.status, m.stderr).toBe(0);
    mounted = true;
    const skills = writeSkills({
      s: { run: [{ script: 'a.js', interpreter: 'node', timeout: 5 }], files: { 'a.js': 'process.stdout.write("ok")' } },
    });
    const log = join(disk, 'audit.log');
    runner = await startRunner({ env: { SKILLS_DIR: skills }, base, args: ['--uid-range', uidRange(9), '--audit-log', log] });
    await prepareAndRun(runner.client, 's', 'a.js', ['before']);
    const held = await runner.client.prepare({ skill: 's', script: 'a.js', args: ['held'] });
    expect(held.ok).toBe(true);

    fill(join(disk, 'filler'));
    // The token prepared before the disk filled: its accept line cannot be written, so it does not run.
    const refused = await runner.client.run({
      skill: 's',
      script: 'a.js',
      args: ['held'],
      confirmToken: held.ok ? held.result.confirmToken : '',
    });
    expect(refused).toMatchObject({ ok: false, error: { code: 'AUDIT_UNAVAILABLE' } });
    // A new approval is refused too (no token without its prepare line); the runner is up and answers.
    expect(await runner.client.prepare({ skill: 's', script: 'a.js', args: ['during'] })).toMatchObject({
      ok: false,
      error: { code: 'AUDIT_UNAVAILABLE' },
    });
    expect(await runner.client.describe()).toMatchObject({ ok: true });
    expect(runner.proc.exitCode).toBeNull();
    expect(runner.stderr()).toContain('the audit log cannot be written (ENOSPC)');

    rmSync(join(disk, 'filler'));
    // Space is back: the next prepare writes what waited (the refusals), the gap line, and its own line.
    const after = await prepareAndRun(runner.client, 's', 'a.js', ['after']);
    expect(after.result.exitCode).toBe(0);
    const lines = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const gap = lines.find((l) => l['event'] === 'audit.gap');
    expect(gap).toMatchObject({ error: 'ENOSPC', refused: expect.any(Number), from: expect.any(String), to: expect.any(String) });
    expect(lines.some((l) => l['event'] === 'run.reject' && l['reason'] === 'audit-unavailable')).toBe(true);
    const accepted = lines.filter((l) => l['event'] === 'run.accept').map((l) => (l['argv'] as string[])[1]);
    expect(accepted).toEqual(['before', 'after']);
    const verify = spawnSync(process.execPath, [BIN, 'audit', 'verify', log], {
      encoding: 'utf8',
      env: { PATH: process.env['PATH'] ?? '', SKILL_MCP_STATE_DIR: runner.stateDir },
    });
    expect(verify.stdout).toMatch(/^intact: /);
  });
});
