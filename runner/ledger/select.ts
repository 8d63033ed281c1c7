/**
 * @module Which spent-token ledger this runner uses: the file ledger in the state directory by
 * default, the Redis ledger when `SKILL_MCP_REDIS_URL` is set (redis-open.ts, loaded only
 * then: a runner without Redis never parses the client library).
 */
import { SpentLedger } from './file.js';
import type { LedgerContext, OpenedLedger } from './types.js';
export type { LedgerContext, OpenedLedger } from './types.js';
import { readRedisSettings } from '../redis/options.js';

export async function openLedger(ctx: LedgerContext): Promise<OpenedLedger> {
  // Read first: a malformed Redis setting stops the runner before anything else happens.
  const settings = readRedisSettings(ctx.env, ctx.auditPath);
  if (!settings) {
    const ledger = new SpentLedger(ctx.stateDir, Date.now());
    return { ledger, startFields: { ledger: 'file' }, close: () => ledger.close() };
  }
  return (await import('./redis-open.js')).openRedisLedger(settings, ctx);
}
