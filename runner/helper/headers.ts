/**
 * @module Which headers of a proxied message go on to the next hop: none of those that belong to
 * one hop only (RFC 9110 §7.6.1) and none its Connection header names. Shared by the proxy's
 * plain-HTTP path and the intercepting path (intercept.ts). Pure.
 */

/** Headers that belong to one hop (the script ↔ proxy, or the proxy ↔ destination), never forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'proxy-connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Headers of a message (Node's `rawHeaders`) minus hop-by-hop ones, those its Connection header names, and Host. */
export function forwardable(raw: readonly string[]): [string, string][] {
  const named = new Set<string>();
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() === 'connection') for (const n of raw[i + 1]!.split(',')) named.add(n.trim().toLowerCase());
  }
  const out: [string, string][] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (!HOP_BY_HOP.has(name) && !named.has(name) && name !== 'host') out.push([raw[i]!, raw[i + 1]!]);
  }
  return out;
}
