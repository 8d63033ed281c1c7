/**
 * The Redis ledger at the runner's socket (`SKILL_MCP_REDIS_URL`): real runners with their own
 * state directories sharing one real `redis-server` on a loopback port. Tokens spent once across
 * runners; failure closed for runs (an unreachable, refusing or stalled Redis refuses the run with
 * LEDGER_UNAVAILABLE and never burns the approval) and open for describe; settings that could
 * silently weaken the ledger stop the runner. The Redis link process that holds the client
 * (runner/redis/link-main.ts) is started differently as root (setpriv, a uid of the range) and not
 * (a plain process), so this file is in the `uid` tier: CI runs it as root and as uid 40100. The
 * two-replica HTTP story is in test/http/replicas-redis.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { auditLines, awaitAuditLine, prepareAndRun, startRunner, tempDir, uidRange, writeSkills, type RunnerHandle } from './harness.js';
import { holdingProxy, NO_REDIS_REASON, REDIS_SERVER, startRedis, type RedisHandle } from '../redis-harness.js';

const skills = writeSkills({
  s: { run: [{ script: 'a.js', interpreter: 'node', timeout: 5 }], files: { 'a.js': 'process.stdout.write("ran")' } },
});
const SECRET = randomBytes(32).toString('hex');
const PASSWORD = 'correct horse/battery@staple';
const started: RunnerHandle[] = [];
afterEach(async () => {
  for (const r of started.splice(0)) await r.stop();
});

async function runner(redisUrl: string, extra: Record<string, string> = {}, range = uidRange(12)): Promise<RunnerHandle> {
  const handle = await startRunner({
    env: { SKILLS_DIR: skills, MCP_CONFIRM_SECRET: SECRET, SKILL_MCP_REDIS_URL: redisUrl, ...extra },
    args: ['--uid-range', range],
  });
  started.push(handle);
  return handle;
}

async function mint(r: RunnerHandle, args: string[] = []): Promise<string> {
  const prepared = await r.client.prepare({ skill: 's', script: 'a.js', args });
  if (!prepared.ok) throw new Error(`prepare refused: ${prepared.error.code}`);
  return prepared.result.confirmToken;
}
/** The Redis link process a runner started (runner/redis/link-main.ts): its child running the link bundle. */
function linkOf(runnerPid: number): number | undefined {
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === runnerPid && readFileSync(`/proc/${name}/cmdline`, 'utf8').includes('skill-mcp-redis.cjs')) return Number(name);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

/** A process's real uid, effective capabilities and no_new_privs, from /proc/PID/status. */
function credsOf(pid: number): { uid: number; capEff: bigint; noNewPrivs: string } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string): string => new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(status)![1]!;
  return { uid: Number(field('Uid').split(/\s+/)[0]), capEff: BigInt(`0x${field('CapEff')}`), noNewPrivs: field('NoNewPrivs') };
}

/** How many TCP sockets the process holds that are connected to `port` on the loopback (IPv4 or IPv6). */
function socketsTo(pid: number, port: number): number {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const table of ['tcp', 'tcp6'])
    for (const row of readFileSync(`/proc/${pid}/net/${table}`, 'utf8').split('\n').slice(1)) {
      const cols = row.trim().split(/\s+/);
      if (cols.length > 9 && cols[2]!.endsWith(`:${hexPort}`)) inodes.add(cols[9]!);
    }
  let held = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      if (target.startsWith('socket:[') && inodes.has(target.slice(8, -1))) held += 1;
    } catch {
      // closed meanwhile
    }
  }
  return held;
}

const run = (r: RunnerHandle, token: string, args: string[] = []) =>
  r.client.run({ skill: 's', script: 'a.js', args, confirmToken: token });

