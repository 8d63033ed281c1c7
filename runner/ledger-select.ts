/**
 * @module Which spent-token ledger this runner uses: the file ledger in the state directory by
 * default, the Redis ledger when `SKILL_MCP_REDIS_URL` is set (ledger-redis-open.ts, loaded only
 * then: a runner without Redis never parses the client library).
 */
import type { AuditLog } from './audit-log.js';
import { SpentLedger } from './ledger.js';
import type { TokenLedger } from './ledger-types.js';
import { readRedisSettings } from './redis-options.js';

export interface OpenedLedger {
  ledger: TokenLedger;
  /** Fields for `runner.start`. */
  startFields: Record<string, unknown>;
  /** Lets pending work finish (at most a moment), then closes connections. */
  close(): Promise<void>;
}

export interface LedgerContext {
  env: Readonly<Record<string, string | undefined>>;
  stateDir: string;
  auditPath: string;
  audit: AuditLog;
  log: (message: string) => void;
}

export async function openLedger(ctx: LedgerContext): Promise<OpenedLedger> {
  // Read first: a malformed Redis setting stops the runner before anything else happens.
  const settings = readRedisSettings(ctx.env, ctx.auditPath);
  if (!settings) {
    const ledger = new SpentLedger(ctx.stateDir, Date.now());
    return { ledger, startFields: { ledger: 'file' }, close: () => ledger.close() };
  }
  return (await import('./ledger-redis-open.js')).openRedisLedger(settings, ctx);
}
