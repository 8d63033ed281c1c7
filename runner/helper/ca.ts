/**
 * @module A run's own certificate authority (docs/secrets-proxy.md, "The run CA"): made by the
 * run's helper for each run that has secret bindings, trusted inside that run only, and used by its
 * egress proxy to present a certificate for each bound host, so that it can read the requests it
 * injects the secret into. ECDSA P-256 through WebCrypto and `@peculiar/x509`.
 *
 * Loaded lazily (`await import`): only a run with bindings pays for the X.509 code, and the bin's
 * start-up does not change (./run-proxy.ts imports it on demand).
 *
 * Security: the CA's private key is a non-extractable WebCrypto key held by this object in the
 * helper's memory only — no code path can export it, it is never written to disk and never enters
 * the sandbox (the sandbox gets the CA *certificate* only). Its reach is capped three ways besides:
 * `basicConstraints CA:true, pathLen 0` (it signs leaves, never another CA), `nameConstraints`
 * permitting only the run's bound hosts (a leaked key still signs nothing OpenSSL would accept for
 * any other name or address), and a validity of the run's timeout plus a margin.
 */
import 'reflect-metadata';
import { createSecureContext } from 'node:tls';
import type { SecureContext } from 'node:tls';
import { isIP } from 'node:net';
import { webcrypto } from 'node:crypto';
import { AsnConvert } from '@peculiar/asn1-schema';
import { GeneralName, GeneralSubtree, GeneralSubtrees, NameConstraints } from '@peculiar/asn1-x509';
import * as x509 from '@peculiar/x509';

/** What every key of a run is (the CA's and each leaf's). */
const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
/** Certificates start this much before now: the sandbox reads the same clock, but a validity that starts "now" fails a check made in the same second on some clients. */
const BACKDATE_MS = 60_000;
/** The CA and its leaves outlive the run's timeout by this much (kill grace, drain, a slow start). */
export const CA_MARGIN_MS = 5 * 60_000;
/**
 * Host certificates one run may have made. Security: a wildcard binding covers any number of names
 * below it, and each new name costs a key pair and a signature (~10 ms of CPU and ~30 kB held): a
 * script naming thousands of them would burn its helper's CPU and memory without end. Past this
 * many names a new one is refused (its connection is cut and its audit line says why).
 */
export const MAX_LEAVES_PER_RUN = 64;
/** The refusal of a name past {@link MAX_LEAVES_PER_RUN}, as its connection's `upstream_error`. */
export const LEAF_LIMIT_ERROR = `the run already has certificates for ${MAX_LEAVES_PER_RUN} host names (the most one run may have); this one was refused`;

/** RFC 6761 reserves `.invalid`: a CA with no bound name permits only it, so it can sign no real name. */
const NO_NAME = 'invalid';

x509.cryptoProvider.set(webcrypto as never);

export interface RunCa {
  /** The CA certificate (PEM): what the sandbox's bundle adds to the system CAs. */
  readonly certPem: string;
  /** The TLS context presenting `host`'s leaf (made on first use, then cached for the run). `host` (a bare name or address) must be a bound host or below a bound wildcard. */
  contextFor(host: string): Promise<SecureContext>;
}

/**
 * The CA's nameConstraints (RFC 5280 §4.2.1.10), DER. Permitted: exactly the bound names (and
 * their subdomains, as RFC 5280 defines a dNSName subtree) and each bound address as a /32 or /128.
 * A constraint only limits the name types it lists, so both types are always listed: with no bound
 * address every address is excluded; with no bound name only `.invalid` is permitted.
 */
export function nameConstraintsDer(hosts: readonly string[]): ArrayBuffer {
  // `*.example.com` permits `.example.com`: the names below it, not the domain itself (as the egress entry means).
  const names = hosts.filter((h) => isIP(h) === 0).map((h) => (h.startsWith('*.') ? h.slice(1) : h));
  const addresses = hosts.filter((h) => isIP(h) !== 0);
  const permitted = [
    ...(names.length > 0 ? names : [NO_NAME]).map((name) => new GeneralSubtree({ base: new GeneralName({ dNSName: name }) })),
    ...addresses.map((ip) => new GeneralSubtree({ base: new GeneralName({ iPAddress: `${ip}/${isIP(ip) === 6 ? 128 : 32}` }) })),
  ];
  const excluded =
    addresses.length > 0 ? [] : ['0.0.0.0/0', '::/0'].map((cidr) => new GeneralSubtree({ base: new GeneralName({ iPAddress: cidr }) }));
  return AsnConvert.serialize(
    new NameConstraints({
      permittedSubtrees: new GeneralSubtrees(permitted),
      ...(excluded.length > 0 ? { excludedSubtrees: new GeneralSubtrees(excluded) } : {}),
    }),
  );
}

function serial(): string {
  // A positive 16-byte serial (top bit clear), random per certificate.
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0] = bytes[0]! & 0x7f;
  return Buffer.from(bytes).toString('hex');
}

