/**
 * @module The helper's side of a run's trust (docs/secrets-proxy.md, "The bundle"): the bundle the
 * run trusts (the system CAs, then the run's own CA) written where the run's sandbox binds it
 * read-only, and the context the helper checks bound hosts' certificates against.
 *
 * Security: the bundle holds certificates only; the run CA's key never leaves the helper's memory.
 */
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { createSecureContext, rootCertificates } from 'node:tls';
import type { SecureContext } from 'node:tls';

/** Distro bundles of the system CAs, first found wins (Debian/Ubuntu, Fedora/RHEL, openSUSE, Alpine). */
const SYSTEM_BUNDLES = [
  '/etc/ssl/certs/ca-certificates.crt',
  '/etc/pki/tls/certs/ca-bundle.crt',
  '/etc/ssl/ca-bundle.pem',
  '/etc/ssl/cert.pem',
];

/**
 * The system CAs as PEM: the distro's bundle when there is one (what the runner's machine trusts;
 * Node 20 has no `tls.getCACertificates('system')`), else Node's own Mozilla list.
 */
export function systemCaPem(read: (path: string) => string = (path) => readFileSync(path, 'utf8')): string {
  for (const path of SYSTEM_BUNDLES) {
    try {
      const text = read(path);
      if (text.includes('-----BEGIN CERTIFICATE-----')) return text.endsWith('\n') ? text : `${text}\n`;
    } catch {
      // Not this distro's path; the next one.
    }
  }
  return `${rootCertificates.join('\n')}\n`;
}

/** Writes the run's bundle (system CAs, then the run CA), readable by the run's uid; returns its path. */
export function writeCaBundle(path: string, runCaPem: string, systemPem: string = systemPemOnce()): string {
  // 0644: the run (its own uid as root) reads it through a read-only bind, never changes it.
  // chmod: the helper's umask would leave it 0600.
  writeFileSync(path, `${systemPem}${runCaPem}`, { mode: 0o644, flag: 'wx' });
  chmodSync(path, 0o644);
  return path;
}

/**
 * What the helper verifies bound hosts against: the operator's CA file's certificates (read by the
 * runner and sent in `start`), else the system CAs. Parsing ~140 system CAs costs ~35 ms, so a spare
 * helper makes the system one before it is given a run ({@link warmUpstreamContext}).
 */
export function upstreamContext(pem: string | undefined): SecureContext {
  if (pem !== undefined) return createSecureContext({ ca: pem });
  systemContext ??= createSecureContext({ ca: systemPemOnce() });
  return systemContext;
}

let systemContext: SecureContext | undefined;
let systemPem: string | undefined;

/** The system CAs' text, read once per helper (a spare reads it while it waits; each run's bundle starts with it). */
function systemPemOnce(): string {
  systemPem ??= systemCaPem();
  return systemPem;
}

/** Makes the system CAs' context ahead of the run (a spare helper's idle time). */
export function warmUpstreamContext(): void {
  upstreamContext(undefined);
}
