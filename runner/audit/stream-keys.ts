/**
 * @module Where the audit lines of every runner sharing a Redis meet: one stream,
 * `<prefix>audit`, whose entries are `host`, `seq` and `line` (the exact bytes of the line in that
 * host's own log, so its hash chain can be checked from the stream), and one hash,
 * `<prefix>audit:heads`, holding each host's last mirrored `seq sha256` — the stream's anchor.
 */
import { GENESIS_PREV } from './log.js';

export function streamKeys(prefix: string): { stream: string; heads: string } {
  return { stream: `${prefix}audit`, heads: `${prefix}audit:heads` };
}

/**
 * Appends one host's next line, atomically with its head. 1 appended, 0 already there (another
 * runner writing the same log mirrored it first), -1 the line does not continue the host's chain
 * in the stream (the local log was replaced or the host id is used by another log): refused.
 */
export const APPEND_LUA = `
local head = redis.call('HGET', KEYS[2], ARGV[1])
local seq, sha = 0, '${GENESIS_PREV}'
if head then
  local space = string.find(head, ' ', 1, true)
  seq = tonumber(string.sub(head, 1, space - 1))
  sha = string.sub(head, space + 1)
end
local n = tonumber(ARGV[2])
if n <= seq then return 0 end
if n ~= seq + 1 or ARGV[3] ~= sha then return -1 end
redis.call('XADD', KEYS[1], '*', 'host', ARGV[1], 'seq', ARGV[2], 'line', ARGV[4])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2] .. ' ' .. ARGV[5])
return 1`;

/** A head as stored: `seq sha256`. */
export function parseHead(raw: string | null | undefined): { seq: number; sha256: string } | undefined {
  const match = /^(\d{1,15}) ([0-9a-f]{64})$/.exec(raw ?? '');
  return match ? { seq: Number(match[1]), sha256: match[2]! } : undefined;
}