describe('settings that would weaken the ledger stop the runner', () => {
  it.each([
    ['http://127.0.0.1:6379', /must start with redis:\/\/ or rediss:\/\//],
    ['redis://127.0.0.1:6379/0?tls=false', /may not carry \?options/],
    ['redis://127.0.0.1:6379/x', /database number/],
    ['not a url', /is not a URL/],
  ])('SKILL_MCP_REDIS_URL=%s is refused with a message naming it', async (url, why) => {
    await expect(runner(url)).rejects.toThrow(why);
  });

  it('SKILL_MCP_REDIS_CA_FILE without rediss:// is refused (a CA for a plain connection would mean TLS was expected)', async () => {
    await expect(runner('redis://127.0.0.1:1', { SKILL_MCP_REDIS_CA_FILE: '/dev/null' })).rejects.toThrow(/not rediss:\/\//);
  });
});

describe.skipIf(!REDIS_SERVER)(`with a real redis-server${REDIS_SERVER ? '' : ` (skipped: ${NO_REDIS_REASON})`}`, () => {
  let redis: RedisHandle;
  beforeAll(async () => {
    redis = await startRedis({ password: PASSWORD });
  });

  it('a token minted by one runner runs on another sharing the Redis, once; describe reports the ledger', async () => {
    let [a, b] = await Promise.all([runner(redis.url), runner(redis.url)]);
    const token = await mint(a);
    expect(await run(b, token)).toMatchObject({ ok: true });
    expect(await run(a, token)).toMatchObject({ ok: false, error: { code: 'TOKEN_REUSED' } });
    expect(await run(b, token)).toMatchObject({ ok: false, error: { code: 'TOKEN_REUSED' } });
    // An orderly stop is no outage: nothing about the ledger is recorded by it.
    await a.stop();
    expect(auditLines(a.stateDir).filter((l) => String(l['event']).startsWith('ledger.'))).toEqual([]);
    a = await runner(redis.url, { SKILL_MCP_AUDIT_HOST_ID: 'again' });
    const described = await a.client.describe();
    expect(described).toMatchObject({ ok: true, result: { ledger: { kind: 'redis', available: true, errors: 0 } } });
    // The marker outlives the token (its TTL, 600 s by default, plus the 10 min grace).
    const keys = redis.cli('--scan', '--pattern', 'skill-mcp:spent:*').trim().split('\n');
    expect(keys).toHaveLength(1);
    expect(Number(redis.cli('pttl', keys[0]!))).toBeGreaterThan(600_000);
  });

  it('a wrong password: runs are refused LEDGER_UNAVAILABLE saying what to check, the token stays unspent, describe still answers', async () => {
    const wrong = redis.url.replace(/:[^:@/]+@/, ':wrong@');
    const bad = await runner(wrong);
    const good = await runner(redis.url);
    const token = await mint(bad);
    const refused = await run(bad, token);
    expect(refused).toMatchObject({
      ok: false,
      error: { code: 'LEDGER_UNAVAILABLE', message: expect.stringMatching(/SKILL_MCP_REDIS_URL.*password/) },
    });
    // Security: the message is read by the model: no password, no host or port.
    expect(JSON.stringify(refused)).not.toMatch(/wrong|correct horse|127\.0\.0\.1|:\d{4,5}/);
    expect(await bad.client.describe()).toMatchObject({ ok: true, result: { ledger: { kind: 'redis', available: false } } });
    await awaitAuditLine(bad.stateDir, (l) => l['event'] === 'ledger.unavailable');
    // Nothing was spent: the same token runs on a runner that can reach the ledger.
    expect(await run(good, token)).toMatchObject({ ok: true });
  });

  it('Redis that stops answering (SIGSTOP): the run is refused when the read times out; once it answers again the runner says so and the token runs once', async () => {
    const [a, b] = await Promise.all([
      runner(redis.url, { SKILL_MCP_REDIS_TIMEOUT_MS: '300' }),
      runner(redis.url, { SKILL_MCP_REDIS_TIMEOUT_MS: '300' }),
    ]);
    const token = await mint(a, ['stall']);
    redis.pause();
    let refused: Awaited<ReturnType<typeof run>>;
    try {
      refused = await run(a, token, ['stall']);
    } finally {
      redis.resume();
    }
    expect(refused).toMatchObject({
      ok: false,
      error: { code: 'LEDGER_UNAVAILABLE', message: expect.stringMatching(/approval was not used/) },
    });
    await awaitAuditLine(a.stateDir, (l) => l['event'] === 'ledger.unavailable' && l['why'] === 'timeout');
    await awaitAuditLine(a.stateDir, (l) => l['event'] === 'run.reject' && l['reason'] === 'ledger-unavailable');
    // The socket never closed: the runner finds out by itself that Redis answers again.
    await awaitAuditLine(a.stateDir, (l) => l['event'] === 'ledger.restored');
    expect(await run(b, token, ['stall'])).toMatchObject({ ok: true });
    expect(await run(a, token, ['stall'])).toMatchObject({ ok: false, error: { code: 'TOKEN_REUSED' } });
  });

  it('a spend whose answer never comes (held past the timeout, then applied): the run is refused, the marker that landed is taken back (token.released), and the token runs once elsewhere', async () => {
    const proxy = await holdingProxy(redis.port, PASSWORD);
    try {
      const a = await runner(proxy.url, { SKILL_MCP_REDIS_TIMEOUT_MS: '300' });
      const b = await runner(redis.url);
      const token = await mint(a, ['unsure']);
      proxy.holdSpends = true;
      const refused = run(a, token, ['unsure']);
      await proxy.held();
      expect(await refused).toMatchObject({ ok: false, error: { code: 'LEDGER_UNAVAILABLE' } });
      // Now Redis gets the SET: the token is marked spent though nothing ran...
      proxy.release();
      // ...and the runner that sent it deletes its own marker (only if it still holds its value).
      const released = await awaitAuditLine(a.stateDir, (l) => l['event'] === 'token.released');
      const reject = await awaitAuditLine(a.stateDir, (l) => l['event'] === 'run.reject' && l['reason'] === 'ledger-unavailable');
      expect(released['token_id']).toBe(reject['token_id']);
      expect(await run(b, token, ['unsure'])).toMatchObject({ ok: true });
      expect(await run(a, token, ['unsure'])).toMatchObject({ ok: false, error: { code: 'TOKEN_REUSED' } });
    } finally {
      await proxy.close();
    }
  });

  it('an unreachable Redis at start: the runner starts, says so, refuses runs; it connects by itself when Redis comes up', async () => {
    const late = await startRedis();
    await late.kill();
    const r = await runner(late.url);
    expect(r.stderr()).toMatch(/cannot be reached \(ECONNREFUSED\).*LEDGER_UNAVAILABLE/);
    const token = await mint(r);
    expect(await run(r, token)).toMatchObject({ ok: false, error: { code: 'LEDGER_UNAVAILABLE' } });
    await late.start();
    await awaitAuditLine(r.stateDir, (l) => l['event'] === 'ledger.restored');
    expect(await run(r, token)).toMatchObject({ ok: true });
  });

  it("rediss:// checks the server's certificate: with the CA that signed it (SKILL_MCP_REDIS_CA_FILE) a token runs once; with the system CAs only, nothing runs", async () => {
    const secure = await startRedis({ tls: true, password: PASSWORD });
    expect(secure.url).toMatch(/^rediss:/);
    const trusting = await runner(secure.url, { SKILL_MCP_REDIS_CA_FILE: secure.caFile! });
    const token = await mint(trusting, ['tls']);
    expect(await run(trusting, token, ['tls'])).toMatchObject({ ok: true });
    expect(await run(trusting, token, ['tls'])).toMatchObject({ ok: false, error: { code: 'TOKEN_REUSED' } });
    const doubting = await runner(secure.url);
    const other = await mint(doubting, ['tls']);
    expect(await run(doubting, other, ['tls'])).toMatchObject({ ok: false, error: { code: 'LEDGER_UNAVAILABLE' } });
    const down = await awaitAuditLine(doubting.stateDir, (l) => l['event'] === 'ledger.unavailable');
    expect(down['why']).toMatch(/CERT|SIGNATURE|ISSUER/);
    expect(down['redis']).toBe(`rediss://127.0.0.1:${secure.port}/0`);
  });

  it("attack surface: the process that speaks to Redis is not the runner — the runner holds no connection to it; as root the link runs under a uid of its own (not root, not the front's), with no capability and no_new_privs", async () => {
    const range = uidRange(12);
    const r = await runner(redis.url, {}, range);
    const token = await mint(r);
    expect(await run(r, token)).toMatchObject({ ok: true });
    const runnerPid = r.proc.pid!;
    const link = linkOf(runnerPid);
    expect(link, 'the runner started a Redis link process').toBeDefined();
    expect(socketsTo(runnerPid, redis.port)).toBe(0);
    expect(socketsTo(link!, redis.port)).toBeGreaterThan(0);
    const creds = credsOf(link!);
    expect(creds.capEff).toBe(0n);
    if (process.getuid!() === 0) {
      expect(creds.uid).not.toBe(0);
      expect(creds.uid).not.toBe(credsOf(runnerPid).uid);
      const [first, last] = range.split('-').map(Number);
      expect(creds.uid).toBeGreaterThanOrEqual(first!);
      expect(creds.uid).toBeLessThanOrEqual(last!);
      expect(creds.noNewPrivs).toBe('1');
    }
    // Nothing of the runner's environment reaches it (the settings come on its stdin).
    const environ = readFileSync(`/proc/${link}/environ`, 'utf8').split('\0').filter(Boolean);
    expect(environ).toEqual(['PATH=/usr/bin:/bin']);
  });

  it('attack: a Redis link that dies (SIGKILL) ends no runner — runs are refused LEDGER_UNAVAILABLE until a new link is up, both said in the audit log, then the same token runs once', async () => {
    const r = await runner(redis.url);
    const token = await mint(r);
    const first = linkOf(r.proc.pid!)!;
    process.kill(first, 'SIGKILL');
    const down = await awaitAuditLine(r.stateDir, (l) => l['event'] === 'ledger.unavailable');
    expect(down['why']).toBe('the Redis link process ended: SIGKILL');
    await awaitAuditLine(r.stateDir, (l) => l['event'] === 'ledger.restored');
    const second = linkOf(r.proc.pid!);
    expect(second).toBeDefined();
    expect(second).not.toBe(first);
    expect(await run(r, token)).toMatchObject({ ok: true });
    expect(await run(r, token)).toMatchObject({ ok: false, error: { code: 'TOKEN_REUSED' } });
    expect(await r.client.describe()).toMatchObject({ ok: true, result: { ledger: { kind: 'redis', available: true } } });
  });

  it('without SKILL_MCP_REDIS_URL the file ledger stays the default', async () => {
    const r = await startRunner({ env: { SKILLS_DIR: skills }, args: ['--uid-range', uidRange(12)], base: tempDir('file-ledger') });
    started.push(r);
    const { token } = await prepareAndRun(r.client, 's', 'a.js');
    expect(await run(r, token)).toMatchObject({ ok: false, error: { code: 'TOKEN_REUSED' } });
    expect(await r.client.describe()).toMatchObject({ ok: true, result: { ledger: { kind: 'file', available: true } } });
    // The spend is a marker in the state dir, not a key anywhere.
    expect(readdirSync(join(r.stateDir, 'spent')).filter((n) => !n.startsWith('.'))).toHaveLength(1);
  });
});
