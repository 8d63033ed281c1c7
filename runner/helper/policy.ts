/**
 * @module The decision for one proxied connection: may this run reach `host:port`, and at which
 * address. The destination must match one of the run's entries (declared ∩ granted); a name is
 * resolved here, by the runner — never by the script — and only a public address of it is used;
 * the proxy then connects to exactly that address, so a name cannot be re-resolved to somewhere
 * else between the check and the connection (DNS rebinding).
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { DEFAULT_PORTS, formatEgressEntry } from '../../shared/egress.js';
import { entryMatches, parseRequestHost } from './destination.js';
import type { EgressEntry } from '../../shared/egress.js';
import type { EgressRefusalReason } from '../../shared/protocol.js';
import { classifyAddress } from '../egress/address.js';

export interface ResolvedAddress {
  address: string;
  family: number;
}
/** Resolves a name to every address it has (injected so tests can pin the answers). */
export type Lookup = (host: string) => Promise<ResolvedAddress[]>;

export const systemLookup: Lookup = (host) => dnsLookup(host, { all: true, verbatim: true });

export type RefusalReason = Extract<EgressRefusalReason, 'not-allowed' | 'special-address' | 'unresolved' | 'bad-destination'>;

export type Decision =
  | { allowed: true; entry: string; address: string; family: 4 | 6 }
  | { allowed: false; reason: RefusalReason; status: 400 | 403 | 502; message: string };

/** How the destination would be written as an entry (what the person or the author would add). */
function suggestedEntry(host: string, ip: 0 | 4 | 6, port: number): string {
  const shown = ip === 6 ? `[${host}]` : host;
  return DEFAULT_PORTS.includes(port) ? shown : `${shown}:${port}`;
}

/**
 * Decides one destination. `hostText` is as the request wrote it (a name, an IPv4 number or `[v6]`).
 * Security: it is normalised first (shared/host-literal.ts), so `[::ffff:127.0.0.1]`, `0x7f.1` or
 * `127.0.0.1.` meets the entries and the guard as `127.0.0.1`, and `0.0.0.0` / `[::]` are refused.
 */
export async function decide(entries: readonly EgressEntry[], hostText: string, port: number, lookup: Lookup): Promise<Decision> {
  const parsed = parseRequestHost(hostText);
  if (!parsed.ok) return { allowed: false, reason: 'bad-destination', status: 400, message: `skill-mcp egress proxy: ${parsed.why}` };
  const { host, ip } = parsed.value;
  const shown = `${ip === 6 ? `[${host}]` : host}:${port}`;
  const entry = entries.find((e) => entryMatches(e, host, port));
  if (!entry) {
    const list = entries.map(formatEgressEntry).join(', ');
    return {
      allowed: false,
      reason: 'not-allowed',
      status: 403,
      message: `skill-mcp egress proxy: ${shown} is not an egress destination of this run (it may reach: ${list}). The entry "${suggestedEntry(host, ip, port)}" is missing: the skill's mcp-host.egress must list it and, when MCP_SKILL_RUN is set, the owner's grant for this script too; then the person approves the run again.`,
    };
  }
  // Security: an address literal is reached only through an entry naming that very address, so
  // `127.0.0.1:8080` in a declaration (shown to the person, granted) is the one way to loopback.
  if (ip !== 0) return { allowed: true, entry: formatEgressEntry(entry), address: host, family: ip };
  let addresses: ResolvedAddress[];
  try {
    addresses = await lookup(host);
  } catch (error) {
    return {
      allowed: false,
      reason: 'unresolved',
      status: 502,
      message: `skill-mcp egress proxy: ${host} does not resolve here (${(error as NodeJS.ErrnoException).code ?? 'lookup failed'})`,
    };
  }
  // Security: the SSRF guard — a name (whoever controls its DNS) never leads to this machine, a
  // private network, a link-local or cloud-metadata address; only a public address of it is used.
  const usable = addresses.find((a) => classifyAddress(a.address) === 'public');
  if (!usable) {
    const first = addresses[0];
    const what = first ? `${first.address} (${classifyAddress(first.address)})` : 'no address';
    return {
      allowed: false,
      reason: 'special-address',
      status: 403,
      message: `skill-mcp egress proxy: ${host} resolves to ${what}; a name never reaches loopback, private, link-local or metadata addresses. Only an entry naming the address itself (e.g. "${first ? suggestedEntry(first.address, first.family === 6 ? 6 : 4, port) : `address:${port}`}") allows it.`,
    };
  }
  return { allowed: true, entry: formatEgressEntry(entry), address: usable.address, family: usable.family === 6 ? 6 : 4 };
}
