/**
 * The default number of runs at once, from the machine (runner/requests/capacity.ts): never more than
 * its memory holds at the per-run caps, never more than its cores, never fewer than one; and the
 * per-client share, which keeps one hosted client from taking every slot.
 */
import { describe, expect, it } from 'vitest';
import { defaultMaxRuns, resolveCapacity } from '../../runner/requests/capacity.js';

const GiB = 1024 ** 3;
const perRun = GiB + 256 * 1024 ** 2; // the default memory cap plus the default private /tmp

describe('runs at once by default', () => {
  it('one per core when memory is plentiful', () => {
    expect(defaultMaxRuns({ cores: 2, memoryBytes: 24 * GiB }, perRun)).toBe(2);
    expect(defaultMaxRuns({ cores: 16, memoryBytes: 64 * GiB }, perRun)).toBe(16);
  });

  it('memory-bound: runs × (cap + /tmp) stays within half the memory, however many cores', () => {
    expect(defaultMaxRuns({ cores: 64, memoryBytes: 16 * GiB }, perRun)).toBe(6);
    expect(6 * perRun).toBeLessThanOrEqual(8 * GiB);
  });

  it('a machine too small for two runs at their caps still runs one at a time', () => {
    expect(defaultMaxRuns({ cores: 8, memoryBytes: 2 * GiB }, perRun)).toBe(1);
    expect(defaultMaxRuns({ cores: 1, memoryBytes: 512 * 1024 ** 2 }, perRun)).toBe(1);
  });
});

describe('the settings and the share', () => {
  const machine = { cores: 8, memoryBytes: 64 * GiB };

  it("an owner's value wins over the machine's, 1 included", () => {
    expect(
      resolveCapacity({ maxRuns: 1, perClient: undefined, perRunBytes: perRun, hosted: false, uidCount: undefined }, machine),
    ).toMatchObject({ maxRuns: 1, perClient: 1, maxRunsFrom: 'setting' });
    expect(
      resolveCapacity({ maxRuns: 32, perClient: undefined, perRunBytes: perRun, hosted: false, uidCount: undefined }, machine),
    ).toMatchObject({ maxRuns: 32, maxRunsFrom: 'setting' });
  });

  it('hosted, one client gets half the slots (rounded up) by default, so it cannot take every one', () => {
    expect(
      resolveCapacity({ maxRuns: undefined, perClient: undefined, perRunBytes: perRun, hosted: true, uidCount: undefined }, machine),
    ).toMatchObject({ maxRuns: 8, perClient: 4, maxRunsFrom: 'machine' });
    expect(
      resolveCapacity({ maxRuns: 3, perClient: undefined, perRunBytes: perRun, hosted: true, uidCount: undefined }, machine).perClient,
    ).toBe(2);
  });

  it('standalone serves one front: its client may use every slot', () => {
    expect(
      resolveCapacity({ maxRuns: 4, perClient: undefined, perRunBytes: perRun, hosted: false, uidCount: undefined }, machine).perClient,
    ).toBe(4);
  });

  it('a share above the limit is the limit; the default never exceeds the run uids', () => {
    expect(resolveCapacity({ maxRuns: 2, perClient: 9, perRunBytes: perRun, hosted: true, uidCount: undefined }, machine).perClient).toBe(
      2,
    );
    expect(
      resolveCapacity({ maxRuns: undefined, perClient: undefined, perRunBytes: perRun, hosted: false, uidCount: 3 }, machine).maxRuns,
    ).toBe(3);
  });
});
