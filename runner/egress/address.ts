/**
 * @module Which addresses a run's proxy may connect to for a *name* (the SSRF guard). The proxy
 * resolves every name itself and checks the address it will actually connect to: an address on
 * this machine, a private network, a link-local or cloud-metadata address, or any other range
 * that is not the public internet is reached only when the egress entry names that address
 * literally. Pure: address text in, a kind out.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { formatEgressEntry, parseEgressEntry } from '../../shared/egress.js';

export type AddressKind = 'public' | 'loopback' | 'private' | 'link-local' | 'metadata' | 'unspecified' | 'multicast' | 'reserved';

/** IPv4 ranges that are not the public internet, most specific first (so metadata wins over link-local). */
const V4_RANGES: [string, number, AddressKind][] = [
  ['169.254.169.254', 32, 'metadata'], // AWS, GCP, Azure, OpenStack instance metadata
  ['100.100.100.200', 32, 'metadata'], // Alibaba Cloud metadata
  ['168.63.129.16', 32, 'metadata'], // Azure wire server (instance configuration)
  ['192.0.0.192', 32, 'metadata'], // Oracle Cloud metadata
  ['0.0.0.0', 8, 'unspecified'], // "this network": 0.0.0.0 reaches the local host on Linux
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'private'], // carrier-grade NAT (shared address space)
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'], // IETF protocol assignments
  ['192.0.2.0', 24, 'reserved'], // documentation
  ['192.88.99.0', 24, 'reserved'], // 6to4 relay anycast
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'reserved'], // benchmarking
  ['198.51.100.0', 24, 'reserved'],
  ['203.0.113.0', 24, 'reserved'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'], // includes 255.255.255.255
];

function v4Number(ip: string): number {
  return ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

function classifyV4(ip: string): AddressKind {
  const n = v4Number(ip);
  for (const [base, bits, kind] of V4_RANGES) {
    const size = 2 ** (32 - bits);
    const start = v4Number(base);
    if (n >= start && n < start + size) return kind;
  }
  return 'public';
}

/** The eight 16-bit groups of an IPv6 address (an embedded dotted IPv4 tail is converted). */
export function ipv6Groups(ip: string): number[] {
  let text = ip;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const n = v4Number(v4[1]!);
    text = `${text.slice(0, -v4[1]!.length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? (text.split('::') as [string, string]) : [text, undefined];
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const left = parse(head);
  if (tail === undefined) return left;
  const right = parse(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

function v4FromGroups(a: number, b: number): string {
  return [a >> 8, a & 0xff, b >> 8, b & 0xff].join('.');
}

function classifyV6(ip: string): AddressKind {
  const g = ipv6Groups(ip);
  const zeroes = (from: number, to: number): boolean => g.slice(from, to).every((x) => x === 0);
  if (zeroes(0, 8)) return 'unspecified';
  if (zeroes(0, 7) && g[7] === 1) return 'loopback';
  // Security: an IPv4 address wrapped in IPv6 (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d,
  // NAT64 64:ff9b::a.b.c.d, 6to4 2002:aabb:ccdd::) is judged by the IPv4 address inside, so
  // ::ffff:127.0.0.1 or 64:ff9b::169.254.169.254 is not "public".
  if (zeroes(0, 5) && (g[5] === 0xffff || g[5] === 0)) return classifyV4(v4FromGroups(g[6]!, g[7]!));
  if (g[0] === 0x64 && g[1] === 0xff9b && zeroes(2, 6)) return classifyV4(v4FromGroups(g[6]!, g[7]!));
  if (g[0] === 0x2002) return classifyV4(v4FromGroups(g[1]!, g[2]!));
  const first = g[0]!;
  if (first === 0xfd00 && g[1] === 0x0ec2 && zeroes(2, 7) && g[7] === 0x254) return 'metadata'; // AWS IPv6 metadata
  if ((first & 0xfe00) === 0xfc00) return 'private'; // unique local fc00::/7
  if ((first & 0xffc0) === 0xfe80) return 'link-local';
  if ((first & 0xffc0) === 0xfec0) return 'private'; // deprecated site-local
  if ((first & 0xff00) === 0xff00) return 'multicast';
  if (first === 0x2001 && g[1] === 0x0db8) return 'reserved'; // documentation
  if (first === 0x0100 && zeroes(1, 4)) return 'reserved'; // discard-only 100::/64
  if (first === 0x2001 && g[1]! < 0x0200) return 'reserved'; // IETF protocol assignments (Teredo, ORCHID…)
  return 'public';
}

/** The kind of an IP address; anything that is not an address at all is `reserved` (never connected to). */
export function classifyAddress(ip: string): AddressKind {
  if (isIPv4(ip)) return classifyV4(ip);
  // A zone index (fe80::1%eth0) names an interface, not a different address.
  const bare = ip.split('%')[0]!;
  if (isIPv6(bare)) return classifyV6(bare);
  return 'reserved';
}

/** What an address of each kind is, in the words of a preview. */
const KIND_WORDS: Partial<Record<AddressKind, string>> = {
  loopback: 'this machine (loopback)',
  private: 'a private network',
  'link-local': 'the local link',
  metadata: 'a cloud metadata service (it hands out instance credentials)',
  reserved: 'a reserved range',
  multicast: 'a multicast group',
};

/**
 * The preview's warning for entries naming an address that is not on the public internet, or
 * undefined. Security: entries are canonical (shared/egress.ts refuses every other spelling), so
 * `127.0.0.1` is warned about however the author first wrote it; a person approving
 * `169.254.169.254` is told it is the metadata service, not just shown four numbers.
 */
export function specialAddressWarning(entries: readonly string[]): string | undefined {
  const lines = entries.flatMap((text) => {
    const parsed = parseEgressEntry(text);
    if (!parsed.ok || parsed.value.ip === 0) return [];
    const words = KIND_WORDS[classifyAddress(parsed.value.host)];
    return words === undefined ? [] : [`${formatEgressEntry(parsed.value)} is ${words}`];
  });
  if (lines.length === 0) return undefined;
  return `The script may connect to addresses that are not on the public internet: ${lines.join('; ')}.`;
}
