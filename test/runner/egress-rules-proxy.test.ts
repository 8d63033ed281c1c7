/**
 * Request rules on the plain-HTTP path of a run's proxy (runner/helper/proxy.ts; HTTPS is
 * test/e2e/skill-run-egress-rules.test.ts): the proxy on its real unix socket in front of a
 * loopback HTTP server that records what reaches it. Raw bytes on the socket, so each attack is
 * sent exactly as written: traversal in an absolute URL (which a URL parser would resolve), a Host
 * header naming another host, pipelining across a refusal, and a body framed two ways. And a host
 * with both rules and a bound secret over HTTPS: the rules first, then the injection.
 * Network: only this machine's loopback.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Server as HttpsServer } from 'node:https';
import { connect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEgressList } from '../../shared/egress.js';
import type { RequestRecord } from '../../runner/egress/helper-protocol.js';
import { startEgressProxy } from '../../runner/helper/proxy.js';
import type { EgressProxy } from '../../runner/helper/proxy.js';
import { openRunProxy } from '../../runner/helper/run-proxy.js';
import type { RunProxy } from '../../runner/helper/run-proxy.js';
import { makeTestCerts } from '../https-api.js';

let dir: string;
let api: Server;
let port: number;
let proxy: EgressProxy;
const received: string[] = [];
const requests: RequestRecord[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'skill-mcp-rules-proxy-'));
  api = createServer((req, res) => {
    received.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => res.end('ok\n'));
  });
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  port = (api.address() as AddressInfo).port;
  const entry = `127.0.0.1:${port}`;
  proxy = await startEgressProxy({
    socketPath: join(dir, 'egress.sock'),
    entries: parseEgressList([entry]),
    rules: [{ entry, allow: [{ methods: ['GET'], path: '/v1/items/*' }] }],
    onRecord: () => undefined,
    onRequest: (record) => requests.push(record),
  });
});
afterAll(async () => {
  await proxy?.close();
  api?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Sends `raw` on a fresh connection to the proxy and reads until the proxy closes it. */
function send(raw: string): Promise<{ statuses: number[]; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(join(dir, 'egress.sock'));
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk.toString();
    });
    socket.on('error', reject);
    socket.on('close', () => resolve({ statuses: [...text.matchAll(/^HTTP\/1\.1 (\d{3})/gm)].map((m) => Number(m[1])), text }));
    socket.write(raw.replaceAll('HOST', at()));
  });
}

const at = () => `127.0.0.1:${port}`;

