/**
 * Where a run's time went (runner/requests/phases.ts): the marks themselves, and a real runner's
 * run.exit line carrying every phase of the run path, in order, adding up to no more than the
 * front saw from its request to the answer (an invariant, not a time limit).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { RUN_PHASES, RunPhases } from '../../runner/requests/phases.js';
import { auditLines, isRoot, prepareAndRun, startRunner, uidRange, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

describe('RunPhases', () => {
  it('gives each phase the time since the previous mark, summed when a phase is marked twice', () => {
    const phases = new RunPhases(100);
    phases.mark('receive', 101.5);
    phases.mark('admission', 104);
    phases.mark('receive', 105);
    expect(phases.snapshot()).toEqual({ receive: 2.5, admission: 2.5 });
  });

  it('lists the phases in run order whatever order they were marked in, and never a negative span', () => {
    const phases = new RunPhases(10);
    phases.mark('spawn', 12);
    phases.mark('receive', 11); // a mark given an earlier time than the last counts as 0
    expect(Object.keys(phases.snapshot())).toEqual(['receive', 'spawn']);
    expect(phases.snapshot()['receive']).toBe(0);
  });
});

const skills = writeSkills({ s: { run: [{ script: 'a.js', interpreter: 'node' }], files: { 'a.js': "process.stdout.write('ok')\n" } } });
const started: RunnerHandle[] = [];
afterAll(async () => {
  for (const r of started) await r.stop();
});

describe('run.exit phases_ms', () => {
  it('a real run records every phase from receive to outputs, and they add up to no more than the front waited', async () => {
    const runner = await startRunner({ env: { SKILLS_DIR: skills }, args: isRoot ? ['--uid-range', uidRange(29)] : [] });
    started.push(runner);
    const prepared = await runner.client.prepare({ skill: 's', script: 'a.js', args: [] });
    if (!prepared.ok) throw new Error(prepared.error.message);
    const t0 = performance.now();
    const ran = await runner.client.run({ skill: 's', script: 'a.js', args: [], confirmToken: prepared.result.confirmToken });
    const waited = performance.now() - t0;
    if (!ran.ok) throw new Error(ran.error.message);
    const exit = auditLines(runner.stateDir).find((l) => l['event'] === 'run.exit' && l['run_id'] === ran.result.runId)!;
    const phases = exit['phases_ms'] as Record<string, number>;
    // Every phase of a run that ran to its end, in the documented order.
    expect(Object.keys(phases)).toEqual([...RUN_PHASES]);
    for (const ms of Object.values(phases)) expect(ms).toBeGreaterThanOrEqual(0);
    // A real sandboxed node start is never free.
    expect(phases['script']).toBeGreaterThan(0);
    const sum = Object.values(phases).reduce((a, b) => a + b, 0);
    // Measured inside the front's own wait: more would mean a phase counted twice.
    expect(sum).toBeLessThanOrEqual(waited + 1);
    expect(sum).toBeGreaterThanOrEqual(phases['script']!);
  });

  it('every run has its own phases_ms: a second run of the same skill records them again', async () => {
    const runner = started[0]!;
    const { result } = await prepareAndRun(runner.client, 's', 'a.js');
    const exits = auditLines(runner.stateDir).filter((l) => l['event'] === 'run.exit');
    expect(exits).toHaveLength(2);
    expect(exits[1]!['run_id']).toBe(result.runId);
    expect(Object.keys(exits[1]!['phases_ms'] as object)).toEqual([...RUN_PHASES]);
  });
});
