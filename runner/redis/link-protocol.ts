/**
 * @module What the runner and its Redis link process (runner/redis/link-main.ts) say to each other:
 * one msgpack value per frame on the link's stdin and stdout (shared/frame-codec.ts: a frame past
 * MAX_LINK_FRAME_BYTES is refused from its header, before its body is buffered). The runner trusts
 * nothing the link says: `readFromLink` checks each value by hand (every field's type, a closed
 * set of shapes) before the runner acts on it, and no text of the link's reaches a caller except a
 * short reason that passed `safeWhy`.
 */
import type { LedgerStatus, SpendOutcome } from '../ledger/types.js';

/** A frame either way is at most this long; the runner ends a link that announces a longer one. */
export const MAX_LINK_FRAME_BYTES = 8 * 1024 * 1024;

/** An audit line for the mirror: its seq, its prev hash and its exact text. */
export interface MirrorLine {
  seq: number;
  prev: string;
  line: string;
}

export type ToLink =
  | { op: 'has'; id: number; jti: string }
  | { op: 'spend'; id: number; jti: string; exp: number; now: number }
  | { op: 'take'; id: number; folder: string; waitMs: number }
  | { op: 'leave'; take: number }
  | { op: 'give'; take: number }
  | { op: 'poke' }
  | { op: 'lines'; id: number; lines: MirrorLine[] }
  | { op: 'close'; waitMs: number };

export type TakeAnswer = { ok: true } | { ok: false; why: 'busy' | 'left' } | { ok: false; why: 'down'; detail: string };

export type FromLink =
  | { event: 'ready'; connected: boolean; aof: boolean | 'unknown'; status: LedgerStatus }
  | { event: 'down'; why: string; status: LedgerStatus }
  | { event: 'up'; downMs: number; status: LedgerStatus }
  | { event: 'released'; jti: string }
  | { event: 'warning'; message: string }
  | { ask: 'lines'; id: number; after: number }
  | { id: number; ok: true; value: unknown; status: LedgerStatus }
  | { id: number; ok: false; why: string; unavailable: boolean; status: LedgerStatus };

/** The reasons runner/redis/connection.ts gives (reasonOf): an error code word, or one of its few phrases. */
const WHY = /^(?:[A-Z][A-Z0-9_]{1,63}|timeout|not connected|not connected yet|connection closed|error)$/;
const JTI = /^[A-Za-z0-9_-]{16,64}$/;
/** A warning is said on the runner's stderr: printable ASCII, bounded. */
const WARNING = /^[\x20-\x7e]{1,600}$/;

/** A short reason (an errno or TLS code, a server's error word, one of the link's phrases) or `error`: never free text. */
export function safeWhy(why: unknown): string {
  return typeof why === 'string' && WHY.test(why) ? why : 'error';
}

const isCount = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;

function statusOf(value: unknown): LedgerStatus | undefined {
  const s = value as { kind?: unknown; available?: unknown; errors?: unknown } | null;
  if (typeof s !== 'object' || s === null || s.kind !== 'redis' || typeof s.available !== 'boolean' || !isCount(s.errors)) return undefined;
  return { kind: 'redis', available: s.available, errors: s.errors };
}

/** What a spend or a take may answer, checked against what was asked. */
export function spendOutcome(value: unknown): SpendOutcome | undefined {
  return value === 'spent' || value === 'reused' || value === 'expired' ? value : undefined;
}

export function takeAnswer(value: unknown): TakeAnswer | undefined {
  const t = value as { ok?: unknown; why?: unknown; detail?: unknown } | null;
  if (typeof t !== 'object' || t === null) return undefined;
  if (t.ok === true) return { ok: true };
  if (t.ok !== false) return undefined;
  if (t.why === 'busy' || t.why === 'left') return { ok: false, why: t.why };
  if (t.why === 'down') return { ok: false, why: 'down', detail: safeWhy(t.detail) };
  return undefined;
}

/** One value from the link, checked; undefined when it is not one of the shapes above. */
export function readFromLink(value: unknown): FromLink | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const m = value as Record<string, unknown>;
  if ('id' in m && !('ask' in m)) {
    const status = statusOf(m['status']);
    if (!isCount(m['id']) || status === undefined) return undefined;
    if (m['ok'] === true) return { id: m['id'], ok: true, value: m['value'], status };
    if (m['ok'] === false && typeof m['unavailable'] === 'boolean')
      return { id: m['id'], ok: false, why: safeWhy(m['why']), unavailable: m['unavailable'], status };
    return undefined;
  }
  if (m['ask'] === 'lines') return isCount(m['id']) && isCount(m['after']) ? { ask: 'lines', id: m['id'], after: m['after'] } : undefined;
  const status = statusOf(m['status']);
  switch (m['event']) {
    case 'ready': {
      const aof = m['aof'];
      if (typeof m['connected'] !== 'boolean' || (typeof aof !== 'boolean' && aof !== 'unknown') || !status) return undefined;
      return { event: 'ready', connected: m['connected'], aof, status };
    }
    case 'down':
      return status ? { event: 'down', why: safeWhy(m['why']), status } : undefined;
    case 'up':
      return status && isCount(m['downMs']) ? { event: 'up', downMs: m['downMs'], status } : undefined;
    case 'released':
      return typeof m['jti'] === 'string' && JTI.test(m['jti']) ? { event: 'released', jti: m['jti'] } : undefined;
    case 'warning':
      return typeof m['message'] === 'string' && WARNING.test(m['message']) ? { event: 'warning', message: m['message'] } : undefined;
    default:
      return undefined;
  }
}
