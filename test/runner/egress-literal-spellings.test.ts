/**
 * Attack: reaching loopback or a metadata service through another spelling of its address —
 * `0.0.0.0`, `[::ffff:127.0.0.1]`, `0x7f.1`, `2130706433`, `0177.0.0.1`, `127.1`, a trailing dot, a
 * zone id. A declaration must refuse every such spelling (naming the canonical one to write), the
 * preview must warn about loopback/private/link-local/metadata entries, and what a script asks
 * the real proxy to CONNECT to is normalised before the policy: it meets the entries and the SSRF
 * guard as the address itself, and the unspecified addresses are refused. Network: only this
 * machine's loopback (the proxy's upstream on 127.0.0.1).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEgressEntry, parseEgressList } from '../../shared/egress.js';
import { readHost } from '../../shared/host-literal.js';
import { classifyAddress, specialAddressWarning } from '../../runner/egress/address.js';
import type { Lookup } from '../../runner/helper/policy.js';
import { startEgressProxy } from '../../runner/helper/proxy.js';
import type { EgressProxy, EgressRecord } from '../../runner/helper/proxy.js';

/** Spellings of one address, each as a host of a request (IPv6 in brackets). */
const LOOPBACK = [
  '127.0.0.1',
  '127.0.0.1.',
  '2130706433',
  '0x7f000001',
  '0X7F000001',
  '0x7f.1',
  '0x7f.0.0.1',
  '0177.0.0.1',
  '0177.0.0.01',
  '017700000001',
  '127.1',
  '127.0.1',
  '127.000.000.001',
  '[::ffff:127.0.0.1]',
  '[::ffff:7f00:1]',
  '[0:0:0:0:0:ffff:7f00:1]',
  '[::FFFF:127.0.0.1]',
  '[::127.0.0.1]',
  '[::7f00:1]',
  '[::ffff:127.0.0.1%25lo]',
  '[::ffff:127.0.0.1%lo]',
];
const METADATA = [
  '169.254.169.254',
  '169.254.169.254.',
  '2852039166',
  '0xa9fea9fe',
  '0xa9.0xfe.0xa9.0xfe',
  '0251.0376.0251.0376',
  '169.254.43518',
  '[::ffff:169.254.169.254]',
  '[::ffff:a9fe:a9fe]',
  '[::169.254.169.254]',
];
const UNSPECIFIED = [
  '0.0.0.0',
  '0',
  '0x0',
  '00',
  '0.0.0.0.',
  '0.1.2.3',
  '[::]',
  '[0:0:0:0:0:0:0:0]',
  '[::ffff:0.0.0.0]',
  '[::%25eth0]',
  '[::0.0.0.2]',
];

describe('every spelling of an address reads as that address', () => {
  it.each(LOOPBACK)('%s is 127.0.0.1', (text) => {
    expect(readHost(text)).toMatchObject({ host: '127.0.0.1', ip: 4, unspecified: false });
    expect(classifyAddress(readHost(text)!.host)).toBe('loopback');
  });
  it.each(METADATA)('%s is 169.254.169.254 (metadata)', (text) => {
    expect(readHost(text)).toMatchObject({ host: '169.254.169.254', ip: 4 });
    expect(classifyAddress(readHost(text)!.host)).toBe('metadata');
  });
  it.each(UNSPECIFIED)('%s is unspecified', (text) => {
    expect(readHost(text)?.unspecified).toBe(true);
  });
  it.each([
    ['[fe80::1%eth0]', 'fe80::1', 6],
    ['[fe80::1%25eth0]', 'fe80::1', 6],
    ['[FD00:EC2::254]', 'fd00:ec2::254', 6],
    ['Example.COM.', 'example.com', 0],
    ['[::1]', '::1', 6],
    ['[0:0:0:0:0:0:0:1]', '::1', 6],
    ['[64:ff9b::169.254.169.254]', '64:ff9b::a9fe:a9fe', 6],
    ['1.2.3.256', '1.2.3.256', 0],
    ['08.1.1.1', '08.1.1.1', 0],
  ])('%s reads as %s', (text, host, ip) => {
    expect(readHost(text)).toMatchObject({ host, ip });
  });
});

describe('a declaration refuses every non-canonical spelling, naming the one to write', () => {
  const why = (text: string): string => {
    const parsed = parseEgressEntry(text);
    if (parsed.ok) throw new Error(`${text} was accepted`);
    return parsed.why;
  };
  it.each(LOOPBACK.filter((t) => t !== '127.0.0.1' && t !== '127.0.0.1.'))('%s:8080 → write 127.0.0.1', (text) => {
    expect(why(`${text}:8080`)).toContain('write 127.0.0.1');
  });
  it.each(METADATA.filter((t) => t !== '169.254.169.254' && t !== '169.254.169.254.'))('%s → write 169.254.169.254', (text) => {
    expect(why(text)).toContain('write 169.254.169.254');
  });
  it.each(UNSPECIFIED)('%s:8080 is refused as unspecified', (text) => {
    expect(why(`${text}:8080`)).toContain('unspecified address');
  });
  it('a zone id and a trailing dot are refused too', () => {
    expect(why('[fe80::1%eth0]:80')).toContain('write [fe80::1]');
    expect(why('127.0.0.1.:80')).toContain('write 127.0.0.1');
    expect(why('example.com.')).toContain('no trailing dot');
  });
});

