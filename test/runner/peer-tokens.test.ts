/**
 * A hostile peer on the runner's socket with tokens: forged, replayed (also across a runner
 * restart), expired, re-targeted to other args, script or skill, and a script swapped for a symlink
 * after its token was minted; an undeclared file or unknown skill cannot be prepared. Each ends in
 * a refusal with a stable code, nothing runs, and the runner keeps serving the next request.
 *
 * Tier `front`: the refusals are decided by the runner's token and declaration checks before
 * anything is spawned, the same at every level and uid and on every Node major (shared/token.ts is
 * in `unit` too). The frame-level attacks are peer-protocol.test.ts (front, node).
 */
import { randomBytes } from 'node:crypto';
import { rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mintToken } from '../../shared/token.js';
import { prepareAndRun, slotsFree, startRunner, text, uidRange } from './harness.js';
import type { RunnerHandle } from './harness.js';
import { peerSkills } from './peer-fixture.js';

const { skills, outsideDir, env } = peerSkills();
let runner: RunnerHandle;

async function stillServes(): Promise<void> {
  const answer = await runner.client.describe();
  expect(answer.ok).toBe(true);
}

beforeAll(async () => {
  runner = await startRunner({ env, args: ['--uid-range', uidRange(63)] });
});
// One slot, no queue: a run holds its slot until its folder is removed, after its answer; each test starts with it free.
beforeEach(() => slotsFree(runner.client));
afterAll(async () => {
  await runner?.stop();
});

describe('hostile peer: tokens', () => {
  it('a forged token (another key) → TOKEN_INVALID, nothing runs', async () => {
    const prepared = await runner.client.prepare({ skill: 'echo', script: 'run.js', args: [] });
    expect(prepared.ok).toBe(true);
    const forged = mintToken(randomBytes(32), prepared.ok ? prepared.result.willRun : ({} as never), Date.now(), 60_000).token;
    const ran = await runner.client.run({ skill: 'echo', script: 'run.js', args: [], confirmToken: forged });
    expect(ran).toMatchObject({ ok: false, error: { code: 'TOKEN_INVALID' } });
    await stillServes();
  });

  it('a replayed token → TOKEN_REUSED, also after the runner restarts', async () => {
    const first = await prepareAndRun(runner.client, 'echo', 'run.js', ['once']);
    expect(text(first.result.stdout)).toBe('["once"]');
    // One slot and no queue here: the first run holds its slot until its folder is removed, after its answer.
    await slotsFree(runner.client);
    const again = await runner.client.run({ skill: 'echo', script: 'run.js', args: ['once'], confirmToken: first.token });
    expect(again).toMatchObject({ ok: false, error: { code: 'TOKEN_REUSED' } });
    await runner.stop();
    runner = await startRunner({ env, stateDir: runner.stateDir, args: ['--uid-range', uidRange(63)] });
    const afterRestart = await runner.client.run({ skill: 'echo', script: 'run.js', args: ['once'], confirmToken: first.token });
    expect(afterRestart).toMatchObject({ ok: false, error: { code: 'TOKEN_REUSED' } });
    // A token minted before the restart and never used still works: the key survived.
    const minted = await runner.client.prepare({ skill: 'echo', script: 'run.js', args: ['kept'] });
    await runner.stop();
    runner = await startRunner({ env, stateDir: runner.stateDir, args: ['--uid-range', uidRange(63)] });
    const kept = await runner.client.run({
      skill: 'echo',
      script: 'run.js',
      args: ['kept'],
      confirmToken: minted.ok ? minted.result.confirmToken : '',
    });
    expect(kept).toMatchObject({ ok: true, result: { stdout: Buffer.from('["kept"]') } });
  });

  it('an expired token → TOKEN_EXPIRED', async () => {
    const short = await startRunner({ env: { ...env, MCP_CONFIRM_TTL_SECONDS: '1' }, args: ['--uid-range', uidRange(63)] });
    try {
      const prepared = await short.client.prepare({ skill: 'echo', script: 'run.js', args: [] });
      await new Promise((r) => setTimeout(r, 1100));
      const ran = await short.client.run({
        skill: 'echo',
        script: 'run.js',
        args: [],
        confirmToken: prepared.ok ? prepared.result.confirmToken : '',
      });
      expect(ran).toMatchObject({ ok: false, error: { code: 'TOKEN_EXPIRED' } });
    } finally {
      await short.stop();
    }
  });

  it('a token re-targeted to other args, another script or another skill → DRAFT_CHANGED with a fresh preview, nothing runs', async () => {
    const prepared = await runner.client.prepare({ skill: 'echo', script: 'run.js', args: ['approved'] });
    const token = prepared.ok ? prepared.result.confirmToken : '';
    const otherArgs = await runner.client.run({ skill: 'echo', script: 'run.js', args: ['rm -rf /'], confirmToken: token });
    expect(otherArgs).toMatchObject({ ok: false, error: { code: 'DRAFT_CHANGED', fresh: { willRun: { argv: ['run.js', 'rm -rf /'] } } } });
    const otherScript = await runner.client.run({ skill: 'echo', script: 'other.js', args: ['approved'], confirmToken: token });
    expect(otherScript).toMatchObject({ ok: false, error: { code: 'DRAFT_CHANGED' } });
    const otherSkill = await runner.client.run({ skill: 'slow', script: 'sleep.js', args: ['approved'], confirmToken: token });
    expect(otherSkill).toMatchObject({ ok: false, error: { code: 'DRAFT_CHANGED' } });
    // The approved run itself still works once.
    const approved = await runner.client.run({ skill: 'echo', script: 'run.js', args: ['approved'], confirmToken: token });
    expect(approved).toMatchObject({ ok: true, result: { stdout: Buffer.from('["approved"]') } });
  });

  it('a script swapped for a symlink leaving the skill after minting → refused (OUTSIDE_SKILL), nothing runs', async () => {
    const prepared = await runner.client.prepare({ skill: 'echo', script: 'other.js', args: [] });
    const script = join(skills, 'echo', 'other.js');
    rmSync(script);
    symlinkSync(join(outsideDir, 'elsewhere', 'evil.js'), script);
    try {
      const ran = await runner.client.run({
        skill: 'echo',
        script: 'other.js',
        args: [],
        confirmToken: prepared.ok ? prepared.result.confirmToken : '',
      });
      expect(ran).toMatchObject({ ok: false, error: { code: 'OUTSIDE_SKILL' } });
      expect(JSON.stringify(ran)).not.toContain('EVIL');
    } finally {
      rmSync(script);
      writeFileSync(script, 'process.stdout.write("other")', { mode: 0o644 });
    }
    await stillServes();
  });

  it('an undeclared file of the skill cannot be prepared or run (NOT_DECLARED)', async () => {
    expect(await runner.client.prepare({ skill: 'echo', script: 'outside.js', args: [] })).toMatchObject({
      ok: false,
      error: { code: 'NOT_DECLARED' },
    });
    expect(await runner.client.prepare({ skill: 'nope', script: 'run.js', args: [] })).toMatchObject({
      ok: false,
      error: { code: 'UNKNOWN_SKILL' },
    });
  });
});
