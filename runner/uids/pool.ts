/**
 * @module Run uids (docs/architecture.md §8, docs/platform-notes.md §4). As root, each run gets a uid/gid of its own from a
 * configured range — never 0, never the front's, never one in passwd/group or held by a live
 * process — so RLIMIT_NPROC counts only that run, and everything left of the run afterwards can be
 * found by uid and killed.
 */
import { execFile } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { closeSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { SkillMcpError } from '../../shared/errors.js';
import { loadPidfdKiller } from '../sandbox/pidfd.js';
import type { UidClaims } from './claims.js';

export const DEFAULT_UID_RANGE = '61184-61439';

export function parseUidRange(text: string): { first: number; last: number } {
  const match = /^(\d{1,10})-(\d{1,10})$/.exec(text.trim());
  const first = Number(match?.[1]);
  const last = Number(match?.[2]);
  // Security: uid 0 and the top of the id space (nobody, -1) must never be handed to a script.
  if (!match || first < 1000 || last < first || last >= 65534) {
    throw new SkillMcpError('BAD_REQUEST', `SKILL_MCP_UID_RANGE ${JSON.stringify(text)} must be FIRST-LAST within 1000-65533`);
  }
  return { first, last };
}

/** Ids named in passwd or group: never reuse an id something else on the machine may own. */
async function namedIds(): Promise<Set<number>> {
  const ids = new Set<number>();
  for (const file of ['/etc/passwd', '/etc/group']) {
    try {
      for (const line of (await readFile(file, 'utf8')).split('\n')) {
        const id = Number(line.split(':')[2]);
        if (Number.isInteger(id)) ids.add(id);
      }
    } catch {
      // no such database; nothing named there
    }
  }
  return ids;
}

/** Live (non-zombie) processes whose real, effective, saved or fs uid is `uid`. */
export function processesOfUid(uid: number): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      if (/^State:\s+Z/m.test(status)) continue;
      const uids = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(status);
      if (uids?.slice(1).some((u) => Number(u) === uid)) pids.push(Number(name));
    } catch {
      // exited while we looked
    }
  }
  return pids;
}

/** Status files read between two turns of the event loop (a few hundred µs, bench/run-floor.mjs). */
const SCAN_CHUNK = 64;
/** `State:` and `Uid:` are the 3rd and 9th lines of /proc/<pid>/status, well inside its first 4 KiB. */
const STATUS_HEAD_BYTES = 4096;

/**
 * Every uid some live (non-zombie) process has as real, effective, saved or fs uid: one pass over
 * /proc. Read synchronously in chunks, yielding between them: the same pass as hundreds of
 * concurrent async reads (four thread-pool trips a file) took 5-20 ms per run on 2 busy cores,
 * this ~1-2 ms, and no chunk holds the event loop long (a cancel still gets through).
 */
