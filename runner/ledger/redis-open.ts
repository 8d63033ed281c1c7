/**
 * @module The Redis ledger and its audit-stream mirror, wired to the runner: losses and returns
 * of Redis are said in the audit log and on stderr, each once; every audit line is also copied to
 * the shared stream; an unsure spend given back is recorded as `token.released`.
 */
import { jtiLogId } from '../../shared/token.js';
import { AuditMirror } from '../audit/mirror.js';
import { RedisLedger } from './redis.js';
import { SharedTurns } from '../data/shared-turns.js';
import type { LedgerContext, OpenedLedger } from './types.js';
import { RedisLink, type LinkChange } from '../redis/connection.js';
import type { RedisSettings } from '../redis/options.js';

/** How long an orderly stop waits for the mirror's last round and the QUIT. */
const CLOSE_WAIT_MS = 2000;

/** Whether Redis keeps an append-only file (else a Redis restart forgets spent tokens). */
async function aofEnabled(link: RedisLink): Promise<boolean | 'unknown'> {
  try {
    const info = await link.client.info('persistence');
    const match = /^aof_enabled:(\d)/m.exec(info);
    return match ? match[1] === '1' : 'unknown';
  } catch {
    return 'unknown';
  }
}

export async function openRedisLedger(settings: RedisSettings, ctx: LedgerContext): Promise<OpenedLedger> {
  const { audit, log } = ctx;
  const redis = settings.target.display;
  // The link's callbacks are synchronous, so these lines are not awaited: AuditLog.append never
  // rejects (a line it cannot write now waits in its queue, and the log reports its own outage).
  const onChange = (change: LinkChange): void => {
    if (change.up) {
      log(`the spent-token ledger at ${redis} is reachable again (after ${change.downMs} ms); runs go on`);
      void audit.append({ event: 'ledger.restored', ledger: 'redis', redis, down_ms: change.downMs });
    } else {
      log(
        `the spent-token ledger at ${redis} cannot be reached (${change.why}): every run is refused LEDGER_UNAVAILABLE until it is back (reconnecting by itself)`,
      );
      void audit.append({ event: 'ledger.unavailable', ledger: 'redis', redis, why: change.why });
    }
  };
  const link = await RedisLink.open(settings, onChange);
  const mirror = new AuditMirror(link, ctx.auditPath, (message) => log(`warning: ${message}`));
  audit.afterAppend = () => mirror.poke();
  // Lines written while Redis was away are copied once it is back.
  link.client.on('ready', () => mirror.poke());
  const ledger = new RedisLedger(link, (jti) => {
    // The id as every other audit line gives it: a hash of the token's id, never the token.
    void audit.append({ event: 'token.released', token_id: jtiLogId(jti) });
  });
  const connected = await link.start();
  const aof = connected ? await aofEnabled(link) : 'unknown';
  if (aof === false)
    log(
      `warning: ${redis} keeps no append-only file (appendonly no): if Redis restarts, the tokens it recorded as spent could run again until they expire; run it with appendonly yes (docs/hosting.md)`,
    );
  return {
    ledger,
    dataTurns: new SharedTurns(link),
    startFields: { ledger: 'redis', redis, redis_connected: connected, redis_aof: aof, audit_host_id: settings.hostId },
    async close() {
      const closing = mirror.idle().then(() => ledger.close());
      await Promise.race([closing, new Promise((resolve) => setTimeout(resolve, CLOSE_WAIT_MS).unref())]);
    },
  };
}
