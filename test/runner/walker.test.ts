/**
 * A run's outputs are walked with no more than the run's own rights (docs/architecture.md §8, "What
 * runs privileged"): as root by the run's uid in a process of its own (runner/workspace/walk-link.ts),
 * otherwise by the runner, which then is no more than the run's uid. Through the real runner on its
 * socket, at the level this machine gives.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRoot, prepareAndRun, startRunner, text, uidRange, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

const WRITE = `import os
open("ok.txt", "w").write("fine")
open("locked.txt", "w").write("the script's own, then made unreadable")
os.chmod("locked.txt", 0)
os.mkdir("shut"); open("shut/inner.txt", "w").write("x"); os.chmod("shut", 0)
print(os.getuid())
`;

describe('the outputs walk has only the run’s rights', () => {
  let runner: RunnerHandle;
  beforeAll(async () => {
    const skills = writeSkills({ writer: { run: [{ script: 'write.py', interpreter: 'python3' }], files: { 'write.py': WRITE } } });
    runner = await startRunner({ env: { SKILLS_DIR: skills }, args: ['--uid-range', uidRange(31)] });
  });
  afterAll(async () => {
    await runner?.stop();
  });

  it('attack: a file and a folder the script made unreadable are listed, not read (a root walk would read them)', async () => {
    const { result } = await prepareAndRun(runner.client, 'writer', 'write.py');
    const uid = Number(text(result.stdout).trim());
    if (isRoot) expect(uid).not.toBe(0);
    const files = (result.files ?? []).map((f) => ({ path: f.path, omitted: f.omitted, bytes: f.bytes && text(f.bytes) }));
    expect(files).toContainEqual({ path: 'ok.txt', omitted: undefined, bytes: 'fine' });
    expect(files).toContainEqual({ path: 'locked.txt', omitted: 'could not be opened (EACCES)', bytes: undefined });
    expect(files.find((f) => f.path === 'shut')?.omitted).toMatch(/could not be read \(EACCES\)/);
    expect(JSON.stringify(files)).not.toContain("the script's own");
  });
});
