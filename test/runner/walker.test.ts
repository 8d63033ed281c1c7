/**
 * A run's outputs are walked with no more than the run's own rights (docs/architecture.md §8, "What
 * runs privileged"): as root by the run's uid in a process of its own (runner/workspace/walk-link.ts),
 * otherwise by the runner, which then is no more than the run's uid. Through the real runner on its
 * socket, at the level this machine gives.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRoot, prepareAndRun, startRunner, text, uidRange, until, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

const WRITE = `import os
open("ok.txt", "w").write("fine")
fd = os.open("mine.txt", os.O_WRONLY | os.O_CREAT, 0o600); os.write(fd, b"owner only"); os.close(fd)
open("locked.txt", "w").write("the script's own, then made unreadable")
os.chmod("locked.txt", 0)
os.mkdir("shut"); open("shut/inner.txt", "w").write("x"); os.chmod("shut", 0)
print(os.getuid())
`;

describe('the outputs walk has only the run’s rights', () => {
  let runner: RunnerHandle;
  beforeAll(async () => {
    const skills = writeSkills({ writer: { run: [{ script: 'write.py', interpreter: 'python3' }], files: { 'write.py': WRITE } } });
    runner = await startRunner({ env: { SKILLS_DIR: skills }, args: ['--uid-range', uidRange(42)] });
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
    // Owner-only: read as the run's uid, which a walk left as root without capabilities could not.
    expect(files).toContainEqual({ path: 'mine.txt', omitted: undefined, bytes: 'owner only' });
    expect(files).toContainEqual({ path: 'locked.txt', omitted: 'could not be opened (EACCES)', bytes: undefined });
    expect(files.find((f) => f.path === 'shut')?.omitted).toMatch(/could not be read \(EACCES\)/);
    expect(JSON.stringify(files)).not.toContain("the script's own");
  });
});

/** The runner's waiting walkers: its children running the walker bundle, with their /proc status. */
function spareWalkers(runnerPid: number): Map<string, string>[] {
  const found: Map<string, string>[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      const fields = new Map(status.split('\n').map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()]));
      if (fields.get('PPid') !== String(runnerPid)) continue;
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      // setpriv names the bundle too, for the moment before it execs the node that is the walker.
      if (!cmdline.includes('skill-mcp-walk.cjs') || cmdline.split('\0')[0]!.endsWith('setpriv')) continue;
      found.push(fields);
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

describe.skipIf(!isRoot)(
  'the spare walker a root runner keeps (skipped unless root: only a root runner walks out of its own process)',
  () => {
    let runner: RunnerHandle;
    beforeAll(async () => {
      const skills = writeSkills({
        w: { run: [{ script: 'w.py', interpreter: 'python3' }], files: { 'w.py': 'open("a.txt", "w").write("a")' } },
      });
      runner = await startRunner({ env: { SKILLS_DIR: skills }, args: ['--uid-range', uidRange(42)] });
    });
    afterAll(async () => {
      await runner?.stop();
    });

    it('attack: while it waits for a run it holds CAP_SETUID and CAP_SETGID only, under no_new_privs, in no group; a preview starts it, each run takes it and leaves a fresh one', async () => {
      const pid = runner.proc.pid!;
      // Never asked for a run (an answered describe: the runner is past its start), it keeps none.
      expect((await runner.client.describe()).ok).toBe(true);
      expect(spareWalkers(pid)).toEqual([]);
      const prepared = await runner.client.prepare({ skill: 'w', script: 'w.py', args: [] });
      if (!prepared.ok) throw new Error(prepared.error.message);
      expect(await until(() => spareWalkers(pid).length === 1, 30_000)).toBe(true);
      const [spare] = spareWalkers(pid);
      expect(spare!.get('Uid')!.split(/\s+/)).toEqual(['0', '0', '0', '0']);
      // Bits 6 and 7: CAP_SETGID and CAP_SETUID; nothing else, in any set an exec could widen.
      expect(spare!.get('CapEff')).toBe('00000000000000c0');
      expect(spare!.get('CapPrm')).toBe('00000000000000c0');
      expect(spare!.get('CapBnd')).toBe('00000000000000c0');
      expect(spare!.get('CapInh')).toBe('0000000000000000');
      expect(spare!.get('CapAmb')).toBe('0000000000000000');
      expect(spare!.get('NoNewPrivs')).toBe('1');
      expect(spare!.get('Groups')).toBe('');
      const before = spare!.get('Pid');
      const ran = await runner.client.run({ skill: 'w', script: 'w.py', args: [], confirmToken: prepared.result.confirmToken });
      if (!ran.ok) throw new Error(ran.error.message);
      expect(ran.result.files?.map((f) => f.path)).toEqual(['a.txt']);
      // The run's walker exits after its answer (the run's uid is given back only then): a fresh spare, and the used one gone.
      const pids = () => spareWalkers(pid).map((w) => w.get('Pid'));
      expect(await until(() => pids().some((p) => p !== before) && !pids().includes(before), 30_000)).toBe(true);
    });
  },
);
