/**
 * Root runners on one machine share the default run-uid range, and after a run each kills every
 * process of the uid it used. A uid claimed by a live runner must never be handed out by another
 * (they would share RLIMIT_NPROC and kill each other's scripts); a claim left by a dead runner is
 * taken over. Claims are files in a 0700 folder; these tests plant them directly.
 */
import { chmodSync, mkdirSync, readdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isRoot, prepareAndRun, runUid, slotsFree, startRunner, tempDir, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

const FIRST = 61500; // a range of its own (other runner tests use 61184-61439)
const skills = writeSkills({
  s: { run: [{ script: 'a.js', interpreter: 'node', timeout: 5 }], files: { 'a.js': 'process.stdout.write(String(process.getuid()))' } },
});
const started: RunnerHandle[] = [];
afterEach(async () => {
  for (const r of started.splice(0)) await r.stop();
});

function claimDir(): string {
  const dir = join(tempDir('claims'), 'claims');
  mkdirSync(dir, { mode: 0o700 });
  chmodSync(dir, 0o700);
  return dir;
}

async function runner(dir: string, range: string): Promise<RunnerHandle> {
  const r = await startRunner({ env: { SKILLS_DIR: skills, SKILL_MCP_UID_CLAIM_DIR: dir }, args: ['--uid-range', range] });
  started.push(r);
  return r;
}

describe.skipIf(!isRoot)('run-uid claims (root only: only a root runner switches uids)', () => {
  it('a uid claimed by a live runner is skipped, and the claim is released after the run', async () => {
    const dir = claimDir();
    // Claimed by this (live) test process, as another runner would.
    writeFileSync(join(dir, String(FIRST)), `${process.pid} feedfacefeedface\n`, { mode: 0o600 });
    const r = await runner(dir, `${FIRST}-${FIRST + 1}`);
    const { result } = await prepareAndRun(r.client, 's', 'a.js');
    expect(runUid(r.stateDir, result.runId)).toBe(FIRST + 1);
    // The uid (and its claim) is given back after the run's folder is removed, after its answer; the slot right after that.
    await slotsFree(r.client);
    expect(readdirSync(dir).sort()).toEqual([String(FIRST)]); // ours is gone, the other stays
  });

  it('a claim left by a dead runner is taken over', async () => {
    const dir = claimDir();
    writeFileSync(join(dir, String(FIRST)), '2147483646 deaddeaddeaddead\n', { mode: 0o600 });
    const r = await runner(dir, `${FIRST}-${FIRST}`);
    const { result } = await prepareAndRun(r.client, 's', 'a.js');
    expect(runUid(r.stateDir, result.runId)).toBe(FIRST);
  });

  it('every uid claimed by live runners: BUSY, nothing runs, and the approval is not spent', async () => {
    const dir = claimDir();
    writeFileSync(join(dir, String(FIRST)), `${process.pid} feedfacefeedface\n`, { mode: 0o600 });
    const r = await runner(dir, `${FIRST}-${FIRST}`);
    const prepared = await r.client.prepare({ skill: 's', script: 'a.js', args: [] });
    if (!prepared.ok) throw new Error(prepared.error.message);
    const request = { skill: 's', script: 'a.js', args: [], confirmToken: prepared.result.confirmToken };
    expect(await r.client.run(request)).toMatchObject({ ok: false, error: { code: 'BUSY' } });
    // The other runner is done with the uid: the same token now runs, once.
    unlinkSync(join(dir, String(FIRST)));
    expect(await r.client.run(request)).toMatchObject({ ok: true, result: { exitCode: 0 } });
    expect(await r.client.run(request)).toMatchObject({ ok: false, error: { code: 'TOKEN_REUSED' } });
  });
});
