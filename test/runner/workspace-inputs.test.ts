/**
 * The runner checks a run's inputs itself, whatever the front did: a front (or anything else on the
 * socket) that skips the front's checks still cannot prepare or run with hostile input paths, more
 * bytes than the runner allows, or bytes other than those the token was approved for.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditLines, startRunner, tempDir, uidRange, type RunnerHandle } from './harness.js';
import { writeWorkspaceSkill } from '../e2e/workspace-skill.js';

let runner: RunnerHandle;
const sha = (bytes: Uint8Array | string): string => createHash('sha256').update(bytes).digest('hex');
const digest = (path: string, text: string): { path: string; size: number; sha256: string } => ({
  path,
  size: Buffer.byteLength(text),
  sha256: sha(text),
});

beforeAll(async () => {
  const skills = tempDir('ws-inputs');
  writeWorkspaceSkill(skills);
  runner = await startRunner({ env: { SKILLS_DIR: skills, SKILL_MCP_UID_RANGE: uidRange(28), SKILL_MCP_RUN_INPUT_BYTES: '1024' } });
}, 30_000);
afterAll(async () => {
  await runner?.stop();
});

const base = { skill: 'workspace', script: 'scripts/edit.py', args: [] as string[] };

describe('the runner re-checks every input', () => {
  it.each([
    ['traversal with ..', ['../x']],
    ['an absolute path', ['/etc/x']],
    ['a NUL byte', ['a\u0000b']],
    ['a case collision', ['A.txt', 'a.txt']],
    ['a Unicode collision (NFC vs NFD)', ['caf\u00e9', 'cafe\u0301']],
    ['a file that is also a folder', ['in', 'in/x']],
  ])('attack: prepare with %s is refused INVALID_PATH', async (_name, paths) => {
    const answer = await runner.client.prepare({ ...base, inputs: { files: paths.map((p) => digest(p, 'x')) } });
    expect(answer.ok).toBe(false);
    if (!answer.ok) expect(answer.error.code).toBe('INVALID_PATH');
  });

  it('attack: more input than SKILL_MCP_RUN_INPUT_BYTES (stdin counts) is refused TOO_LARGE at prepare and at run', async () => {
    const prepared = await runner.client.prepare({
      ...base,
      inputs: { files: [digest('data.txt', 'x'.repeat(600))], stdin: { size: 600, sha256: sha('y'.repeat(600)) } },
    });
    expect(prepared.ok).toBe(false);
    if (!prepared.ok) expect(prepared.error.code).toBe('TOO_LARGE');
    const small = await runner.client.prepare({ ...base, inputs: { files: [digest('data.txt', 'x')] } });
    if (!small.ok) throw new Error(small.error.message);
    const ran = await runner.client.run({
      ...base,
      confirmToken: small.result.confirmToken,
      files: [{ path: 'data.txt', bytes: Buffer.alloc(2000) }],
    });
    expect(ran.ok).toBe(false);
    if (!ran.ok) expect(ran.error.code).toBe('TOO_LARGE');
  });

  it('attack: run bytes other than the approved ones are DRAFT_CHANGED with a fresh preview of the real digests; nothing runs', async () => {
    const prepared = await runner.client.prepare({ ...base, inputs: { files: [digest('data.txt', 'approved'), digest('same.txt', '')] } });
    if (!prepared.ok) throw new Error(prepared.error.message);
    const accepted = auditLines(runner.stateDir).filter((l) => l['event'] === 'run.accept').length;
    const ran = await runner.client.run({
      ...base,
      confirmToken: prepared.result.confirmToken,
      files: [
        { path: 'data.txt', bytes: Buffer.from('tampered') },
        { path: 'same.txt', bytes: Buffer.alloc(0) },
      ],
    });
    expect(ran.ok).toBe(false);
    if (ran.ok) return;
    expect(ran.error.code).toBe('DRAFT_CHANGED');
    expect(ran.error.fresh?.willRun.inputs?.files[0]).toEqual(digest('data.txt', 'tampered'));
    expect(auditLines(runner.stateDir).filter((l) => l['event'] === 'run.accept').length).toBe(accepted);
  });

  it('the approved bytes run, and the run lines record inputs and outputs by name, size and digest', async () => {
    const prepared = await runner.client.prepare({
      ...base,
      inputs: { files: [digest('data.txt', 'one\n'), digest('same.txt', 'same\n')] },
    });
    if (!prepared.ok) throw new Error(prepared.error.message);
    const ran = await runner.client.run(
      {
        ...base,
        confirmToken: prepared.result.confirmToken,
        files: [
          { path: 'data.txt', bytes: Buffer.from('one\n') },
          { path: 'same.txt', bytes: Buffer.from('same\n') },
        ],
      },
      { timeoutMs: prepared.result.willRun.timeoutMs },
    );
    if (!ran.ok) throw new Error(ran.error.message);
    expect(ran.result.files?.map((f) => [f.path, f.size, f.sha256, Buffer.from(f.bytes ?? []).toString()])).toEqual([
      ['data.txt', 9, sha('one\nmore\n'), 'one\nmore\n'],
    ]);
    const lines = auditLines(runner.stateDir).filter((l) => l['run_id'] === ran.result.runId);
    expect(lines.find((l) => l['event'] === 'run.accept')?.['inputs']).toEqual([digest('data.txt', 'one\n'), digest('same.txt', 'same\n')]);
    expect(lines.find((l) => l['event'] === 'run.exit')?.['outputs']).toEqual([{ path: 'data.txt', size: 9, sha256: sha('one\nmore\n') }]);
  });
});
