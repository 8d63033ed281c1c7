/**
 * @module How the helper reads the destination a proxied request names (a CONNECT's `host:port`, a
 * plain-HTTP URL's host) and matches it to the run's entries. Request parsing lives here, in the run's
 * unprivileged helper, never in the runner (docs/architecture.md §8); the entries themselves are
 * shared/egress.ts, read the same way by the declaration, the grant and the preview.
 */
import { readHost } from '../../shared/host-literal.js';
import { checkName, parsePort, portsOf, splitAuthority, UNSPECIFIED } from '../../shared/egress.js';
import type { EgressEntry, Parsed } from '../../shared/egress.js';

/**
 * A host as a proxied request names it, normalised: any spelling of an address becomes the
 * address (so it meets the entries and the SSRF guard as itself), a trailing dot is dropped.
 * Security: normalised before the policy, never refused for its spelling alone, so no spelling
 * reaches an address the canonical text would not; the unspecified addresses are refused.
 */
export function parseRequestHost(text: string): Parsed<{ host: string; ip: 0 | 4 | 6 }> {
  const read = readHost(text);
  if (read === undefined) return { ok: false, why: `${JSON.stringify(text)} is not an IPv6 address` };
  if (read.unspecified) return { ok: false, why: `${JSON.stringify(text)} ${UNSPECIFIED}` };
  return read.ip === 0 ? checkName(text, read.host) : { ok: true, value: { host: read.host, ip: read.ip } };
}

/**
 * A destination a proxied request names: `host:port` of a CONNECT (the port is required), its
 * host normalised ({@link parseRequestHost}).
 */
export function parseDestination(authority: string): Parsed<{ host: string; ip: 0 | 4 | 6; port: number }> {
  const { host: hostText, port: portText } = splitAuthority(authority);
  const port = portText === undefined ? undefined : parsePort(portText);
  if (port === undefined) return { ok: false, why: `${JSON.stringify(authority)} is not host:port` };
  const host = parseRequestHost(hostText);
  return host.ok ? { ok: true, value: { ...host.value, port } } : host;
}

/** Whether `entry` lets a connection to `host` (canonical, as {@link parseHost} gives it) on `port` through. */
export function entryMatches(entry: EgressEntry, host: string, port: number): boolean {
  if (!portsOf(entry).includes(port)) return false;
  // Security: a wildcard matches names strictly below its domain, compared whole-label
  // ("*.example.com" never matches "evilexample.com" nor "example.com.evil.org").
  if (entry.wildcard) return host.endsWith(`.${entry.host}`);
  return host === entry.host;
}
