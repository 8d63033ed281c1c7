/**
 * @module One writer at a time across replicas (docs/isolation.md, "Data folders"): when runners
 * share a Redis (`SKILL_MCP_REDIS_URL`), a run also takes its folder's turn there — a key
 * `<prefix>data:<sha256 of the folder>` set only if absent, holding a value only this take knows,
 * deleted only by it. A runner that dies holding one leaves it to expire after the longest a run
 * can last. Failure is closed: when Redis cannot answer, no run of a data folder starts.
 */
import { createHash, randomBytes } from 'node:crypto';
import { SHARED_TURN_MS } from '../../shared/limits.js';
import type { SharedTake, TurnTaker } from '../ledger/types.js';
import { reasonOf, type RedisLink } from '../redis/connection.js';

const RETRY_MS = 100;
/** Deletes the key only if it still holds this take's value. */
const GIVE_LUA = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

export class SharedTurns implements TurnTaker {
  constructor(private readonly link: RedisLink) {}

  /** The folder's turn, waiting up to `waitMs` (another replica's run holds it), or why not. */
  async take(folder: string, leave: AbortSignal, waitMs: number): Promise<SharedTake> {
    const key = `${this.link.settings.prefix}data:${createHash('sha256').update(folder).digest('hex')}`;
    const value = randomBytes(16).toString('hex');
    const deadline = Date.now() + waitMs;
    for (;;) {
      let set: string | null;
      try {
        set = await this.link.client.set(key, value, 'PX', SHARED_TURN_MS, 'NX');
      } catch (error) {
        return { ok: false, why: 'down', detail: reasonOf(error) };
      }
      if (set === 'OK')
        return {
          ok: true,
          // Never throws: a turn that cannot be given back expires by itself.
          give: () =>
            this.link.client.eval(GIVE_LUA, 1, key, value).then(
              () => undefined,
              () => undefined,
            ),
        };
      if (leave.aborted) return { ok: false, why: 'left' };
      if (Date.now() >= deadline) return { ok: false, why: 'busy' };
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  }
}