describe('plain HTTP to a host with rules', () => {
  it('an allowed call reaches the host with the path as written, and is audited with its rule, never its query', async () => {
    const before = received.length;
    const got = await send(`GET http://HOST/v1/items/9?secret=q HTTP/1.1\r\nHost: HOST\r\nConnection: close\r\n\r\n`);
    expect(got.statuses).toEqual([200]);
    expect(received.slice(before)).toEqual(['GET /v1/items/9?secret=q']);
    expect(requests.at(-1)).toMatchObject({
      method: 'GET',
      path: '/v1/items/9',
      decision: 'allowed',
      rule: 'GET /v1/items/*',
      status: 200,
    });
    expect(JSON.stringify(requests)).not.toContain('secret=q');
  });

  it.each([
    [
      'traversal in an absolute URL (a URL parser would resolve it to /v1/admin)',
      `GET http://HOST/v1/items/../admin HTTP/1.1\r\nHost: HOST\r\n\r\n`,
      'path-not-normal',
    ],
    ['encoded traversal', `GET http://HOST/v1/items/%2e%2e/admin HTTP/1.1\r\nHost: HOST\r\n\r\n`, 'path-not-normal'],
    ['a wrong method', `DELETE http://HOST/v1/items/9 HTTP/1.1\r\nHost: HOST\r\n\r\n`, 'no-rule'],
    ['a Host header naming another host', `GET http://HOST/v1/items/9 HTTP/1.1\r\nHost: admin.internal\r\n\r\n`, 'host-mismatch'],
    ['an Upgrade', `GET http://HOST/v1/items/9 HTTP/1.1\r\nHost: HOST\r\nUpgrade: h2c\r\n\r\n`, 'upgrade'],
  ])('%s is a 403 naming the rules; nothing reaches the host', async (_name, raw, reason) => {
    const before = received.length;
    const got = await send(raw);
    expect(got.statuses).toEqual([403]);
    expect(got.text).toContain(`refused by the request rules of ${at()}`);
    expect(got.text).toContain('They allow: GET /v1/items/*');
    expect(received.length).toBe(before);
    expect(requests.at(-1)).toMatchObject({ decision: 'refused', reason, status: 403 });
  });

  it('pipelining across a refusal: the allowed request behind the refused one is never sent', async () => {
    const before = received.length;
    const got = await send(
      `GET http://HOST/v1/admin HTTP/1.1\r\nHost: HOST\r\n\r\nGET http://HOST/v1/items/7 HTTP/1.1\r\nHost: HOST\r\nConnection: close\r\n\r\n`,
    );
    expect(got.statuses).toEqual([403]);
    expect(received.length).toBe(before);
    expect(requests.slice(-2)).toMatchObject([
      { path: '/v1/admin', reason: 'no-rule' },
      { path: '/v1/items/7', reason: 'after-refusal' },
    ]);
  });

  it('a body framed two ways (Content-Length and Transfer-Encoding) never reaches the host', async () => {
    const before = received.length;
    const got = await send(
      `GET http://HOST/v1/items/1 HTTP/1.1\r\nHost: HOST\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    );
    expect(got.statuses).not.toContain(200);
    expect(received.length).toBe(before);
  });
});

describe('HTTPS to a host with rules and a secret bound to it', () => {
  const PLACEHOLDER = 'skill-mcp-placeholder-00112233445566778899aabbccddeeff';
  const VALUE = 'sk-rules-and-secret-0123456789';
  let tlsDir: string;
  let tlsApi: HttpsServer;
  let tlsPort: number;
  let run: RunProxy;
  const authorizations: string[] = [];
  const got: RequestRecord[] = [];

  beforeAll(async () => {
    tlsDir = mkdtempSync(join(tmpdir(), 'skill-mcp-rules-tls-'));
    const certs = makeTestCerts(tlsDir, 'rules test CA');
    tlsApi = createHttpsServer({ key: readFileSync(certs.key), cert: readFileSync(certs.cert) }, (req, res) => {
      authorizations.push(`${req.method} ${req.url} ${String(req.headers.authorization)}`);
      req.resume();
      req.on('end', () => res.end('ok\n'));
    });
    await new Promise<void>((resolve) => tlsApi.listen(0, '127.0.0.1', resolve));
    tlsPort = (tlsApi.address() as AddressInfo).port;
    const entry = `127.0.0.1:${tlsPort}`;
    run = await openRunProxy({
      socketPath: join(tlsDir, 'egress.sock'),
      entries: [entry],
      rules: [{ entry, allow: [{ methods: ['GET'], path: '/v1/items/*' }] }],
      secrets: [
        { name: 'API_TOKEN', hosts: [entry], header: 'Authorization', format: 'Bearer {value}', placeholder: PLACEHOLDER, value: VALUE },
      ],
      intercept: { bundlePath: join(tlsDir, 'bundle.pem'), timeoutMs: 60_000, upstreamCa: readFileSync(certs.ca, 'utf8') },
      onRecord: () => undefined,
      onRequest: (record) => got.push(record),
    });
  }, 60_000);
  afterAll(async () => {
    await run?.close();
    tlsApi?.close();
    rmSync(tlsDir, { recursive: true, force: true });
  });

  /** A CONNECT through the proxy, TLS with the run's bundle, `raw` sent, the answer read to its end. */
  async function over(raw: string): Promise<string> {
    const socket = connect(join(tlsDir, 'egress.sock'));
    socket.write(`CONNECT 127.0.0.1:${tlsPort} HTTP/1.1\r\nHost: 127.0.0.1:${tlsPort}\r\n\r\n`);
    await new Promise<void>((resolve) => socket.once('data', () => resolve()));
    let text = '';
    const tls = tlsConnect({ socket, host: '127.0.0.1', ca: readFileSync(join(tlsDir, 'bundle.pem')) });
    tls.on('error', (error) => {
      text += `error: ${error.message}`;
    });
    tls.write(raw.replaceAll('HOST', `127.0.0.1:${tlsPort}`));
    tls.on('data', (chunk) => {
      text += chunk.toString();
    });
    await new Promise<void>((resolve) => tls.once('close', () => resolve()));
    return text;
  }

  it('an allowed call gets the value injected; a refused one is never sent, value or not', async () => {
    const ok = await over(`GET /v1/items/1 HTTP/1.1\r\nHost: HOST\r\nAuthorization: Bearer ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`);
    expect(ok).toMatch(/^HTTP\/1\.1 200/);
    const refused = await over(`GET /v1/admin HTTP/1.1\r\nHost: HOST\r\nAuthorization: Bearer ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`);
    expect(refused).toMatch(/^HTTP\/1\.1 403/);
    expect(refused).toContain('refused by the request rules of');
    expect(authorizations).toEqual([`GET /v1/items/1 Bearer ${VALUE}`]);
    expect(got.map((r) => [r.path, r.decision])).toEqual([
      ['/v1/items/1', 'allowed'],
      ['/v1/admin', 'refused'],
    ]);
  });
});
