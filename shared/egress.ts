/**
 * @module Egress entries (docs/architecture.md §4, §6): the destinations a skill says its scripts
 * reach, and the owner may grant. Three forms, each with an optional port: `host`, `host:port`,
 * `*.domain` (any name below `domain`, not `domain` itself). A host is a DNS name, an IPv4 address
 * in dotted decimal, or an IPv6 address in brackets. Without a port an entry means the web ports
 * (443 and 80). Pure: the declaration parser, the grant, the preview and the runner's proxy all
 * read entries with these functions, so what a person approves is what the proxy lets through.
 */
import { readHost } from './host-literal.js';

/** Ports an entry without `:port` allows: HTTPS and HTTP. */
export const DEFAULT_PORTS: readonly number[] = [443, 80];
/** More entries than this is not a list a person can review. */
export const MAX_EGRESS_ENTRIES = 64;

export interface EgressEntry {
  /** Lower-case name, dotted-quad IPv4, or canonical IPv6 (no brackets). For a wildcard: the domain below which names match. */
  host: string;
  wildcard: boolean;
  /** 4 or 6 for an address literal, 0 for a name. */
  ip: 0 | 4 | 6;
  /** The one port, or undefined for {@link DEFAULT_PORTS}. */
  port?: number;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; why: string };

export { canonicalIpv6 } from './host-literal.js';

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

function bracketed(host: string, ip: 0 | 4 | 6): string {
  return ip === 6 ? `[${host}]` : host;
}

/** The name rules (labels, length, not a number) for a host that did not read as an address. */
export function checkName(text: string, host: string): Parsed<{ host: string; ip: 0 | 4 | 6 }> {
  if (host.length === 0 || host.length > 253) return { ok: false, why: 'a host name is 1 to 253 characters' };
  const labels = host.split('.');
  if (!labels.every((label) => LABEL.test(label))) {
    return {
      ok: false,
      why: `${JSON.stringify(text)} is not a host name (letters, digits and "-" in dot-separated labels; write international names in their xn-- form; no trailing dot)`,
    };
  }
  if (/^(\d+|0x[0-9a-f]*)$/.test(labels[labels.length - 1]!)) {
    return {
      ok: false,
      why: `${JSON.stringify(text)} reads as a number, not a name; write an IPv4 address as four decimal numbers (127.0.0.1)`,
    };
  }
  return { ok: true, value: { host, ip: 0 } };
}

export const UNSPECIFIED =
  'is an unspecified address (0.0.0.0/8 or [::]): it names no peer and reaches this machine; write the address you mean (127.0.0.1 for this machine)';

/**
 * A host as an entry must write it: a name, a dotted-quad IPv4 or a bracketed IPv6.
 * Security: every other spelling of an address — numeric forms other than the dotted quad
 * (`0x7f.1`, `2130706433`, `0177.0.0.1`), IPv4 wrapped in IPv6 (`[::ffff:127.0.0.1]`), a zone id,
 * a trailing dot — is refused with the canonical text to write instead, so what a person reads in
 * a declaration is the one spelling every check knows; the unspecified addresses are refused.
 */
export function parseHost(text: string): Parsed<{ host: string; ip: 0 | 4 | 6 }> {
  const read = readHost(text);
  if (read === undefined) return { ok: false, why: `${JSON.stringify(text)} is not an IPv6 address` };
  if (read.unspecified) return { ok: false, why: `${JSON.stringify(text)} ${UNSPECIFIED}` };
  if (read.ip === 0 && read.spelled) return checkName(text, text.toLowerCase());
  if (read.spelled) {
    return {
      ok: false,
      why: `${JSON.stringify(text)} is the address ${bracketed(read.host, read.ip)} spelled another way; write ${bracketed(read.host, read.ip)} (an IPv4 address as four decimal numbers)`,
    };
  }
  return read.ip === 0 ? checkName(text, read.host) : { ok: true, value: { host: read.host, ip: read.ip } };
}

export function parsePort(text: string): number | undefined {
  if (!/^[1-9]\d{0,4}$/.test(text)) return undefined;
  const port = Number(text);
  return port <= 65535 ? port : undefined;
}

/** Splits `host:port` / `[v6]:port` / `host` (the port is optional). */
export function splitAuthority(text: string): { host: string; port?: string } {
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close === -1) return { host: text };
    const rest = text.slice(close + 1);
    return rest.startsWith(':') ? { host: text.slice(0, close + 1), port: rest.slice(1) } : { host: text };
  }
  const colon = text.lastIndexOf(':');
  if (colon === -1) return { host: text };
  // An unbracketed IPv6 address: its colons are not a port.
  if (text.indexOf(':') !== colon) return { host: text };
  return { host: text.slice(0, colon), port: text.slice(colon + 1) };
}

