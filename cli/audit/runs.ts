/**
 * @module Runs the log accepted but never closed: a `run.accept` with no `run.exit` for its
 * `run_id`. Each is either still in progress (its runner lives and the run's time is not up) or
 * lost — the runner died (killed, crashed, machine down) or could not write the exit line (disk
 * full), so what the script did is not on record.
 */
import { readFileSync } from 'node:fs';

/**
 * Longest a run can outlast its `timeout_ms` before its `run.exit` is written: kill grace and
 * output drain (at most 60 s each), reaping the run uid's leftovers and the audit lock (10 s).
 */
export const RUN_END_SLACK_MS = 150_000;

export interface UnfinishedRun {
  runId: string;
  /** 1-based line of its `run.accept`. */
  line: number;
  ts: string;
  skill: unknown;
  script: unknown;
  runnerPid: number | undefined;
  state: 'open' | 'lost';
  why: string;
}

/**
 * Every accepted run without an exit, classified. `now` and `runnerAlive` come from the caller so
 * this stays pure: a run is open only while its runner lives *and* its time is not up.
 */
export function unfinishedRuns(lines: string[], now: number, runnerAlive: (pid: number) => boolean): UnfinishedRun[] {
  const accepted = new Map<string, { line: number; entry: Record<string, unknown> }>();
  lines.forEach((line, i) => {
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return; // the chain check reports it
    }
    if (typeof entry['run_id'] !== 'string') return;
    if (entry['event'] === 'run.accept') accepted.set(entry['run_id'], { line: i + 1, entry });
    else if (entry['event'] === 'run.exit') accepted.delete(entry['run_id']);
  });
  return [...accepted].map(([runId, { line, entry }]) => {
    const ts = String(entry['ts']);
    const pid = typeof entry['runner_pid'] === 'number' ? entry['runner_pid'] : undefined;
    const timeoutMs = typeof entry['timeout_ms'] === 'number' ? entry['timeout_ms'] : 0;
    const endBy = Date.parse(ts) + timeoutMs + RUN_END_SLACK_MS;
    const base = { runId, line, ts, skill: entry['skill'], script: entry['script'], runnerPid: pid };
    if (pid !== undefined && !runnerAlive(pid)) return { ...base, state: 'lost' as const, why: `its runner (pid ${pid}) is gone` };
    if (!(now <= endBy))
      return { ...base, state: 'lost' as const, why: `its time ran out at ${new Date(endBy).toISOString()} and no exit was written` };
    if (pid === undefined)
      return { ...base, state: 'open' as const, why: 'it may still be running (its time is not up; the line names no runner pid)' };
    return { ...base, state: 'open' as const, why: `still running: its runner (pid ${pid}) is alive and its time is not up` };
  });
}

/**
 * Whether `pid` is a live skill-mcp runner on this machine. Security: a bare `kill(pid, 0)` would
 * call a recycled pid alive, so on Linux the command line must be a `runner` one too. When that
 * cannot be read (another user's process under `hidepid`, no /proc) the pid counts as alive and the
 * run's time limit decides. Assumes one pid namespace, like the audit lock: verify a live log on
 * the machine that writes it.
 */
export function isLiveRunner(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('runner');
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ENOENT' || process.platform !== 'linux';
  }
}
