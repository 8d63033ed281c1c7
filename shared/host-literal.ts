/**
 * @module The one reading of a host an egress entry or a proxied request names: every spelling of
 * an address becomes the one text the policy compares and classifies. IPv4 numbers in any of the
 * forms inet_aton(3) and URL parsers accept (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`), an
 * IPv4 address wrapped in IPv6 (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`), a zone id
 * (`fe80::1%eth0`, `%25eth0` as URLs escape it) and a trailing dot on a name are all reduced to the
 * canonical address or name, and `spelled` says the text was not already that. Pure: text in,
 * normalised host out.
 *
 * Security: without this, `0.0.0.0`, `[::ffff:127.0.0.1]` or `0x7f.1` would be a different string
 * from `127.0.0.1` and escape every check written for that address (the preview's warning, the
 * SSRF guard's classification), while the kernel connects to the very same place.
 */

export interface HostReading {
  /** Lower-case name without a trailing dot, dotted-quad IPv4, or canonical IPv6 (no brackets, no zone). */
  host: string;
  /** 4 or 6 for an address, 0 for a name. */
  ip: 0 | 4 | 6;
  /** True when the text was not already the canonical spelling (ignoring letter case). */
  spelled: boolean;
  /** True for the unspecified addresses (0.0.0.0/8, `::`): they reach this machine, never a peer. */
  unspecified: boolean;
}

/** One inet_aton part: decimal, 0-prefixed octal or 0x-prefixed hex. */
const PART = /^(?:0x[0-9a-f]+|0[0-7]*|[1-9][0-9]*)$/;

/** inet_aton's reading (1 to 4 parts, the last filling the remaining bytes) as a dotted quad, or undefined. */
export function ipv4Number(text: string): string | undefined {
  const parts = text.split('.');
  if (parts.length < 1 || parts.length > 4 || !parts.every((p) => PART.test(p))) return undefined;
  const values = parts.map((p) =>
    p.startsWith('0x') ? Number.parseInt(p.slice(2), 16) : p.length > 1 && p.startsWith('0') ? Number.parseInt(p, 8) : Number(p),
  );
  const last = values.pop()!;
  if (values.some((v) => v > 255) || last >= 256 ** (4 - values.length)) return undefined;
  let n = last;
  values.forEach((v, i) => {
    n += v * 256 ** (3 - i);
  });
  return [n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff].join('.');
}

/** Canonical IPv6 text (WHATWG URL's serializer), or undefined when `text` is not an IPv6 address. */
export function canonicalIpv6(text: string): string | undefined {
  if (!/^[0-9a-fA-F:.]+$/.test(text) || !text.includes(':')) return undefined;
  try {
    return new URL(`http://[${text}]/`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
}

/** The eight groups of a canonical IPv6 text (as {@link canonicalIpv6} gives it: hex groups, at most one `::`). */
function groups(v6: string): number[] {
  const [head, tail] = v6.includes('::') ? (v6.split('::') as [string, string]) : [v6, undefined];
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const left = parse(head);
  if (tail === undefined) return left;
  const right = parse(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/**
 * The IPv4 address an IPv6 address carries as mapped (`::ffff:0:0/96`) or compatible (`::/96`,
 * except `::` and `::1`, which are IPv6's own), or undefined. These two reach the IPv4 host itself
 * on a dual-stack socket; other embeddings (NAT64, 6to4) go through a gateway and stay IPv6 (the
 * classifier still judges them by the address inside).
 */
function embeddedIpv4(v6: string): string | undefined {
  const g = groups(v6);
  if (!g.slice(0, 5).every((x) => x === 0)) return undefined;
  if (g[5] !== 0xffff && g[5] !== 0) return undefined;
  if (g[5] === 0 && g[6] === 0 && (g[7] === 0 || g[7] === 1)) return undefined;
  return [g[6]! >> 8, g[6]! & 0xff, g[7]! >> 8, g[7]! & 0xff].join('.');
}

function v4Reading(host: string, spelled: boolean): HostReading {
  return { host, ip: 4, spelled, unspecified: host.startsWith('0.') };
}

/**
 * Reads a host as written in an entry or a request: `[v6]` (brackets required for IPv6), an IPv4
 * number, or a name. A name is returned lower-cased and without one trailing dot but is not
 * otherwise checked here (the entry rules in shared/egress.ts do that). Undefined: bracketed text
 * that is no IPv6 address.
 */
export function readHost(text: string): HostReading | undefined {
  const lower = text.toLowerCase();
  if (lower.startsWith('[') && lower.endsWith(']')) {
    const inner = lower.slice(1, -1);
    // A zone id (RFC 6874 writes `%25` in URLs) names the interface to use, not another address.
    const zone = inner.indexOf('%');
    const bare = zone === -1 ? inner : inner.slice(0, zone);
    const v6 = canonicalIpv6(bare);
    if (v6 === undefined) return undefined;
    const v4 = embeddedIpv4(v6);
    if (v4 !== undefined) return v4Reading(v4, true);
    return { host: v6, ip: 6, spelled: zone !== -1, unspecified: v6 === '::' };
  }
  const dotless = lower.endsWith('.') && lower.length > 1 ? lower.slice(0, -1) : lower;
  const v4 = ipv4Number(dotless);
  if (v4 !== undefined) return v4Reading(v4, v4 !== lower);
  return { host: dotless, ip: 0, spelled: dotless !== lower, unspecified: false };
}