export async function uidsWithProcesses(): Promise<Set<number>> {
  const uids = new Set<number>();
  const names = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  const head = Buffer.allocUnsafe(STATUS_HEAD_BYTES);
  for (let at = 0; at < names.length; at += SCAN_CHUNK) {
    if (at > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    for (const name of names.slice(at, at + SCAN_CHUNK)) {
      let fd: number;
      try {
        fd = openSync(`/proc/${name}/status`, 'r');
      } catch {
        continue; // exited while we looked
      }
      try {
        const status = head.toString('latin1', 0, readSync(fd, head, 0, STATUS_HEAD_BYTES, 0));
        if (/^State:\s+Z/m.test(status)) continue;
        const ids = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(status);
        for (const id of ids?.slice(1) ?? []) uids.add(Number(id));
      } catch {
        // exited while we looked
      } finally {
        closeSync(fd);
      }
    }
  }
  return uids;
}

/**
 * Hands out run uids round-robin, skipping any that are named or busy.
 * Security: one uid per live run. The claim set has two halves checked together in one synchronous
 * span (no await between the check and the claim, so no other take of this runner can interleave;
 * the /proc scan before it only finds processes of no run of ours, for which a snapshot will do):
 * `#held`, every uid a run of this runner holds from `take` until its reap is complete, and the
 * machine-wide claim files (claims.ts) for the other runners. A uid is never handed out while a run
 * holds it, even before that run's script has started (when no process shows it in use) — two runs
 * sharing a uid would share RLIMIT_NPROC and the first to finish would kill the other's processes.
 * The cursor starts at a random place, so runners (and restarts of one) do not all hand out the
 * same first uids.
 */
export class UidPool {
  private cursor: number;
  /**
   * Uids of this runner: `run` while a run holds one, `leftovers` when its run ended with processes
   * still left, `files` when its run's folder could not be removed (never handed out again by this runner).
   */
  readonly #held = new Map<number, 'run' | 'leftovers' | 'files'>();

  constructor(
    private readonly range: { first: number; last: number },
    private readonly exclude: readonly number[],
    private readonly claims?: UidClaims,
    /** Which uids have processes now (a parameter for the tests of the allocator). */
    private readonly inUse: () => Promise<Set<number>> | Set<number> = uidsWithProcesses,
  ) {
    this.cursor = randomInt(range.last - range.first + 1);
  }

  /** A uid, or undefined when every one is in use (for the start-up probe, which may do without). */
  async takeOrUndefined(): Promise<number | undefined> {
    try {
      return await this.take();
    } catch {
      return undefined;
    }
  }

  /** How many uids this runner holds now (runs in progress, and ended runs whose processes linger). */
  get holding(): number {
    return this.#held.size;
  }

  async take(): Promise<number> {
    const size = this.range.last - this.range.first + 1;
    const named = await namedIds();
    const busy = await this.inUse();
    // From here to the return, synchronous: the pick and the claim are one step.
    for (let i = 0; i < size; i++) {
      const uid = this.range.first + ((this.cursor + i) % size);
      if (named.has(uid) || this.exclude.includes(uid) || busy.has(uid)) continue;
      const mine = this.#held.get(uid);
      if (mine === 'run' || mine === 'files') continue;
      // Our claim file was kept while the ended run's processes lingered; they are gone now.
      if (mine === undefined && this.claims && !this.claims.tryClaim(uid)) continue;
      this.#held.set(uid, 'run');
      this.cursor = (this.cursor + i + 1) % size;
      return uid;
    }
    throw new SkillMcpError('BUSY', 'every uid of the run range is in use; try again when running scripts have ended');
  }

  /**
   * Gives `uid` back, once its run's reap is complete. Security: if a process of the uid is still
   * alive (a reap that gave up), the uid stays claimed — by this runner and machine-wide — and is
   * handed out again only once a later `take` finds nothing of it left. `emptied`: the caller saw
   * the run's cgroup killed and found empty — every process of the uid started inside it and none
   * can leave it, so the /proc pass is skipped (every `take` still makes its own).
   * Security: `filesLeft` — the run's folder could not be removed: the uid stays claimed for this
   * runner's life, so no later run owns (and can read or change) files a previous run left.
   */
  async release(uid: number, emptied = false, filesLeft = false): Promise<void> {
    if (this.#held.get(uid) !== 'run') return;
    if (filesLeft) {
      this.#held.set(uid, 'files');
      return;
    }
    let left: boolean;
    try {
      left = emptied ? false : (await this.inUse()).has(uid);
    } catch {
      left = true; // cannot tell: kept, and looked at again by the next take
    }
    if (this.#held.get(uid) !== 'run') return;
    if (left) {
      this.#held.set(uid, 'leftovers');
      return;
    }
    this.#held.delete(uid);
    try {
      this.claims?.release(uid);
    } catch {
      // the claim file stays; it names this live runner, so nobody else takes the uid meanwhile
    }
  }
}

/** How long a reap by uid may take after the run's main process is gone (then it is reported, audited). */
export const REAP_UID_DEADLINE_MS = 2000;

/**
 * Kills every process of `uid` and waits until none is left, for at most {@link REAP_UID_DEADLINE_MS}.
 * The fallback when the run has no cgroup (docs/isolation.md, "Reaping"); the uid is this run's
 * alone while it is claimed (uids/claims.ts), so its processes are the run's.
 * Security: a script that forked, called setsid, or left a daemon behind does not outlive its run;
 * `kill -KILL -1` sent *as that uid* reaches all of them at once, however fast they fork, and
 * reaches nothing of another uid. A pid from the /proc scan is only signalled through a pidfd
 * (never by number: the number may be reused by then), when koffi gives us pidfds.
 */
export async function reapUid(uid: number, setpriv: string, kill: string): Promise<{ killed: number; remaining: number }> {
  const deadline = Date.now() + REAP_UID_DEADLINE_MS;
  const pidfd = loadPidfdKiller();
  let killed = 0;
  for (;;) {
    const pids = processesOfUid(uid);
    if (pids.length === 0) return { killed, remaining: 0 };
    if (Date.now() >= deadline) return { killed, remaining: pids.length };
    killed = Math.max(killed, pids.length);
    for (const pid of pids) pidfd?.kill(pid, uid);
    const left = Math.max(100, deadline - Date.now());
    await new Promise<void>((resolve) => {
      execFile(setpriv, [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--', kill, '-KILL', '-1'], { timeout: left }, () =>
        resolve(),
      );
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
