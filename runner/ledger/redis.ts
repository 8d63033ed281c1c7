/**
 * @module The spent-token ledger in Redis (`SKILL_MCP_REDIS_URL`): one key per spent token,
 * `<prefix>spent:<jti>`, set only if absent and kept past the token's expiry, so a token runs once
 * across every runner that shares the Redis, whichever replica minted it (they share
 * `MCP_CONFIRM_SECRET`). Failure is closed: when Redis cannot answer, `has` and `spend` throw
 * LEDGER_UNAVAILABLE and nothing runs — never a local spend "for now", which another replica could
 * not see.
 *
 * A spend whose answer never came (a timeout, a connection lost mid-command) may or may not have
 * landed. Its run was refused, so the person's approval must not be burnt: each spend writes a
 * value only this runner knows, and an unsure one is released (deleted only if the key still holds
 * that value) as soon as Redis answers again; until then this runner itself treats the marker as
 * its own and may spend the token again.
 */
import { randomBytes } from 'node:crypto';
import { SkillMcpError } from '../../shared/errors.js';
import type { LedgerStatus, SpendOutcome, TokenLedger } from './types.js';
import { ledgerUnavailable } from './unavailable.js';
import { reasonOf, type RedisLink } from '../redis/connection.js';

/** Kept this long past expiry (as the file ledger keeps its markers): a late check never finds it gone. */
const KEEP_PAST_EXPIRY_MS = 10 * 60_000;
const RELEASE_EVERY_MS = 500;
/** Unsure spends remembered at most; beyond it the oldest is given up (its token stays spent: safe). */
const MAX_UNSURE = 10_000;
const JTI = /^[A-Za-z0-9_-]{16,64}$/;

/** Deletes an unsure earlier spend of ours, then sets the marker if absent. 1 = spent, 0 = someone's marker is there. */
const SPEND_LUA = `
if ARGV[3] ~= '' and redis.call('GET', KEYS[1]) == ARGV[3] then redis.call('DEL', KEYS[1]) end
if redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return 1 end
return 0`;
/** Deletes the marker only if it is still the unsure spend's own value. */
const RELEASE_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export class RedisLedger implements TokenLedger {
  #errors = 0;
  readonly #unsure = new Map<string, { value: string; exp: number }>();
  #releaser: NodeJS.Timeout | undefined;

  /** `onReleased` hears each unsure spend given back (for the audit log). */
  constructor(
    private readonly link: RedisLink,
    private readonly onReleased: (jti: string) => void = () => undefined,
  ) {}

  private key(jti: string): string {
    // Security: the id becomes part of a key only if it is a token id.
    if (!JTI.test(jti)) throw new SkillMcpError('INTERNAL', 'not a token id');
    return `${this.link.settings.prefix}spent:${jti}`;
  }

  private failed(error: unknown): SkillMcpError {
    this.#errors += 1;
    const why = reasonOf(error);
    this.link.markDown(why);
    return ledgerUnavailable(why);
  }

  async has(jti: string): Promise<boolean> {
    let value: string | null;
    try {
      value = await this.link.client.get(this.key(jti));
    } catch (error) {
      if (error instanceof SkillMcpError) throw error;
      throw this.failed(error);
    }
    this.link.markUp();
    // Our own unsure spend is not a use: that run was refused.
    return value !== null && value !== this.#unsure.get(jti)?.value;
  }

  async spend(jti: string, exp: number, nowMs: number): Promise<SpendOutcome> {
    if (exp <= nowMs) return 'expired';
    const key = this.key(jti);
    const value = `${this.link.settings.hostId} ${randomBytes(12).toString('hex')}`;
    const earlier = this.#unsure.get(jti)?.value ?? '';
    // Security: set-if-absent is the one atomic step between runners; the key outlives the token.
    const keepMs = exp - nowMs + KEEP_PAST_EXPIRY_MS;
    let reply: unknown;
    try {
      reply = await this.link.client.eval(SPEND_LUA, 1, key, value, String(keepMs), earlier);
    } catch (error) {
      this.remember(jti, value, exp);
      throw this.failed(error);
    }
    this.link.markUp();
    this.#unsure.delete(jti);
    return reply === 1 ? 'spent' : 'reused';
  }

  /** An unsure spend: released in the background as soon as Redis answers. */
  private remember(jti: string, value: string, exp: number): void {
    if (this.#unsure.size >= MAX_UNSURE) this.#unsure.delete(this.#unsure.keys().next().value!);
    this.#unsure.set(jti, { value, exp });
    this.#releaser ??= setInterval(() => void this.releaseUnsure(), RELEASE_EVERY_MS).unref();
  }

  private async releaseUnsure(): Promise<void> {
    if (this.link.client.status !== 'ready') return;
    for (const [jti, { value, exp }] of [...this.#unsure]) {
      // A token past its expiry can never run again: nothing to give back.
      if (exp <= Date.now()) {
        this.#unsure.delete(jti);
        continue;
      }
      let deleted: unknown;
      try {
        deleted = await this.link.client.eval(RELEASE_LUA, 1, this.key(jti), value);
      } catch {
        return; // still down; the next tick tries again
      }
      this.link.markUp();
      // Only if no new spend of ours replaced it meanwhile.
      if (this.#unsure.get(jti)?.value === value) this.#unsure.delete(jti);
      if (deleted === 1) this.onReleased(jti);
    }
    if (this.#unsure.size === 0) {
      clearInterval(this.#releaser);
      this.#releaser = undefined;
    }
  }

  status(): LedgerStatus {
    return { kind: 'redis', available: this.link.up, errors: this.#errors };
  }

  async close(): Promise<void> {
    clearInterval(this.#releaser);
    await this.link.close();
  }
}
