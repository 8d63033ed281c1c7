/**
 * The per-run egress proxy on its real unix socket, against SSRF: names whose DNS answers (pinned
 * here, as an attacker controlling a zone would set them) lead to loopback, a private network,
 * cloud metadata or an IPv4 address wrapped in IPv6; every spelling of an address; and the
 * address classifier itself. Also the plain-HTTP and CONNECT paths, hop-by-hop headers, and one
 * record per connection. Network: only this machine's loopback.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEgressList } from '../../shared/egress.js';
import { classifyAddress } from '../../runner/egress/address.js';
import { decide } from '../../runner/helper/policy.js';
import type { Lookup } from '../../runner/helper/policy.js';
import { startEgressProxy } from '../../runner/helper/proxy.js';
import type { EgressProxy, EgressRecord } from '../../runner/helper/proxy.js';
import { planEgress } from '../../runner/egress/plan.js';
import { openRunProxy } from '../../runner/helper/run-proxy.js';
import { EgressBook } from '../../runner/egress/run-egress.js';

describe('the address classifier', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.1', 'loopback'],
    ['::1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['fd12::1', 'private'],
    ['169.254.1.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['169.254.169.254', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['93.184.216.34', 'public'],
    ['172.32.0.1', 'public'],
    ['2606:4700::1', 'public'],
  ])('%s is %s', (address, kind) => {
    expect(classifyAddress(address)).toBe(kind);
  });

  it.each([
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::127.0.0.1', 'loopback'],
    ['64:ff9b::169.254.169.254', 'metadata'],
    ['64:ff9b::a00:1', 'private'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:c0a8:101::1', 'private'],
  ])('an IPv4 address wrapped in IPv6 (%s) is judged by the address inside: %s', (address, kind) => {
    expect(classifyAddress(address)).toBe(kind);
  });

  it('anything that is not an address is never public', () => {
    expect(classifyAddress('localhost')).toBe('reserved');
    expect(classifyAddress('')).toBe('reserved');
  });
});

/** DNS answers as an attacker's zone would give them. */
const zone: Record<string, { address: string; family: number }[]> = {
  'public.zone.test': [{ address: '93.184.216.34', family: 4 }],
  'loopback.zone.test': [{ address: '127.0.0.1', family: 4 }],
  'metadata.zone.test': [{ address: '169.254.169.254', family: 4 }],
  'mapped.zone.test': [{ address: '::ffff:10.0.0.1', family: 6 }],
  'mixed.zone.test': [
    { address: '10.0.0.1', family: 4 },
    { address: '93.184.216.34', family: 4 },
  ],
};
const pinned: Lookup = async (host) => {
  const answer = zone[host];
  if (!answer) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return answer;
};

describe('the SSRF guard (decide)', () => {
  const entries = parseEgressList(['*.zone.test', 'public.zone.test:8080', '10.0.0.1:80', '127.0.0.1:8080']);

  it.each(['loopback.zone.test', 'metadata.zone.test', 'mapped.zone.test'])(
    'a declared name that resolves to a special address (%s) is refused, naming the address',
    async (host) => {
      const decision = await decide(entries, host, 443, pinned);
      expect(decision).toMatchObject({ allowed: false, reason: 'special-address', status: 403 });
      expect(decision.allowed ? '' : decision.message).toContain(zone[host]![0]!.address);
    },
  );

  it('a name with a public and a private address connects to the public one only', async () => {
    expect(await decide(entries, 'mixed.zone.test', 443, pinned)).toMatchObject({ allowed: true, address: '93.184.216.34' });
  });

  it('an address literal is reached only when an entry names it, and then even when it is private or loopback', async () => {
    expect(await decide(entries, '10.0.0.1', 80, pinned)).toMatchObject({ allowed: true, address: '10.0.0.1', entry: '10.0.0.1:80' });
    expect(await decide(entries, '127.0.0.1', 8080, pinned)).toMatchObject({ allowed: true, address: '127.0.0.1' });
    expect(await decide(entries, '10.0.0.2', 80, pinned)).toMatchObject({ allowed: false, reason: 'not-allowed' });
    expect(await decide(entries, '169.254.169.254', 80, pinned)).toMatchObject({ allowed: false, reason: 'not-allowed' });
  });

  it('the refusal names the entry that is missing', async () => {
    const decision = await decide(entries, 'public.zone.test', 9090, pinned);
    expect(decision.allowed ? '' : decision.message).toContain('"public.zone.test:9090" is missing');
    const web = await decide(parseEgressList(['other.example']), 'public.zone.test', 443, pinned);
    expect(web.allowed ? '' : web.message).toContain('"public.zone.test" is missing');
  });

  it('a name that does not resolve is a 502, and a malformed host a 400', async () => {
    expect(await decide(entries, 'nowhere.zone.test', 443, pinned)).toMatchObject({ allowed: false, reason: 'unresolved', status: 502 });
    expect(await decide(entries, '[zz::1]', 443, pinned)).toMatchObject({ allowed: false, reason: 'bad-destination', status: 400 });
    expect(await decide(entries, 'not_a_name', 443, pinned)).toMatchObject({ allowed: false, reason: 'bad-destination', status: 400 });
  });
});

