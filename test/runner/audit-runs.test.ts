/**
 * Telling a run still in progress from one whose result was lost, on the log's lines alone
 * (runner liveness and the clock passed in).
 */
import { describe, expect, it } from 'vitest';
import { RUN_END_SLACK_MS, unfinishedRuns } from '../../cli/audit/runs.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const accept = (runId: string, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({
    event: 'run.accept',
    ts: new Date(T0).toISOString(),
    run_id: runId,
    skill: 's',
    script: 'a.js',
    timeout_ms: 10_000,
    runner_pid: 4242,
    ...extra,
  });
const exit = (runId: string): string => JSON.stringify({ event: 'run.exit', run_id: runId });
const alive = (): boolean => true;
const dead = (): boolean => false;

describe('runs without a run.exit', () => {
  it('a run with its exit is not reported; one without is', () => {
    expect(unfinishedRuns([accept('a'), exit('a')], T0, alive)).toEqual([]);
    expect(unfinishedRuns([accept('a'), exit('a'), accept('b')], T0, alive).map((r) => [r.runId, r.line])).toEqual([['b', 3]]);
  });

  it('its runner is gone: lost, at once', () => {
    expect(unfinishedRuns([accept('a')], T0 + 1, dead)[0]).toMatchObject({ state: 'lost', why: expect.stringContaining('pid 4242') });
  });

  it('its runner lives and its time is not up: open', () => {
    expect(unfinishedRuns([accept('a')], T0 + 10_000 + RUN_END_SLACK_MS, alive)[0]).toMatchObject({ state: 'open' });
  });

  it("its runner lives but the run's time ran out long ago (the exit could not be written): lost — a recycled or wedged pid cannot keep it open", () => {
    expect(unfinishedRuns([accept('a')], T0 + 10_000 + RUN_END_SLACK_MS + 1, alive)[0]).toMatchObject({
      state: 'lost',
      why: expect.stringContaining('time ran out'),
    });
  });

  it('a line from before runner_pid was logged is judged by its time alone', () => {
    const old = accept('a', { runner_pid: undefined });
    expect(unfinishedRuns([old], T0, dead)[0]).toMatchObject({ state: 'open' });
    expect(unfinishedRuns([old], T0 + 10 * 60_000, dead)[0]).toMatchObject({ state: 'lost' });
  });
});