/** PEM of a PKCS#8 private key. */
function keyPem(pkcs8: ArrayBuffer): string {
  const b64 = Buffer.from(pkcs8).toString('base64').replace(/.{64}/g, '$&\n');
  return `-----BEGIN PRIVATE KEY-----\n${b64}${b64.endsWith('\n') ? '' : '\n'}-----END PRIVATE KEY-----\n`;
}

/**
 * Makes a run's CA for its bound `hosts` (bare names, `*.domain` wildcards or addresses, as the
 * egress entries write them without their ports), valid `validForMs` from now
 * (the run's timeout plus {@link CA_MARGIN_MS}, as the caller passes it).
 */
export async function makeRunCa(hosts: readonly string[], validForMs: number): Promise<RunCa> {
  const { ca } = await makeCa(hosts, validForMs);
  return ca;
}

/**
 * Test seam: the CA plus a signer that makes a leaf for *any* host, as a leaked CA key could —
 * so tests can check that clients refuse it (the nameConstraints). The runner never calls it.
 */
export async function makeRunCaForTests(
  hosts: readonly string[],
  validForMs: number,
): Promise<{ ca: RunCa; forge(host: string): Promise<{ key: string; cert: string }> }> {
  return makeCa(hosts, validForMs);
}

/** A key pair made while the helper waits for its run: taken by that run's CA, once. */
let readyKeys: Promise<webcrypto.CryptoKeyPair> | undefined;

function caKeyPair(): Promise<webcrypto.CryptoKeyPair> {
  // Security: non-extractable — exportKey on it throws; only sign() can use it.
  return webcrypto.subtle.generateKey(ALGORITHM, false, ['sign', 'verify']) as Promise<webcrypto.CryptoKeyPair>;
}

/**
 * Readies what a secrets run's CA needs while a spare helper waits (helper/main.ts): its key pair,
 * and the X.509 code warmed by one throwaway CA for a name no run can bind — so the run's own CA is
 * made in a few milliseconds, not a cold start's tens. Never rejects.
 */
export async function prepareCa(): Promise<void> {
  // The throwaway first (it takes no ready key: there is none yet), then the run's key.
  await makeCa(['warm-up.invalid'], 60_000).catch(() => undefined);
  readyKeys ??= caKeyPair();
  await readyKeys.catch(() => undefined);
}

async function makeCa(
  hosts: readonly string[],
  validForMs: number,
): Promise<{ ca: RunCa; forge(host: string): Promise<{ key: string; cert: string }> }> {
  const bound = [...new Set(hosts)];
  const notBefore = new Date(Date.now() - BACKDATE_MS);
  const notAfter = new Date(Date.now() + validForMs);
  // Security: a key pair is one CA's only — the ready one is taken, never shared.
  const ready = readyKeys;
  readyKeys = undefined;
  const caKeys = await (ready ?? caKeyPair());
  const caName = `CN=skill-mcp run CA ${serial().slice(0, 16)}, O=skill-mcp`;
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: caName,
    notBefore,
    notAfter,
    signingAlgorithm: ALGORITHM,
    keys: caKeys,
    extensions: [
      // Security: a CA that may sign leaves only (pathLen 0), for these hosts only (nameConstraints).
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      new x509.Extension('2.5.29.30', true, nameConstraintsDer(bound)),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const contexts = new Map<string, Promise<SecureContext>>();

  async function leaf(host: string): Promise<{ key: string; cert: string }> {
    // The leaf's key must reach node:tls as PEM, so it is extractable; it lives in this closure
    // (the runner's memory) only and can sign nothing but TLS handshakes for its own host.
    const keys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      // Not the host: OpenSSL checks a subject CN that looks like a host name against the CA's name
      // constraints as a dNSName, which an address host would fail. The SAN is what clients match.
      subject: 'CN=skill-mcp run leaf, O=skill-mcp',
      issuer: caCert.subject,
      notBefore,
      notAfter,
      signingAlgorithm: ALGORITHM,
      publicKey: keys.publicKey,
      signingKey: caKeys.privateKey,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension([isIP(host) !== 0 ? { type: 'ip', value: host } : { type: 'dns', value: host }]),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
        await x509.AuthorityKeyIdentifierExtension.create(caKeys.publicKey),
      ],
    });
    return { key: keyPem(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)), cert: cert.toString('pem') };
  }

  const ca: RunCa = {
    certPem: `${caCert.toString('pem')}\n`,
    contextFor(host) {
      // Security: a leaf only ever for a bound host (the proxy intercepts nothing else).
      if (!bound.some((h) => h === host || (h.startsWith('*.') && host.endsWith(h.slice(1)))))
        return Promise.reject(new Error("the run CA signs only the run's bound hosts"));
      let context = contexts.get(host);
      if (!context && contexts.size >= MAX_LEAVES_PER_RUN) return Promise.reject(new Error(LEAF_LIMIT_ERROR));
      if (!context) {
        context = leaf(host).then((pair) => createSecureContext({ ...pair, minVersion: 'TLSv1.2' }));
        contexts.set(host, context);
      }
      return context;
    },
  };
  return { ca, forge: leaf };
}