describe('the preview warns about every entry that is not the public internet', () => {
  it.each([
    ['127.0.0.1:8080', 'this machine (loopback)'],
    ['[::1]:8080', 'this machine (loopback)'],
    ['169.254.169.254', 'a cloud metadata service'],
    ['[fd00:ec2::254]', 'a cloud metadata service'],
    ['100.100.100.200', 'a cloud metadata service'],
    ['10.1.2.3:5432', 'a private network'],
    ['192.168.0.1', 'a private network'],
    ['[fd12::1]', 'a private network'],
    ['169.254.1.1', 'the local link'],
    ['[fe80::1]', 'the local link'],
  ])('%s: %s', (text, words) => {
    expect(specialAddressWarning([text])).toContain(`${text} is ${words}`);
  });
  it('public addresses and names get no such warning', () => {
    expect(specialAddressWarning(['93.184.216.34', 'api.example.com', '*.example.com'])).toBeUndefined();
  });
});

/** No DNS in this test: every name fails to resolve except these. */
const pinned: Lookup = async (host) => {
  if (host === 'loopback.zone.test') return [{ address: '127.0.0.1', family: 4 }];
  throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
};

describe('CONNECT through the real proxy with each spelling', () => {
  let dir: string;
  let upstream: Server;
  let port = 0;
  let granted: EgressProxy;
  let other: EgressProxy;
  const records: EgressRecord[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'skill-mcp-spellings-'));
    upstream = createServer((req, res) => {
      res.setHeader('Connection', 'close');
      res.end(`upstream ${req.url}`);
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    port = (upstream.address() as { port: number }).port;
    granted = await startEgressProxy({
      socketPath: join(dir, 'granted.sock'),
      entries: parseEgressList([`127.0.0.1:${port}`]),
      lookup: pinned,
      onRecord: (r) => records.push(r),
    });
    other = await startEgressProxy({
      socketPath: join(dir, 'other.sock'),
      entries: parseEgressList([`*.zone.test:${port}`, 'public.example']),
      lookup: pinned,
      onRecord: (r) => records.push(r),
    });
  });
  afterAll(async () => {
    await granted?.close();
    await other?.close();
    upstream?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function exchange(socketName: string, request: string, then?: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(join(dir, socketName));
      let answer = '';
      socket.on('data', (chunk) => {
        answer += chunk.toString();
        if (then !== undefined && answer.includes('200 Connection Established\r\n\r\n')) {
          socket.write(then);
          then = undefined;
        }
      });
      socket.on('end', () => resolve(answer));
      socket.on('error', reject);
      socket.write(request);
    });
  }

  it.each(LOOPBACK)('with 127.0.0.1 granted, CONNECT %s reaches it as 127.0.0.1 (the entry names that address)', async (host) => {
    const answer = await exchange(
      'granted.sock',
      `CONNECT ${host}:${port} HTTP/1.1\r\n\r\n`,
      'GET /in HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    );
    expect(answer).toContain('200 Connection Established');
    expect(answer).toContain('upstream /in');
    await expect
      .poll(() => records.find((r) => r.destination === `${host}:${port}`))
      .toMatchObject({ decision: 'allowed', address: '127.0.0.1' });
  });

  it.each(LOOPBACK)('without 127.0.0.1 granted, CONNECT %s is refused as not allowed, naming 127.0.0.1', async (host) => {
    const answer = await exchange('other.sock', `CONNECT ${host}:${port} HTTP/1.1\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 403/);
    expect(answer).toContain(`127.0.0.1:${port} is not an egress destination`);
  });

  it.each(METADATA)('CONNECT %s:80 (metadata) is refused, naming 169.254.169.254', async (host) => {
    const answer = await exchange('other.sock', `CONNECT ${host}:80 HTTP/1.1\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 403/);
    expect(answer).toContain('169.254.169.254:80 is not an egress destination');
  });

  it.each(UNSPECIFIED)('CONNECT %s is refused as unspecified, even with loopback granted', async (host) => {
    const answer = await exchange('granted.sock', `CONNECT ${host}:${port} HTTP/1.1\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 400/);
    expect(answer).toContain('unspecified address');
  });

  it.each(['loopback.zone.test.', 'LOOPBACK.Zone.Test.'])(
    'a declared name with a trailing dot (%s) meets the SSRF guard as the name itself',
    async (host) => {
      const answer = await exchange('other.sock', `CONNECT ${host}:${port} HTTP/1.1\r\n\r\n`);
      expect(answer).toMatch(/^HTTP\/1\.1 403/);
      expect(answer).toContain('loopback.zone.test resolves to 127.0.0.1 (loopback)');
    },
  );

  it.each(['[::ffff:127.0.0.1]', '0x7f.1', '2130706433'])('a plain http:// request to %s is normalised the same way', async (host) => {
    const answer = await exchange('granted.sock', `GET http://${host}:${port}/plain HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(answer).toContain('upstream /plain');
    const refused = await exchange('other.sock', `GET http://${host}:${port}/plain HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(refused).toMatch(/^HTTP\/1\.1 403/);
  });
});
