/**
 * @module The durable spent-token ledger (docs/architecture.md §7), shared by every runner on one state directory
 * (standalone: one runner per `skill-mcp`, and the same `token.key`, so a token minted by one is
 * valid in all). One marker file per spent token, `spent/<jti>`, holding the token's expiry. Spending
 * is one atomic step across processes: the marker is written to a temp file, fsynced, then
 * hard-linked to its name — `link` fails with EEXIST when the name exists — so of two runners
 * spending one token at the same moment exactly one succeeds and the other refuses TOKEN_REUSED.
 * (A marker created O_EXCL and then written would be visible empty for a moment, and a pruner could
 * not tell it from junk.) The folder is fsynced before the script starts, so a spend survives a
 * crash. Markers are pruned PRUNE_GRACE_MS after their token expired (an expired token is refused on
 * its own), at start and at most every PRUNE_EVERY_MS. The single file of earlier versions,
 * `spent-tokens` (`<jti> <exp>` lines), is migrated to markers at start, then removed.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fsyncSync, linkSync, lstatSync, openSync, readdirSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { SkillMcpError } from '../../shared/errors.js';
import type { LedgerStatus, SpendOutcome, TokenLedger } from './types.js';
import { ensurePrivateDir, openPrivateFile, readNoFollow } from '../state.js';

/** A token id as the token schema allows it: the only thing ever used as a marker's file name. */
const JTI = /^[A-Za-z0-9_-]{16,64}$/;
/** Kept this long past expiry, so a run checked just before its token expired is never raced by a pruner. */
const PRUNE_GRACE_MS = 10 * 60_000;
const PRUNE_EVERY_MS = 60 * 60_000;
/** A marker whose expiry cannot be read is kept longer than any token lives (TTL ≤ 7 days). */
const UNREADABLE_KEEP_MS = 8 * 24 * 3600_000;
/** A spend's temp file exists for microseconds; an older one is a crashed runner's. */
const TEMP_KEEP_MS = 60 * 60_000;
const LEGACY_FILE = 'spent-tokens';

export type { SpendOutcome } from './types.js';

/** The folder's entries made durable. */
function fsyncDirSync(dir: string): void {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export class SpentLedger implements TokenLedger {
  private readonly dir: string;
  private lastPruneMs = 0;

  constructor(
    private readonly stateDir: string,
    nowMs: number,
  ) {
    this.dir = join(stateDir, 'spent');
    ensurePrivateDir(this.dir);
    this.migrateLegacy(nowMs);
    this.prune(nowMs);
  }

  private markerPath(jti: string): string {
    // Security: the id becomes a file name only if it is a token id — never a path from input.
    if (!JTI.test(jti)) throw new SkillMcpError('INTERNAL', 'not a token id');
    return join(this.dir, jti);
  }

  /** Whether any runner on this state directory spent the token (read from disk every time). */
  has(jti: string): boolean {
    try {
      lstatSync(this.markerPath(jti));
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw error;
    }
  }

  /**
   * Creates the marker atomically; false when it exists. Durable only after fsyncDirSync.
   *
   * Blocking on purpose, also on the request path: the whole spend (open, write, fsync, close, link,
   * unlink, then the folder's fsync) is about 0.35 ms of system calls on an idle ext4 disk
   * (bench/durable-floor.mjs). As promises, the same calls were seven trips through the libuv thread
   * pool, and the run's `spend` phase took twice as long as it does now (1.8–2.0 → 0.9–1.0 ms,
   * bench/run-floor.mjs side by side, docs in bench/RESULTS.md). Other requests wait that long.
   */
  private placeSync(jti: string, exp: number): boolean {
    const target = this.markerPath(jti);
    const tmp = join(this.dir, `.${jti}.${randomBytes(6).toString('hex')}.tmp`);
    const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      writeSync(fd, `${exp}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    return this.link(tmp, target);
  }

  /** Publishes the marker: `link` fails with EEXIST when the token is spent already. */
  private link(tmp: string, target: string): boolean {
    try {
      linkSync(tmp, target);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw error;
    } finally {
      unlinkSync(tmp);
    }
  }

  /**
   * Spends a token; returns only once the marker is on disk. Security: `reused` means another use
   * (in this runner or another) got there first, even by a microsecond: the caller must not run.
   * `expired` is decided here again, at the moment of spending, so a marker can never be pruned
   * (PRUNE_GRACE_MS after expiry) while a use of its token is still being decided.
   */
  spend(jti: string, exp: number, nowMs: number): Promise<SpendOutcome> {
    try {
      return Promise.resolve(this.spendSync(jti, exp, nowMs));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private spendSync(jti: string, exp: number, nowMs: number): SpendOutcome {
    if (exp <= nowMs) return 'expired';
    if (!this.placeSync(jti, exp)) return 'reused';
    fsyncDirSync(this.dir);
    if (nowMs - this.lastPruneMs > PRUNE_EVERY_MS) this.prune(nowMs);
    return 'spent';
  }

  status(): LedgerStatus {
    return { kind: 'file', available: true, errors: 0 };
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /** Removes markers well past their token's expiry, and crashed spends' temp files. */
  private prune(nowMs: number): void {
    this.lastPruneMs = nowMs;
    for (const name of readdirSync(this.dir)) {
      const path = join(this.dir, name);
      try {
        const st = lstatSync(path);
        let expired: boolean;
        if (JTI.test(name)) {
          const exp = st.isFile() ? Number(/^(\d{1,16})\n$/.exec(readNoFollow(path))?.[1] ?? NaN) : NaN;
          expired = Number.isSafeInteger(exp) ? exp + PRUNE_GRACE_MS < nowMs : st.mtimeMs + UNREADABLE_KEEP_MS < nowMs;
        } else {
          expired = name.endsWith('.tmp') && st.mtimeMs + TEMP_KEEP_MS < nowMs;
        }
        if (expired) unlinkSync(path);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error; // another runner pruned it first
      }
    }
  }

  /**
   * Security: tokens spent before the upgrade stay spent until they expire. The old file is removed
   * only after its entries are markers on disk; a crash before that migrates again (EEXIST is fine).
   */
  private migrateLegacy(nowMs: number): void {
    const path = join(this.stateDir, LEGACY_FILE);
    let text: string;
    try {
      const fd = openPrivateFile(path, constants.O_RDONLY);
      try {
        text = readFileSync(fd, 'utf8');
      } finally {
        closeSync(fd);
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return; // none, or another runner migrated it
      throw error;
    }
    for (const line of text.split('\n')) {
      const match = /^([A-Za-z0-9_-]{16,64}) (\d{1,16})$/.exec(line);
      if (match && Number(match[2]) + PRUNE_GRACE_MS > nowMs) this.placeSync(match[1]!, Number(match[2]));
    }
    fsyncDirSync(this.dir);
    for (const old of [path, `${path}.tmp`]) {
      try {
        unlinkSync(old);
      } catch {
        // already gone (another runner migrated it at the same moment)
      }
    }
    fsyncDirSync(this.stateDir);
  }
}
