/**
 * The namespace sandbox's limits on a run, through the real runner on its real socket, as an
 * ordinary uid (level `namespace`) and as root (level `namespace-uid`, root only): the six rlimits
 * the runner sets on the waiting sandbox (or a prlimit step it names), and a 4 GiB allocation
 * stopped by the memory cap in node and in python3, the result saying so.
 *
 * Tiers: `level` (it needs bubblewrap and asserts the level's limits; skipped without it) and
 * `node`: the runner sets the rlimits through posix_spawn, which it reaches through koffi, and the
 * node script runs on the Node major of the pass, whose heap must meet the cap the same way. The
 * sandbox's other attacks are namespace-sandbox.test.ts (not Node-sensitive).
 */
import { describe, expect, it, beforeAll, afterAll } from 'vitest';
import { namespaceVariants } from '../levels.js';
import { ownCapEff, runnerMaySetLimits } from '../../runner/sandbox/go-ahead.js';
import { loadPosixSpawn } from '../../runner/sandbox/posix-spawn.js';
import { prepareAndRun, text, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';
import { startRunnerAs } from './runner-as.js';

const MIB = 1024 * 1024;

const probe = {
  'alloc.js': `const kept = [];
try { for (let i = 0; i < 64; i++) kept.push(Buffer.alloc(64 << 20, 1)); console.log('allocated', kept.length * 64, 'MiB'); }
catch (e) { console.error('stopped after', kept.length * 64, 'MiB:', e.message); process.exit(3); }
`,
  'alloc.py': `b = bytearray(4 * 1024 * 1024 * 1024)
print("allocated 4 GiB")
`,
  'limits.py': `import json
rows = {}
for line in open("/proc/self/limits").read().splitlines()[1:]:
    rows[line[:26].strip()] = line[26:].split()[:2]
print(json.dumps(rows))
`,
};
const declared = Object.keys(probe).map((script) => ({ script, interpreter: script.endsWith('.js') ? 'node' : 'python3', timeout: 20 }));

const variants = namespaceVariants(40211);

describe.each(variants)("the namespace sandbox's limits, $name", (variant) => {
  const skip = !variant.run;
  let runner: RunnerHandle;
  const skills = writeSkills({ probe: { run: declared, files: probe } });

  beforeAll(async () => {
    if (skip) return;
    runner = await startRunnerAs(
      variant.uid,
      {
        SKILLS_DIR: skills,
        SKILL_MCP_RUN_TMP_BYTES: String(8 * MIB),
        SKILL_MCP_RUN_MEMORY_BYTES: String(512 * MIB),
        // The prlimit-step note is an internal one (SKILL_MCP_LOG_LEVEL=debug).
        SKILL_MCP_LOG_LEVEL: 'debug',
      },
      'ns-limits',
      62,
    );
  });
  afterAll(async () => {
    await runner?.stop();
  });

  async function run(script: string, args: string[] = []) {
    const ran = await prepareAndRun(runner.client, 'probe', script, args);
    expect(ran.willRun.isolation).toBe(variant.level);
    return ran;
  }

  it.skipIf(skip)(
    "runs under the runner's six rlimits, set by the runner on the waiting sandbox where it may (no prlimit step), else by a prlimit step it names at start",
    async () => {
      const { result } = await run('limits.py');
      const rows = JSON.parse(text(result.stdout)) as Record<string, string[]>;
      const both = (n: number): string[] => [String(n), String(n)];
      expect(rows['Max processes']).toEqual(both(64));
      expect(rows['Max file size']).toEqual(both(64 * MIB));
      expect(rows['Max open files']).toEqual(both(256));
      expect(rows['Max cpu time']).toEqual(both(21));
      expect(rows['Max data size']).toEqual(both(512 * MIB));
      expect(rows['Max core file size']).toEqual(both(0));
      // Which way they were set: an ordinary runner's child is its own uid; a root runner needs CAP_SYS_RESOURCE.
      const byRunner = loadPosixSpawn()?.gates === true && runnerMaySetLimits(variant.level === 'namespace-uid', ownCapEff());
      expect(runner.stderr().includes('rlimits are set by a prlimit step')).toBe(!byRunner);
    },
  );

  it.skipIf(skip)('a 4 GiB allocation is stopped by the memory cap, and the result says so (node and python3)', async () => {
    const js = await run('alloc.js');
    expect(js.result.exitCode).toBe(3);
    expect(text(js.result.stderr)).toContain('stopped after');
    expect(js.result.memoryLimited).toBe(true);
    const py = await run('alloc.py');
    expect(py.result.exitCode).not.toBe(0);
    expect(text(py.result.stderr)).toContain('MemoryError');
    expect(py.result.memoryLimited).toBe(true);
  });
});
