/**
 * @module The spent-token ledger's contract (docs/architecture.md §7), met by the file ledger
 * (`file.ts`, the default: one state directory) and the Redis ledger (`redis.ts`: every
 * runner sharing one Redis). The runner asks `has` before it believes a token's expiry and `spend`
 * right before a script starts; only `spend` decides.
 */
import type { AuditLog } from '../audit/log.js';

export type SpendOutcome = 'spent' | 'reused' | 'expired';

/** A data folder's turn taken in Redis, or why not (runner/data/shared-turns.ts). */
export type SharedTake =
  | { ok: true; give: () => Promise<void> }
  | { ok: false; why: 'busy' | 'left' }
  | { ok: false; why: 'down'; detail: string };

/** Takes a data folder's turn shared with the other replicas, waiting up to `waitMs`. */
export interface TurnTaker {
  take(folder: string, leave: AbortSignal, waitMs: number): Promise<SharedTake>;
}

/** What `describe` and the metrics say about the ledger (never where it is or how to log in). */
export interface LedgerStatus {
  kind: 'file' | 'redis';
  /** False while the ledger cannot be reached: every run is refused LEDGER_UNAVAILABLE. */
  available: boolean;
  /** Ledger operations that failed since the runner started (timeouts, lost connections). */
  errors: number;
}

export interface TokenLedger {
  /**
   * Whether any runner sharing this ledger spent the token. Throws a SkillMcpError with code
   * LEDGER_UNAVAILABLE when that cannot be known.
   */
  has(jti: string): boolean | Promise<boolean>;
  /**
   * Spends a token; resolves only once the spend is durable where the ledger keeps it.
   * Security: `reused` means another use got there first — the caller must not run. Throws
   * LEDGER_UNAVAILABLE when the outcome is not known; the token must then not run, and the
   * ledger must not keep it spent (a refused run never burns a person's approval).
   */
  spend(jti: string, exp: number, nowMs: number): SpendOutcome | Promise<SpendOutcome>;
  status(): LedgerStatus;
  close(): Promise<void>;
}

/** What opening a ledger gives the runner (ledger/select.ts). */
export interface OpenedLedger {
  ledger: TokenLedger;
  /** Fields for `runner.start`. */
  startFields: Record<string, unknown>;
  /** Lets pending work finish (at most a moment), then closes connections. */
  close(): Promise<void>;
  /** With Redis: data folders' turns shared with the other replicas (runner/data/shared-turns.ts). */
  dataTurns?: TurnTaker;
}

export interface LedgerContext {
  env: Readonly<Record<string, string | undefined>>;
  /**
   * How to start the Redis link process (runner/redis/link-main.ts), asked only when Redis is
   * configured: as root it takes a uid of the run range, held until `close`.
   */
  redisLink: () => Promise<{ command: string; args: string[]; release?: () => Promise<void> } | { why: string }>;
  stateDir: string;
  auditPath: string;
  audit: AuditLog;
  log: (message: string) => void;
}
