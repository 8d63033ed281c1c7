/**
 * A declared script whose name reads as an interpreter option (`-c` for python3, `--inspect=…` for
 * node) is refused by the declaration parser, through the real runner on its real socket: describe
 * names the problem and prepare answers NOT_DECLARED, so nothing is ever spawned.
 *
 * Tier `front`: the refusal is decided before any sandbox exists, the same at every level and uid.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunner, uidRange, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

describe('script names that read as interpreter options', () => {
  const skills = writeSkills({
    optiony: {
      run: [
        { script: '-c', interpreter: 'python3' },
        { script: '--inspect=0.0.0.0', interpreter: 'node' },
      ],
      files: { '-c': 'print(1)' },
    },
  });
  let runner: RunnerHandle;
  beforeAll(async () => {
    runner = await startRunner({ env: { SKILLS_DIR: skills }, args: ['--uid-range', uidRange(11)] });
  });
  afterAll(async () => runner?.stop());

  it('a declared "-c" or "--inspect=…" is refused by the declaration parser, and prepare says it is not runnable', async () => {
    const described = await runner.client.describe();
    const problems = described.ok ? (described.result.skills.find((s) => s.name === 'optiony')?.declarationProblems ?? []) : [];
    expect(problems.join(' ')).toContain('would read as an interpreter option');
    const prepared = await runner.client.prepare({ skill: 'optiony', script: '-c', args: ['import os; os.system("id")'] });
    expect(prepared).toMatchObject({ ok: false, error: { code: 'NOT_DECLARED' } });
  });
});
