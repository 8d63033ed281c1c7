/**
 * @module The per-address cap of the HTTP front (`SKILL_MCP_HTTP_MAX_CONNECTIONS_PER_ADDRESS`):
 * whose connection or request this is, and how many each address holds. A direct client is its
 * socket's peer address. `X-Forwarded-For` names the client only when the peer is one of the
 * configured proxies (`SKILL_MCP_HTTP_TRUSTED_PROXIES`): then the client is the rightmost entry
 * that is not itself a trusted proxy (each proxy appends the address it saw; entries left of a
 * hop we do not trust are whatever the client wrote).
 */
import { isIP } from 'node:net';

/** One spelling per address: lowercase, IPv4-mapped IPv6 (`::ffff:1.2.3.4`) as the IPv4 address. */
export function normaliseAddress(address: string): string {
  const lower = address.trim().toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  return mapped ? mapped[1]! : lower;
}

/**
 * The client's address for the cap. Security: a header is believed only from a configured proxy —
 * from anyone else it is ignored, or any client could spread its connections over made-up
 * addresses (or pin a victim's address to the cap).
 */
export function clientAddress(peer: string, forwardedFor: string | string[] | undefined, trusted: ReadonlySet<string>): string {
  const from = normaliseAddress(peer);
  if (!trusted.has(from) || forwardedFor === undefined) return from;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',').map((hop) => normaliseAddress(hop));
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!;
    // A malformed entry ends the chain: what stands left of it cannot be told apart from a forgery.
    if (isIP(hop) === 0) return from;
    if (!trusted.has(hop)) return hop;
  }
  return from;
}

/** How many connections (or, through a trusted proxy, requests) each address holds now. */
export class AddressCounts {
  readonly #counts = new Map<string, number>();

  constructor(readonly max: number) {}

  /** Counts one more for `address`; false (nothing counted) when it already holds `max`. */
  tryAdd(address: string): boolean {
    const now = this.#counts.get(address) ?? 0;
    if (now >= this.max) return false;
    this.#counts.set(address, now + 1);
    return true;
  }

  remove(address: string): void {
    const now = this.#counts.get(address) ?? 0;
    if (now <= 1) this.#counts.delete(address);
    else this.#counts.set(address, now - 1);
  }
}

/** The refusal's words: what happened, which setting, what to do. */
export function overCapMessage(max: number): string {
  return `Too many connections: this address already holds ${max}, the most one address may hold (SKILL_MCP_HTTP_MAX_CONNECTIONS_PER_ADDRESS); close one and retry`;
}
