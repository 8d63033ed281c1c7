/**
 * @module Which spent-token ledger this runner uses: the file ledger in the state directory by
 * default, the Redis ledger when `SKILL_MCP_REDIS_URL` is set (redis-open.ts: the Redis link
 * process it starts holds the client; docs/architecture.md §8, "The Redis link").
 */
import { SpentLedger } from './file.js';
import type { LedgerContext, OpenedLedger } from './types.js';
export type { LedgerContext, OpenedLedger } from './types.js';
import { readRedisSettings } from '../redis/options.js';
import { SkillMcpError } from '../../shared/errors.js';

export async function openLedger(ctx: LedgerContext): Promise<OpenedLedger> {
  // Read first: a malformed Redis setting stops the runner before anything else happens.
  const settings = readRedisSettings(ctx.env, ctx.auditPath);
  if (!settings) {
    const ledger = new SpentLedger(ctx.stateDir, Date.now());
    return { ledger, startFields: { ledger: 'file' }, close: () => ledger.close() };
  }
  const command = await ctx.redisLink();
  if ('why' in command)
    throw new SkillMcpError('BAD_REQUEST', `SKILL_MCP_REDIS_URL is set, but the Redis link cannot start here: ${command.why}`);
  const opened = await (await import('./redis-open.js')).openRedisLedger(settings, ctx, command);
  return {
    ...opened,
    async close() {
      await opened.close();
      await command.release?.();
    },
  };
}