/** Parses one entry strictly; `why` names what is wrong and the accepted forms. */
export function parseEgressEntry(text: string): Parsed<EgressEntry> {
  const forms = 'write host, host:port or *.domain (e.g. api.example.com, 127.0.0.1:8080, *.example.com)';
  if (text === '*' || text.startsWith('*:')) return { ok: false, why: `${JSON.stringify(text)} would allow every host; ${forms}` };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text) || text.includes('/'))
    return { ok: false, why: `${JSON.stringify(text)} is a URL or a path; ${forms}` };
  const wildcard = text.startsWith('*.');
  const { host: hostText, port: portText } = splitAuthority(wildcard ? text.slice(2) : text);
  if (hostText.includes('*'))
    return { ok: false, why: `${JSON.stringify(text)}: "*" may only stand for the leading labels ("*.example.com")` };
  if (hostText.includes(':') && !hostText.startsWith('['))
    return { ok: false, why: `${JSON.stringify(text)}: write an IPv6 address in brackets ([2001:db8::1]:443)` };
  const host = parseHost(hostText);
  if (!host.ok) return { ok: false, why: host.why };
  let port: number | undefined;
  if (portText !== undefined) {
    port = parsePort(portText);
    if (port === undefined) return { ok: false, why: `${JSON.stringify(text)}: the port must be a number from 1 to 65535` };
  }
  if (wildcard) {
    if (host.value.ip !== 0) return { ok: false, why: `${JSON.stringify(text)}: "*." goes before a domain name, not an address` };
    if (!host.value.host.includes('.'))
      return { ok: false, why: `${JSON.stringify(text)} would allow a whole top-level domain; name the domain ("*.example.com")` };
  }
  return { ok: true, value: { host: host.value.host, ip: host.value.ip, wildcard, ...(port !== undefined ? { port } : {}) } };
}

/** The canonical text of an entry (lower case, IPv6 in brackets): how previews, grants and the audit name it. */
export function formatEgressEntry(entry: EgressEntry): string {
  const host = entry.ip === 6 ? `[${entry.host}]` : entry.host;
  return `${entry.wildcard ? '*.' : ''}${host}${entry.port !== undefined ? `:${entry.port}` : ''}`;
}

export function portsOf(entry: EgressEntry): readonly number[] {
  return entry.port !== undefined ? [entry.port] : DEFAULT_PORTS;
}

/**
 * Whether everything `narrower` lets through, `wider` lets through too: a grant entry counts only
 * when the declaration covers it, so a grant can narrow (`*.example.com` → `api.example.com:443`)
 * but never widen.
 */
export function entryCovers(wider: EgressEntry, narrower: EgressEntry): boolean {
  if (!portsOf(narrower).every((port) => portsOf(wider).includes(port))) return false;
  if (!wider.wildcard) return !narrower.wildcard && narrower.host === wider.host;
  if (narrower.ip !== 0) return false;
  return narrower.host.endsWith(`.${wider.host}`) || (narrower.wildcard && narrower.host === wider.host);
}

/** Parses a list of canonical entries (already validated); entries that do not parse are dropped. */
export function parseEgressList(list: readonly string[]): EgressEntry[] {
  return list.flatMap((text) => {
    const parsed = parseEgressEntry(text);
    return parsed.ok ? [parsed.value] : [];
  });
}

/**
 * What both entries let through, as one entry, or undefined when nothing is: the narrower host and
 * the common ports (`*.example.com:443` ∩ `api.example.com` = `api.example.com:443`). Security: the
 * result never lets through anything either side would refuse, so narrowing a secret's hosts by a
 * grant or by the run's egress can only shrink them.
 */
export function intersectEntries(a: EgressEntry, b: EgressEntry): EgressEntry | undefined {
  const ports = portsOf(a).filter((port) => portsOf(b).includes(port));
  if (ports.length === 0) return undefined;
  const port = a.port ?? b.port;
  let host: EgressEntry | undefined;
  if (!a.wildcard && !b.wildcard) host = a.host === b.host ? a : undefined;
  else if (a.wildcard && b.wildcard)
    host = b.host === a.host || b.host.endsWith(`.${a.host}`) ? b : a.host.endsWith(`.${b.host}`) ? a : undefined;
  else {
    const [wild, exact] = a.wildcard ? [a, b] : [b, a];
    host = exact.ip === 0 && exact.host.endsWith(`.${wild.host}`) ? exact : undefined;
  }
  if (host === undefined) return undefined;
  return { host: host.host, ip: host.ip, wildcard: host.wildcard, ...(port !== undefined ? { port } : {}) };
}

/** Every pairwise {@link intersectEntries} of two lists of canonical entries: canonical, without duplicates, sorted. */
export function intersectEgressLists(a: readonly string[], b: readonly string[]): string[] {
  const right = parseEgressList(b);
  const out = new Set<string>();
  for (const left of parseEgressList(a)) {
    for (const other of right) {
      const both = intersectEntries(left, other);
      if (both !== undefined) out.add(formatEgressEntry(both));
    }
  }
  return [...out].sort();
}
