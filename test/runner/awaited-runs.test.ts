/**
 * runner/requests/awaited-runs.ts: which previewed runs a runner keeps a spare walker or helper for.
 * The pools' behaviour through a real runner is test/runner/walker.test.ts and helper.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { AwaitedRuns } from '../../runner/requests/awaited-runs.js';

describe('AwaitedRuns', () => {
  it('waits while a previewed run is neither taken nor expired', () => {
    const awaited = new AwaitedRuns();
    expect(awaited.waiting(1_000)).toBe(false);
    awaited.add(5_000);
    expect(awaited.waiting(1_000)).toBe(true);
    awaited.taken();
    expect(awaited.waiting(1_000)).toBe(false);
  });

  it('two previews, one run: the other still waits; a second run leaves none', () => {
    const awaited = new AwaitedRuns();
    awaited.add(5_000);
    awaited.add(6_000);
    awaited.taken();
    expect(awaited.waiting(1_000)).toBe(true);
    awaited.taken();
    expect(awaited.waiting(1_000)).toBe(false);
  });

  it('a preview never run stops counting when its token expires', () => {
    const awaited = new AwaitedRuns();
    awaited.add(5_000);
    awaited.add(7_000);
    expect(awaited.waiting(5_000)).toBe(true);
    expect(awaited.waiting(7_000)).toBe(false);
  });

  it('a run with no preview left (its runner restarted, say) takes nothing from later ones', () => {
    const awaited = new AwaitedRuns();
    awaited.taken();
    awaited.add(5_000);
    expect(awaited.waiting(1_000)).toBe(true);
  });

  it('remembers at most 1,000 previews (a flood of previews keeps one spare, not a list without end)', () => {
    const awaited = new AwaitedRuns();
    for (let i = 0; i < 1_500; i++) awaited.add(10_000 + i);
    for (let i = 0; i < 1_000; i++) awaited.taken();
    expect(awaited.waiting(0)).toBe(false);
  });
});