describe('what egress means at each isolation level', () => {
  it('only the bubblewrap levels with a node for the bridge get a proxy; the others say why in the preview', () => {
    expect(planEgress('namespace', true, true, ['b.example', 'a.example'])).toMatchObject({
      mode: 'proxy',
      entries: ['a.example', 'b.example'],
    });
    expect(planEgress('namespace-uid', true, false, ['a.example'])).toMatchObject({
      mode: 'unavailable',
      note: expect.stringContaining('no node'),
    });
    expect(planEgress('uid-sandbox', false, true, ['a.example'])).toMatchObject({
      mode: 'unavailable',
      note: expect.stringContaining('reaches none'),
    });
    expect(planEgress('uid', false, true, ['a.example'])).toMatchObject({
      mode: 'unenforced',
      note: expect.stringContaining('can reach any host'),
    });
    expect(planEgress('same-uid', false, true, ['a.example'])).toMatchObject({ mode: 'unenforced' });
  });

  it("in a network namespace without egress the host's proxy variables are dropped (unreachable, may hold credentials); without a namespace they pass", () => {
    expect(planEgress('namespace', true, true, []).env['HTTP_PROXY']).toBeNull();
    expect(planEgress('uid-sandbox', false, true, []).env['https_proxy']).toBeNull();
    expect(planEgress('same-uid', false, true, []).env).toEqual({});
  });
});

