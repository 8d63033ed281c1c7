/**
 * A run's CA (runner/secrets/ca.ts) as real TLS clients see it: Node's tls and Python's ssl
 * (OpenSSL) accept its leaves for the bound hosts, names and addresses alike, and refuse a leaf a
 * leaked CA key would sign for any other name or address (its nameConstraints); the CA signs no
 * leaf for an unbound host; its key cannot be exported. Network: loopback only.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { connect, createSecureContext, TLSSocket } from 'node:tls';
import type { SecureContext } from 'node:tls';
import { createServer } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEAF_LIMIT_ERROR, MAX_LEAVES_PER_RUN, makeRunCa, makeRunCaForTests } from '../../runner/helper/ca.js';
import type { RunCa } from '../../runner/helper/ca.js';

const HOUR_MS = 3_600_000;
let dir: string;
let ca: RunCa;
let forge: (host: string) => Promise<{ key: string; cert: string }>;
let server: Server;
let port: number;
/** The context the server presents next (each test sets it). */
let presented: SecureContext;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'skill-mcp-ca-'));
  ({ ca, forge } = await makeRunCaForTests(['api.bound.test', '127.0.0.1'], HOUR_MS));
  writeFileSync(join(dir, 'ca.pem'), ca.certPem);
  // Presents whatever the test set, with or without SNI (an address has none).
  server = createServer((raw) => {
    const socket = new TLSSocket(raw, { isServer: true, secureContext: presented });
    socket.once('secure', () => socket.end('hello\n'));
    socket.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** Node's own check: connect to the loopback server as `name` (SNI and identity), trusting the run CA only. */
function nodeClient(name: string): Promise<string> {
  return new Promise((resolve) => {
    const ip = /^\d/.test(name);
    const socket = connect({ host: '127.0.0.1', port, ca: ca.certPem, ...(ip ? {} : { servername: name }) }, () =>
      socket.once('data', () => {
        socket.destroy();
        resolve('ok');
      }),
    );
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(`${error.code ?? ''} ${error.message}`));
  });
}

/** Python's ssl (OpenSSL with Python's defaults, VERIFY_X509_STRICT on 3.13), trusting the run CA only. Async: the server is in this process. */
function pythonClient(name: string): Promise<string> {
  const code = [
    'import socket, ssl, sys',
    'ctx = ssl.create_default_context(cafile=sys.argv[1])',
    'try:',
    '    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[2]))), server_hostname=sys.argv[3])',
    '    s.recv(10); print("ok")',
    'except ssl.SSLCertVerificationError as e:',
    '    print(e.verify_message)',
  ].join('\n');
  return new Promise((resolve) => {
    execFile('python3', ['-c', code, join(dir, 'ca.pem'), String(port), name], (_error, stdout, stderr) =>
      resolve(stdout.trim() || stderr.trim()),
    );
  });
}

/** The server presents a real leaf of the run CA for `host`. */
async function presentLeaf(host: string): Promise<void> {
  presented = await ca.contextFor(host);
}

describe('the run CA', () => {
  it('has basicConstraints CA:true pathLen 0, a short validity and nameConstraints naming the bound hosts', () => {
    const cert = new X509Certificate(ca.certPem);
    expect(cert.ca).toBe(true);
    expect(new Date(cert.validTo).getTime() - Date.now()).toBeLessThanOrEqual(HOUR_MS + 1000);
    const text = spawnSync('openssl', ['x509', '-noout', '-text'], { input: ca.certPem, encoding: 'utf8' }).stdout;
    expect(text).toMatch(/CA:TRUE, pathlen:0/);
    expect(text).toMatch(/Certificate Sign/);
    expect(text).toMatch(
      /Name Constraints: critical[\s\S]*Permitted:[\s\S]*DNS:api\.bound\.test[\s\S]*IP:127\.0\.0\.1\/255\.255\.255\.255/,
    );
  });

  it.each(['api.bound.test', '127.0.0.1'])('Node and Python accept its leaf for the bound host %s', async (host) => {
    await presentLeaf(host);
    expect(await nodeClient(host)).toBe('ok');
    expect(await pythonClient(host)).toBe('ok');
  });

  it('signs no leaf for a host that is not bound', async () => {
    await expect(ca.contextFor('evil.test')).rejects.toThrow(/bound hosts/);
  });

  it.each(['evil.test', 'api.bound.test.evil.test', '127.0.0.2'])(
    'a leaf a leaked CA key signs for %s is refused by Node and Python (nameConstraints)',
    async (host) => {
      presented = createSecureContext(await forge(host));
      expect(await nodeClient(host)).toMatch(/(permitted|excluded) subtree violation/i);
      expect(await pythonClient(host)).toMatch(/permitted subtree violation|excluded subtree violation/i);
    },
  );

  it('with no bound address, a forged leaf for any address is refused too', async () => {
    const names = await makeRunCaForTests(['only.name.test'], HOUR_MS);
    writeFileSync(join(dir, 'ca.pem'), names.ca.certPem);
    const saved = ca;
    ca = names.ca;
    try {
      presented = createSecureContext(await names.forge('127.0.0.1'));
      expect(await nodeClient('127.0.0.1')).toMatch(/excluded subtree violation/i);
      expect(await pythonClient('127.0.0.1')).toMatch(/excluded subtree violation/i);
    } finally {
      ca = saved;
      writeFileSync(join(dir, 'ca.pem'), ca.certPem);
    }
  });

  it('attack: a script naming endless hosts under a wildcard binding gets 64 certificates, then a clear refusal (no unbounded CPU or memory)', async () => {
    const made = await makeRunCa(['*.wild.test'], HOUR_MS);
    const names = Array.from({ length: MAX_LEAVES_PER_RUN }, (_, i) => `h${i}.wild.test`);
    for (const name of names) await made.contextFor(name);
    await expect(made.contextFor('one-more.wild.test')).rejects.toThrow(LEAF_LIMIT_ERROR);
    // A name it already has still works: the cap refuses new names only.
    await expect(made.contextFor(names[0]!)).resolves.toBeDefined();
  });

  it('its PEM holds a certificate and no private key', async () => {
    const made = await makeRunCa(['a.test'], HOUR_MS);
    expect(made.certPem).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(made.certPem).not.toMatch(/PRIVATE KEY/);
  });
});
