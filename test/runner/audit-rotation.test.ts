/**
 * Rotation (`SKILL_MCP_AUDIT_MAX_BYTES`, `SKILL_MCP_AUDIT_KEEP`): segments chain into each other,
 * `audit verify` spans them and names a missing one, retention is recorded, and no line is lost
 * when a rotation is cut short — each intermediate on-disk state a crash can leave (stopped at
 * each step), and a real runner SIGKILLed at the rotation point.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, unlinkSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../../runner/audit/log.js';
import { allSegments, listSegments } from '../../runner/audit/segments.js';
import { BIN, prepareAndRun, startRunner, tempDir, uidRange, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

const started: RunnerHandle[] = [];
afterEach(async () => {
  for (const r of started.splice(0)) await r.stop();
});

function verify(file: string): { status: number | null; stdout: string } {
  const r = spawnSync(process.execPath, [BIN, 'audit', 'verify', file], {
    encoding: 'utf8',
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
  });
  return { status: r.status, stdout: r.stdout };
}

function allLines(path: string): Record<string, unknown>[] {
  return allSegments(path).flatMap((p) =>
    readFileSync(p, 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>),
  );
}

function open(dir: string, extra: { keep?: number; stopAt?: string } = {}): AuditLog {
  let stopped = false;
  const audit = new AuditLog({
    path: join(dir, 'audit.log'),
    anchorPath: join(dir, 'audit.head'),
    maxBytes: 2048,
    keep: extra.keep,
    fault: (point) => {
      // The process "dies" there: this writer writes nothing more (the test opens another).
      if (point === extra.stopAt) stopped = true;
      if (stopped) throw Object.assign(new Error(`stopped at ${extra.stopAt}`), { code: 'ECRASH' });
    },
  });
  audit.begin(() => ({ event: 'runner.start' }));
  return audit;
}

async function fill(audit: AuditLog, from: number, count: number): Promise<void> {
  for (let i = from; i < from + count; i++) await audit.append({ event: 'token.released', token_id: `t${i}`.padEnd(120, '.') });
}

describe('segments', () => {
  it('a full segment is renamed and the next starts from its head; verify spans them', async () => {
    const dir = tempDir('rotate');
    const audit = open(dir);
    await fill(audit, 0, 60);
    await audit.close();
    const segments = listSegments(join(dir, 'audit.log'));
    expect(segments.length).toBeGreaterThan(2);
    const lines = allLines(join(dir, 'audit.log'));
    expect(lines.map((l) => l['seq'])).toEqual(lines.map((_, i) => i + 1));
    expect(lines.filter((l) => l['event'] === 'token.released')).toHaveLength(60);
    const second = readFileSync(segments[1]!, 'utf8').split('\n')[0]!;
    expect(JSON.parse(second)).toMatchObject({ event: 'audit.segment', previous: basename(segments[0]!) });
    expect(verify(join(dir, 'audit.log'))).toMatchObject({
      status: 0,
      stdout: expect.stringMatching(/^intact: \d+ lines, chain unbroken;.* \d+ segments/),
    });
  });

  it('a segment removed from the middle is named as missing', async () => {
    const dir = tempDir('rotate-missing');
    const audit = open(dir);
    await fill(audit, 0, 60);
    await audit.close();
    const segments = listSegments(join(dir, 'audit.log'));
    unlinkSync(segments[1]!);
    expect(verify(join(dir, 'audit.log'))).toMatchObject({
      status: 1,
      stdout: expect.stringContaining(`a segment is missing: this one continues ${basename(segments[1]!)}`),
    });
  });

  it('retention keeps SKILL_MCP_AUDIT_KEEP segments and records what it removed; verify accepts that, not a removed first segment', async () => {
    const dir = tempDir('rotate-keep');
    const audit = open(dir, { keep: 2 });
    await fill(audit, 0, 80);
    await audit.close();
    const path = join(dir, 'audit.log');
    expect(listSegments(path)).toHaveLength(2);
    expect(allLines(path).some((l) => Array.isArray(l['removed']))).toBe(true);
    expect(verify(path)).toMatchObject({ status: 0, stdout: expect.stringContaining('removed by retention, as recorded') });
    unlinkSync(listSegments(path)[0]!);
    expect(verify(path)).toMatchObject({ status: 1, stdout: expect.stringContaining('MISSING segment') });
  });
});

describe('a rotation cut short loses no line', () => {
  it.each(['rotate-next-written', 'rotate-renamed'])(
    'stopped at %s: the next writer settles the rotation, every line is there once, verify passes',
    async (stopAt) => {
      const dir = tempDir(`rotate-crash-${stopAt}`);
      const path = join(dir, 'audit.log');
      const first = open(dir, { stopAt });
      for (let i = 0; i < 60 && first.available; i++) await fill(first, i, 1);
      // The interrupted rotation left its on-disk state; this writer is gone (a crash) with its queue.
      expect(first.available).toBe(false);
      expect(existsSync(`${path}.next`)).toBe(true);
      await first.close();
      const writtenBefore = allLines(path).filter((l) => l['event'] === 'token.released').length;
      expect(writtenBefore).toBeGreaterThan(0);
      const second = open(dir);
      await fill(second, 100, 30);
      await second.close();
      expect(existsSync(`${path}.next`)).toBe(false);
      const released = allLines(path)
        .filter((l) => l['event'] === 'token.released')
        .map((l) => l['token_id']);
      // What the first writer had written is all there, once; the second writer's lines follow.
      expect(new Set(released).size).toBe(released.length);
      for (let i = 100; i < 130; i++) expect(released).toContain(`t${i}`.padEnd(120, '.'));
      expect(verify(path)).toMatchObject({ status: 0 });
    },
  );

  it('a real runner SIGKILLed at the rotation point: a restarted runner continues the chain, no line lost', async () => {
    const skills = writeSkills({
      s: { run: [{ script: 'a.js', interpreter: 'node', timeout: 5 }], files: { 'a.js': 'process.stdout.write("ok")' } },
    });
    const base = tempDir('rotate-kill');
    const env = { SKILLS_DIR: skills, SKILL_MCP_AUDIT_MAX_BYTES: '3000' };
    const doomed = await startRunner({
      env: { ...env, SKILL_MCP_TEST_AUDIT_KILL_AT: 'rotate-renamed' },
      base,
      args: ['--uid-range', uidRange(8)],
    });
    started.push(doomed);
    const died = new Promise((resolve) => doomed.proc.once('exit', (_code, signal) => resolve(signal)));
    for (let i = 0; i < 10 && doomed.proc.exitCode === null && doomed.proc.signalCode === null; i++) {
      await prepareAndRun(doomed.client, 's', 'a.js', [`run${i}`]).catch(() => undefined);
    }
    expect(await died).toBe('SIGKILL');
    const path = join(base, 'state', 'audit.log');
    expect(existsSync(path)).toBe(false); // renamed away, the next not yet in place
    const before = allSegments(path).length + 1;
    const again = await startRunner({ env, base, args: ['--uid-range', uidRange(8)] });
    started.push(again);
    await prepareAndRun(again.client, 's', 'a.js', ['after']);
    await again.stop();
    expect(allSegments(path).length).toBeGreaterThanOrEqual(before);
    const lines = allLines(path);
    expect(lines.map((l) => l['seq'])).toEqual(lines.map((_, i) => i + 1));
    expect(
      lines
        .filter((l) => l['event'] === 'run.accept')
        .map((l) => (l['argv'] as string[])[1])
        .at(-1),
    ).toBe('after');
    expect(verify(path).stdout).toMatch(/^intact: /);
  });
});
