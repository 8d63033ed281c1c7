/**
 * @module Mirrors this runner's audit log into the shared Redis stream (runner/audit/stream-keys.ts), so
 * `skill-mcp audit tail|verify --redis` see every host. The local log stays the record: the mirror
 * reads it back and copies every line after the host's head in the stream, in order, each append
 * checked against the chain in Redis. So lines written while Redis was away (the `ledger.unavailable`
 * line among them) arrive once it is back, two runners sharing one log never copy a line twice, and
 * nothing is lost or reordered by a failed send: it is simply sent again from the log.
 *
 * It runs in the Redis link process (runner/redis/link-main.ts), which cannot read the log: the
 * lines come from `source`, which asks the runner (runner/audit/mirror-source.ts reads them).
 */
import { lineHash } from './chain.js';
import { APPEND_LUA, parseHead, streamKeys } from './stream-keys.js';
import type { RedisLink } from '../redis/connection.js';
import type { MirrorLine } from '../redis/link-protocol.js';

/** Lines sent per round trip. */
const BATCH_LINES = 200;

export class AuditMirror {
  #running: Promise<void> | undefined;
  #again = false;
  #divergedWarned = false;

  constructor(
    private readonly link: RedisLink,
    /** The log's lines after a seq, in order (at most a batch of them; none when there are no more). */
    private readonly source: (after: number) => Promise<MirrorLine[]>,
    private readonly warn: (message: string) => void,
  ) {}

  /** Asks for a copy of whatever is new; rounds coalesce, and a failed round waits for the next poke. */
  poke(): void {
    if (this.#running !== undefined) {
      this.#again = true;
      return;
    }
    this.#running = this.sync()
      .catch(() => undefined) // Redis is away: the ledger reports it; the next poke sends again
      .finally(() => {
        this.#running = undefined;
        if (this.#again) {
          this.#again = false;
          this.poke();
        }
      });
  }

  /** Resolves when the current round (if any) is done: for an orderly stop. */
  async idle(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  private async sync(): Promise<void> {
    const { client, settings } = this.link;
    if (client.status !== 'ready') return;
    const keys = streamKeys(settings.prefix);
    const head = parseHead(await client.hget(keys.heads, settings.hostId)) ?? { seq: 0, sha256: '' };
    let after = head.seq;
    for (;;) {
      const lines = (await this.source(after)).filter((l) => l.seq > after);
      if (lines.length === 0) return;
      if (!(await this.append(lines))) return;
      after = lines.at(-1)!.seq;
    }
  }

  /** Appends lines in order; false once the stream refuses one (said once). */
  private async append(lines: MirrorLine[]): Promise<boolean> {
    const { client, settings } = this.link;
    const keys = streamKeys(settings.prefix);
    for (let i = 0; i < lines.length; i += BATCH_LINES) {
      const batch = lines.slice(i, i + BATCH_LINES);
      const pipeline = client.pipeline();
      for (const l of batch)
        pipeline.eval(APPEND_LUA, 2, keys.stream, keys.heads, settings.hostId, String(l.seq), l.prev, l.line, lineHash(l.line));
      const replies = (await pipeline.exec()) ?? [];
      for (const [j, [error, reply]] of replies.entries()) {
        if (error) throw error;
        const l = batch[j]!;
        if (reply === -1) {
          if (!this.#divergedWarned) {
            this.#divergedWarned = true;
            this.warn(
              `audit line seq ${l.seq} does not continue the chain the Redis stream holds for host id ${settings.hostId}: this log was replaced, or another log uses that host id; it is no longer mirrored (set SKILL_MCP_AUDIT_HOST_ID to a new id, or delete the host's head from ${keys.heads})`,
            );
          }
          return false;
        }
      }
    }
    return true;
  }
}
