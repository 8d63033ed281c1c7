/**
 * @module How many runs at once when the owner did not say (`SKILL_MCP_MAX_RUNS`), and one client's
 * share (`SKILL_MCP_RUNS_PER_CLIENT`): from the machine, so the default never promises more memory
 * than it has. A run may use its memory cap and, in bubblewrap, its RAM-backed /tmp; the default
 * keeps runs × (cap + /tmp) within half the machine's memory, and runs at most one per core.
 */
import { availableParallelism, totalmem } from 'node:os';

export interface Machine {
  cores: number;
  memoryBytes: number;
}

export function thisMachine(): Machine {
  return { cores: availableParallelism(), memoryBytes: totalmem() };
}

export interface RunCapacity {
  maxRuns: number;
  perClient: number;
  /** Where `maxRuns` came from, for the start line and doctor. */
  maxRunsFrom: 'setting' | 'machine';
}

/** The share of the machine's memory runs may take together (the rest: the system, the front, the runner). */
const MEMORY_SHARE = 0.5;

/** Runs at once on `machine`: one per core, as many as half its memory holds at their caps, at least 1. */
export function defaultMaxRuns(machine: Machine, perRunBytes: number): number {
  const byMemory = Math.floor((machine.memoryBytes * MEMORY_SHARE) / perRunBytes);
  return Math.max(1, Math.min(machine.cores, byMemory));
}

/**
 * The owner's settings, else the machine's defaults. Hosted, one client gets half the slots
 * (rounded up), so it cannot take every one; standalone serves one front of one person, who may
 * use them all. Never more runs than run uids (`uidCount`, root only): a run without a uid is BUSY anyway.
 */
export function resolveCapacity(
  opts: { maxRuns: number | undefined; perClient: number | undefined; perRunBytes: number; hosted: boolean; uidCount: number | undefined },
  machine: Machine,
): RunCapacity {
  const fromMachine = Math.min(defaultMaxRuns(machine, opts.perRunBytes), opts.uidCount ?? Number.MAX_SAFE_INTEGER);
  const maxRuns = opts.maxRuns ?? fromMachine;
  const share = opts.perClient ?? (opts.hosted ? Math.ceil(maxRuns / 2) : maxRuns);
  return { maxRuns, perClient: Math.min(share, maxRuns), maxRunsFrom: opts.maxRuns === undefined ? 'machine' : 'setting' };
}