describe('the proxy on its unix socket', () => {
  let dir: string;
  let upstream: Server;
  let port = 0;
  let seen: { url: string; headers: IncomingHttpHeaders }[] = [];
  let proxy: EgressProxy;
  const records: EgressRecord[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'skill-mcp-proxy-'));
    upstream = createServer((req, res) => {
      seen.push({ url: req.url ?? '', headers: req.headers });
      res.setHeader('Connection', 'close');
      res.end(`upstream ${req.url}`);
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    port = (upstream.address() as { port: number }).port;
    proxy = await startEgressProxy({
      socketPath: join(dir, 'egress.sock'),
      entries: parseEgressList([`127.0.0.1:${port}`, `loopback.zone.test:${port}`]),
      lookup: pinned,
      onRecord: (r) => records.push(r),
    });
  });
  afterAll(async () => {
    await proxy?.close();
    upstream?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Sends raw bytes to the proxy socket and returns everything it answers until it closes. */
  function exchange(request: string, then?: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(join(dir, 'egress.sock'));
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

  it('forwards a plain-HTTP request, without proxy credentials or hop-by-hop headers, and records its bytes', async () => {
    seen = [];
    const before = records.length;
    const answer = await exchange(
      `GET http://127.0.0.1:${port}/plain?q=1 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nProxy-Authorization: Basic c2VjcmV0\r\nConnection: close, X-Drop\r\nX-Drop: 1\r\nX-Keep: 2\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(answer).toContain('upstream /plain?q=1');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.headers['proxy-authorization']).toBeUndefined();
    expect(seen[0]!.headers['x-drop']).toBeUndefined();
    expect(seen[0]!.headers['x-keep']).toBe('2');
    expect(seen[0]!.headers['host']).toBe(`127.0.0.1:${port}`);
    await expect.poll(() => records.length, { timeout: 20_000 }).toBe(before + 1);
    expect(records[before]).toMatchObject({ destination: `127.0.0.1:${port}`, method: 'GET', decision: 'allowed', address: '127.0.0.1' });
    expect(records[before]!.bytes_up).toBeGreaterThan(0);
    expect(records[before]!.bytes_down).toBeGreaterThan(0);
  });

  it('tunnels a CONNECT and counts the tunnel bytes each way', async () => {
    const before = records.length;
    const answer = await exchange(
      `CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`,
      `GET /inside HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    );
    expect(answer).toContain('200 Connection Established');
    expect(answer).toContain('upstream /inside');
    await expect.poll(() => records.length, { timeout: 20_000 }).toBe(before + 1);
    const record = records[before]!;
    expect(record).toMatchObject({ method: 'CONNECT', decision: 'allowed' });
    expect(record.bytes_up).toBe(Buffer.byteLength('GET /inside HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
    expect(record.reason).toBeUndefined();
  });

  it('refuses a name resolving to loopback, an https:// plain request, an origin-form request and a bad CONNECT target, each with a body saying why', async () => {
    const byName = await exchange(`CONNECT loopback.zone.test:${port} HTTP/1.1\r\n\r\n`);
    expect(byName).toMatch(/^HTTP\/1\.1 403/);
    expect(byName).toContain('loopback.zone.test resolves to 127.0.0.1 (loopback)');
    expect(await exchange('GET https://127.0.0.1/ HTTP/1.1\r\nHost: x\r\n\r\n')).toContain('CONNECT tunnel');
    expect(await exchange('GET / HTTP/1.1\r\nHost: x\r\n\r\n')).toContain('send an absolute http:// URL');
    expect(await exchange('CONNECT [zz::1]:80 HTTP/1.1\r\n\r\n')).toMatch(/^HTTP\/1\.1 400/);
  });

  it('an allowed destination that is not listening is a 502 and recorded as connect-failed', async () => {
    const closed = await startEgressProxy({
      socketPath: join(dir, 'closed.sock'),
      entries: parseEgressList(['127.0.0.1:1']),
      onRecord: (r) => records.push(r),
    });
    try {
      const before = records.length;
      const answer = await new Promise<string>((resolve) => {
        const socket = connect(join(dir, 'closed.sock'));
        let text = '';
        socket.on('data', (c) => (text += c.toString()));
        socket.on('end', () => resolve(text));
        socket.write('CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n');
      });
      expect(answer).toMatch(/^HTTP\/1\.1 502/);
      await expect.poll(() => records.length, { timeout: 20_000 }).toBe(before + 1);
      expect(records[before]).toMatchObject({ decision: 'allowed', reason: 'connect-failed', bytes_up: 0, bytes_down: 0 });
    } finally {
      await closed.close();
    }
  });

  it('close() cuts an open tunnel and still records it', async () => {
    const other = await startEgressProxy({
      socketPath: join(dir, 'cut.sock'),
      entries: parseEgressList([`127.0.0.1:${port}`]),
      onRecord: (r) => records.push(r),
    });
    const socket = connect(join(dir, 'cut.sock'));
    const established = new Promise<void>((resolve) => socket.on('data', (c) => c.toString().includes('200') && resolve()));
    const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\n\r\n`);
    await established;
    const before = records.length;
    await other.close();
    expect(records.length).toBe(before + 1);
    expect(records[before]).toMatchObject({ method: 'CONNECT', decision: 'allowed' });
    await ended;
  });
});

describe('what a run can make the runner hold', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'skill-mcp-proxy-limits-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Sends one request on a new connection and returns what comes back before the close. */
  function once(socketPath: string, request: string): Promise<string> {
    return new Promise((resolve) => {
      const socket = connect(socketPath);
      let answer = '';
      socket.on('data', (c) => (answer += c.toString()));
      socket.on('close', () => resolve(answer));
      socket.on('error', () => undefined);
      socket.write(request);
    });
  }

  it('connections beyond the cap are closed at accept (and reported as refused), while those already open stay served', async () => {
    const socketPath = join(dir, 'cap.sock');
    const records: EgressRecord[] = [];
    const proxy = await startEgressProxy({ socketPath, entries: [], maxOpen: 2, onRecord: (r) => records.push(r) });
    try {
      const held = [connect(socketPath), connect(socketPath)];
      await Promise.all(held.map((s) => new Promise((r) => s.once('connect', r))));
      // The third is accepted by the kernel and closed by the proxy without an answer.
      expect(await once(socketPath, 'CONNECT a.example:443 HTTP/1.1\r\n\r\n')).toBe('');
      // Nothing silent: its request was never read, but it is on record as refused for too many open.
      expect(records).toEqual([
        { destination: '', method: '', decision: 'refused', reason: 'too-many-open', bytes_up: 0, bytes_down: 0, duration_ms: 0 },
      ]);
      const answer = new Promise<string>((resolve) => {
        let text = '';
        held[0]!.on('data', (c) => {
          text += c.toString();
          if (text.includes('\r\n\r\n')) resolve(text);
        });
      });
      held[0]!.write('CONNECT a.example:443 HTTP/1.1\r\n\r\n');
      expect(await answer).toMatch(/^HTTP\/1\.1 403/);
      for (const s of held) s.destroy();
    } finally {
      await proxy.close();
    }
  });

  it('a script looping on refused connections writes at most the cap of audit lines; the rest are counted', async () => {
    // The helper reports every connection; the runner writes the first `maxLines` (EgressBook) and counts the rest.
    const book = new EgressBook(3);
    const written: EgressRecord[] = [];
    const socketPath = join(dir, 'loop.sock');
    const proxy = await openRunProxy({
      socketPath,
      entries: ['a.example'],
      onRecord: (r) => {
        const line = book.take(r);
        if (line) written.push(line);
      },
    });
    try {
      for (let i = 0; i < 5; i++) expect(await once(socketPath, `CONNECT b.example:443 HTTP/1.1\r\n\r\n`)).toMatch(/^HTTP\/1\.1 403/);
    } finally {
      await proxy.close();
      expect(book.totals).toEqual({ egress_allowed: 0, egress_refused: 5, egress_unlogged: 2 });
      // The run's result counts every one, past the audit cap too.
      expect(book.summary()).toEqual({
        refused: [{ host: 'b.example', port: 443, reason: 'not-allowed', count: 5 }],
        refusedCount: 5,
        refusedUnlisted: 0,
        allowedCount: 0,
      });
    }
    expect(written.map((r) => [r.decision, r.destination])).toEqual(Array(3).fill(['refused', 'b.example:443']));
  });
});
