/**
 * @module What a run with secret bindings trusts (docs/secrets-proxy.md, "The bundle"): a file of
 * the system CAs plus the run's own CA, written by the run's helper in its own folder, bound
 * read-only into the sandbox at {@link CA_BUNDLE_MOUNT}, and named by the variables Python, Node,
 * pip and curl read. Also what the helper trusts upstream: the system CAs, or the file named by
 * `SKILL_MCP_EGRESS_CA_FILE` in the runner's environment, which the runner reads and hands over.
 *
 * Security: the bundle holds certificates only (the run CA's key never leaves the helper's memory),
 * and the variables naming it are never grantable (shared/declaration.ts), so a skill cannot point
 * them elsewhere or at a CA of its own.
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** Where the bundle appears inside the sandbox (beside the egress socket). */
export const CA_BUNDLE_MOUNT = '/run/skill-mcp/ca-bundle.pem';

/** The variables a run with bindings gets, each naming {@link CA_BUNDLE_MOUNT}. */
export const CA_BUNDLE_VARIABLES = ['SSL_CERT_FILE', 'REQUESTS_CA_BUNDLE', 'NODE_EXTRA_CA_CERTS', 'PIP_CERT', 'CURL_CA_BUNDLE'] as const;

/** The variables of a run with bindings (none without). */
export function caBundleEnv(hasBindings: boolean): Record<string, string> {
  return hasBindings ? Object.fromEntries(CA_BUNDLE_VARIABLES.map((name) => [name, CA_BUNDLE_MOUNT])) : {};
}

/**
 * What the proxy verifies bound hosts' certificates against when `SKILL_MCP_EGRESS_CA_FILE` is set
 * (a private CA the operator runs, or a test's); unset: undefined, and the helper uses the system
 * CAs (runner/helper/trust.ts, which reads them: the runner never needs them).
 */
export function upstreamCaPem(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const file = env['SKILL_MCP_EGRESS_CA_FILE'];
  if (file === undefined || file === '') return undefined;
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

/** Why `SKILL_MCP_EGRESS_CA_FILE` cannot be used, checked at the runner's start (else every secrets run would fail), or undefined. */
export function egressCaFileProblem(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const file = env['SKILL_MCP_EGRESS_CA_FILE'];
  if (file === undefined || file === '') return undefined;
  try {
    // Each block parsed on its own: OpenSSL passes over a block it cannot read, and then only the
    // first run's TLS check would fail.
    for (const block of upstreamCaPem(env)?.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [])
      new X509Certificate(block);
    return undefined;
  } catch (error) {
    return (error as Error).message.startsWith('SKILL_MCP_EGRESS_CA_FILE')
      ? (error as Error).message
      : `SKILL_MCP_EGRESS_CA_FILE holds a certificate that cannot be parsed (${(error as Error).message}); fix it or unset it`;
  }
}
