/**
 * @module What a run with secret bindings trusts (docs/secrets-proxy.md, "The bundle"): a file of
 * the system CAs plus the run's own CA, written in the run's folder, bound read-only into the
 * sandbox at {@link CA_BUNDLE_MOUNT}, and named by the variables Python, Node, pip and curl read.
 * Also what the runner's proxy itself trusts upstream: the system CAs, or the file named by
 * `SKILL_MCP_EGRESS_CA_FILE` in the runner's own environment.
 *
 * Security: the bundle holds certificates only (the run CA's key never leaves the runner's
 * memory), and the variables naming it are never grantable (shared/declaration.ts), so a skill
 * cannot point them elsewhere or at a CA of its own.
 */
import { X509Certificate } from 'node:crypto';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { createSecureContext, rootCertificates } from 'node:tls';
import type { SecureContext } from 'node:tls';

/** Where the bundle appears inside the sandbox (beside the egress socket). */
export const CA_BUNDLE_MOUNT = '/run/skill-mcp/ca-bundle.pem';

/** The variables a run with bindings gets, each naming {@link CA_BUNDLE_MOUNT}. */
export const CA_BUNDLE_VARIABLES = ['SSL_CERT_FILE', 'REQUESTS_CA_BUNDLE', 'NODE_EXTRA_CA_CERTS', 'PIP_CERT', 'CURL_CA_BUNDLE'] as const;

/** Distro bundles of the system CAs, first found wins (Debian/Ubuntu, Fedora/RHEL, openSUSE, Alpine). */
const SYSTEM_BUNDLES = [
  '/etc/ssl/certs/ca-certificates.crt',
  '/etc/pki/tls/certs/ca-bundle.crt',
  '/etc/ssl/ca-bundle.pem',
  '/etc/ssl/cert.pem',
];

/** The variables of a run with bindings (none without). */
export function caBundleEnv(hasBindings: boolean): Record<string, string> {
  return hasBindings ? Object.fromEntries(CA_BUNDLE_VARIABLES.map((name) => [name, CA_BUNDLE_MOUNT])) : {};
}

/** Where a run's bundle lives on the host: in its own run folder (removed with it). */
export function caBundlePath(scratch: string): string {
  return `${scratch}/ca-bundle.pem`;
}

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

/**
 * What the proxy verifies bound hosts' certificates against: `SKILL_MCP_EGRESS_CA_FILE` when set
 * (a private CA the operator runs, or a test's), else the system CAs.
 */
export function upstreamCaPem(env: Readonly<Record<string, string | undefined>>): string {
  const file = env['SKILL_MCP_EGRESS_CA_FILE'];
  if (file === undefined || file === '') return systemCaPem();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(`SKILL_MCP_EGRESS_CA_FILE cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}); fix it or unset it`, {
      cause: error,
    });
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----'))
    throw new Error('SKILL_MCP_EGRESS_CA_FILE holds no PEM certificate; fix it or unset it');
  return text;
}

let remembered: { pem: string; context: SecureContext } | undefined;

/**
 * The context the proxy verifies bound hosts against, made once per runner for the same CAs
 * (parsing ~140 system CAs costs ~35 ms: per run it would be on every secrets run's start). The
 * file is read again each run, so a changed `SKILL_MCP_EGRESS_CA_FILE` or system bundle is used
 * from the next run on.
 */
export function upstreamContext(env: Readonly<Record<string, string | undefined>>): SecureContext {
  const pem = upstreamCaPem(env);
  if (remembered?.pem !== pem) remembered = { pem, context: createSecureContext({ ca: pem }) };
  return remembered.context;
}

/** Why `SKILL_MCP_EGRESS_CA_FILE` cannot be used, checked at the runner's start (else every secrets run would fail), or undefined. */
export function egressCaFileProblem(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const file = env['SKILL_MCP_EGRESS_CA_FILE'];
  if (file === undefined || file === '') return undefined;
  try {
    // Each block parsed on its own: OpenSSL passes over a block it cannot read, and then only the
    // first run's TLS check would fail.
    for (const block of upstreamCaPem(env).match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [])
      new X509Certificate(block);
    return undefined;
  } catch (error) {
    return (error as Error).message.startsWith('SKILL_MCP_EGRESS_CA_FILE')
      ? (error as Error).message
      : `SKILL_MCP_EGRESS_CA_FILE holds a certificate that cannot be parsed (${(error as Error).message}); fix it or unset it`;
  }
}

/** Writes the run's bundle (system CAs, then the run CA), readable by the run's uid; returns its path. */
export function writeCaBundle(path: string, runCaPem: string, systemPem: string = systemCaPem()): string {
  // 0644 and owned by the runner: the run (its own uid as root) reads it through a read-only bind,
  // never changes it. chmod: the runner's umask (077) would leave it 0600.
  writeFileSync(path, `${systemPem}${runCaPem}`, { mode: 0o644, flag: 'wx' });
  chmodSync(path, 0o644);
  return path;
}
