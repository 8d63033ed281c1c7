/**
 * One audit view across hosts: runners sharing a Redis mirror every line of their own hash-chained
 * log into one stream under their host id; `skill-mcp audit tail --redis` shows (and follows) all
 * hosts, `audit verify --redis` checks each host's chain from the stream alone and names the host
 * and place where an entry was deleted, forged or cut; lines written while Redis was away arrive
 * once it is back. Real runners, a real redis-server, the built bin.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { awaitAuditLine, auditLines, BIN, prepareAndRun, startRunner, uidRange, writeSkills, type RunnerHandle } from './harness.js';
import { NO_REDIS_REASON, REDIS_SERVER, startRedis, type RedisHandle } from '../redis-harness.js';

const skills = writeSkills({
  s: { run: [{ script: 'a.js', interpreter: 'node', timeout: 5 }], files: { 'a.js': 'process.stdout.write("ran")' } },
});
const SECRET = randomBytes(32).toString('hex');
const started: RunnerHandle[] = [];
afterEach(async () => {
  for (const r of started.splice(0)) await r.stop();
});

function cli(args: string[], env: Record<string, string>): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, 'audit', ...args], {
    encoding: 'utf8',
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe.skipIf(!REDIS_SERVER)(`the audit stream${REDIS_SERVER ? '' : ` (skipped: ${NO_REDIS_REASON})`}`, () => {
  let redis: RedisHandle;
  beforeAll(async () => {
    redis = await startRedis();
  });

  /** Two runners, hosts `web-a` and `web-b`, under their own key prefix (one per test). */
  async function hosts(prefix: string, extra: Record<string, string> = {}): Promise<[RunnerHandle, RunnerHandle]> {
    const pair = await Promise.all(
      ['web-a', 'web-b'].map((host) =>
        startRunner({
          env: {
            SKILLS_DIR: skills,
            MCP_CONFIRM_SECRET: SECRET,
            SKILL_MCP_REDIS_URL: redis.url,
            SKILL_MCP_REDIS_PREFIX: prefix,
            SKILL_MCP_AUDIT_HOST_ID: host,
            ...extra,
          },
          args: ['--uid-range', uidRange(12)],
        }),
      ),
    );
    started.push(...pair);
    return pair as [RunnerHandle, RunnerHandle];
  }

  /** The stream's entries as [entry id, host, seq, line]. */
  function stream(prefix: string): [string, string, number, string][] {
    const out = redis.cli('--raw', 'xrange', `${prefix}audit`, '-', '+').split('\n');
    const entries: [string, string, number, string][] = [];
    for (let i = 0; i + 6 < out.length; i += 7) entries.push([out[i]!, out[i + 2]!, Number(out[i + 4]), out[i + 6]!]);
    return entries;
  }

  /** Resolves once the stream holds `host`'s line `seq` (the mirror copies after each append). */
  async function awaitMirrored(prefix: string, host: string, seq: number): Promise<void> {
    while (!stream(prefix).some(([, h, s]) => h === host && s === seq)) await new Promise((resolve) => setTimeout(resolve, 20));
  }

  async function mirroredAll(prefix: string, r: RunnerHandle, host: string): Promise<void> {
    // A runner that decided nothing wrote nothing (its runner.start comes with its first line).
    const count = existsSync(join(r.stateDir, 'audit.log')) ? auditLines(r.stateDir).length : 0;
    if (count > 0) await awaitMirrored(prefix, host, count);
  }

  it("every line of both hosts reaches the stream, byte for byte, in each host's order; verify --redis says each chain is intact", async () => {
    const [a, b] = await hosts('t1:');
    await prepareAndRun(a.client, 's', 'a.js', ['from a']);
    await prepareAndRun(b.client, 's', 'a.js', ['from b']);
    await Promise.all([mirroredAll('t1:', a, 'web-a'), mirroredAll('t1:', b, 'web-b')]);
    for (const [r, host] of [
      [a, 'web-a'],
      [b, 'web-b'],
    ] as const) {
      const local = auditLines(r.stateDir).map((l) => JSON.stringify(l));
      expect(
        stream('t1:')
          .filter(([, h]) => h === host)
          .map(([, , , line]) => line),
      ).toEqual(local);
    }
    const verified = cli(['verify', '--redis', redis.url], { SKILL_MCP_REDIS_PREFIX: 't1:' });
    expect(verified, verified.stderr).toMatchObject({ status: 0 });
    expect(verified.stdout).toMatch(
      /^host web-a: intact: \d+ lines \(seq 1-\d+\), head matches\nhost web-b: intact: \d+ lines \(seq 1-\d+\), head matches\n$/,
    );
    // The local log beside the stream: the same lines; a copy edited, or cut, diverges at the first differing seq.
    const log = join(a.stateDir, 'audit.log');
    const same = cli(['verify', '--redis', redis.url, log], { SKILL_MCP_REDIS_PREFIX: 't1:', SKILL_MCP_AUDIT_HOST_ID: 'web-a' });
    expect(same).toMatchObject({ status: 0, stdout: expect.stringMatching(/^local .* vs host web-a: the same \d+ line\(s\)/m) });
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    const edited = join(a.stateDir, '..', 'edited.log');
    writeFileSync(edited, `${lines.map((l, i) => (i === 2 ? l.replace('from a', 'from z') : l)).join('\n')}\n`);
    expect(
      cli(['verify', '--redis', redis.url, edited], { SKILL_MCP_REDIS_PREFIX: 't1:', SKILL_MCP_AUDIT_HOST_ID: 'web-a' }),
    ).toMatchObject({ status: 1, stdout: expect.stringContaining('DIVERGED at seq 3 differs') });
    writeFileSync(edited, `${lines.slice(0, 2).join('\n')}\n`);
    expect(
      cli(['verify', '--redis', redis.url, edited], { SKILL_MCP_REDIS_PREFIX: 't1:', SKILL_MCP_AUDIT_HOST_ID: 'web-a' }),
    ).toMatchObject({ status: 1, stdout: expect.stringContaining('DIVERGED at seq 3: the stream holds lines up to seq') });
  });

  it('tail --redis prints the last lines of all hosts led by their host id, and -f follows new ones as they are written', async () => {
    const [a, b] = await hosts('t2:');
    await prepareAndRun(a.client, 's', 'a.js');
    expect(await b.client.prepare({ skill: 's', script: 'a.js', args: ['b'] })).toMatchObject({ ok: true });
    await Promise.all([mirroredAll('t2:', a, 'web-a'), mirroredAll('t2:', b, 'web-b')]);
    // URL `-` reads SKILL_MCP_REDIS_URL: a password never has to be in argv.
    const tail = cli(['tail', '--redis', '-', '-n', '100'], { SKILL_MCP_REDIS_URL: redis.url, SKILL_MCP_REDIS_PREFIX: 't2:' });
    expect(tail.status, tail.stderr).toBe(0);
    expect(tail.stdout).toMatch(/^web-a \S+ #1 runner\.start /m);
    expect(tail.stdout).toMatch(/^web-b \S+ #1 runner\.start /m);
    expect(tail.stdout).toMatch(/^web-a \S+ #\d+ run\.exit /m);

    const follower = spawn(process.execPath, [BIN, 'audit', 'tail', '--redis', redis.url, '-n', '1', '-f'], {
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', SKILL_MCP_REDIS_PREFIX: 't2:' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let out = '';
      const seen = (re: RegExp): Promise<void> =>
        new Promise((resolve) => {
          const check = (): void => {
            if (re.test(out)) resolve();
          };
          follower.stdout.on('data', (chunk: Buffer) => {
            out += chunk.toString();
            check();
          });
          check();
        });
      await seen(/\n/); // the last line printed: it is following now
      const prepared = await b.client.prepare({ skill: 's', script: 'a.js', args: ['followed'] });
      expect(prepared.ok).toBe(true);
      await seen(/^web-b \S+ #\d+ run\.prepare skill=s script=a\.js token_id=/m);
    } finally {
      follower.kill('SIGTERM');
    }
  });

  it('verify --redis names the host and the place: an entry deleted from the middle, a forged line, the end cut off', async () => {
    const [a, b] = await hosts('t3:');
    await prepareAndRun(a.client, 's', 'a.js');
    await prepareAndRun(b.client, 's', 'a.js');
    await Promise.all([mirroredAll('t3:', a, 'web-a'), mirroredAll('t3:', b, 'web-b')]);
    const env = { SKILL_MCP_REDIS_PREFIX: 't3:' };
    const ofA = stream('t3:').filter(([, h]) => h === 'web-a');
    const ofB = stream('t3:').filter(([, h]) => h === 'web-b');

    // A line of web-a removed from the middle.
    redis.cli('xdel', 't3:audit', ofA[1]![0]);
    let verdict = cli(['verify', '--redis', redis.url], env);
    expect(verdict.status).toBe(1);
    expect(verdict.stdout).toMatch(/^host web-a: BROKEN at seq 3 \(stream entry \S+\): seq 3 follows 1/m);
    expect(verdict.stdout).toMatch(/^host web-b: intact/m);

    // web-b's last line removed: only the head can tell.
    redis.cli('xdel', 't3:audit', ofB.at(-1)![0]);
    verdict = cli(['verify', '--redis', redis.url], env);
    expect(verdict.stdout).toMatch(
      new RegExp(`^host web-b: TRUNCATED: the stream ends at seq ${ofB.length - 1}, the head says seq ${ofB.length}`, 'm'),
    );

    // A forged line for a host that has none: it does not start a chain.
    const forged = JSON.stringify({ seq: 7, ts: new Date().toISOString(), prev: 'f'.repeat(64), event: 'run.exit', run_id: 'x' });
    redis.cli('xadd', 't3:audit', '*', 'host', 'web-c', 'seq', '7', 'line', forged);
    verdict = cli(['verify', '--redis', redis.url], env);
    expect(verdict.stdout).toMatch(/^host web-c: BROKEN at seq 7 \(stream entry \S+\): the first line does not start the chain/m);
  });

  it('lines written while Redis was away (the outage itself among them) reach the stream once it is back; the chain stays whole', async () => {
    const [a, b] = await hosts('t4:');
    await Promise.all([mirroredAll('t4:', a, 'web-a'), mirroredAll('t4:', b, 'web-b')]);
    await redis.kill();
    try {
      const prepared = await a.client.prepare({ skill: 's', script: 'a.js', args: ['offline'] });
      expect(prepared.ok).toBe(true);
      if (!prepared.ok) return;
      expect(
        await a.client.run({ skill: 's', script: 'a.js', args: ['offline'], confirmToken: prepared.result.confirmToken }),
      ).toMatchObject({ ok: false, error: { code: 'LEDGER_UNAVAILABLE' } });
      await awaitAuditLine(a.stateDir, (l) => l['event'] === 'ledger.unavailable');
    } finally {
      await redis.start();
    }
    await awaitAuditLine(a.stateDir, (l) => l['event'] === 'ledger.restored');
    await awaitAuditLine(b.stateDir, (l) => l['event'] === 'ledger.restored');
    await Promise.all([mirroredAll('t4:', a, 'web-a'), mirroredAll('t4:', b, 'web-b')]);
    const events = stream('t4:')
      .filter(([, host]) => host === 'web-a')
      .map(([, , , line]) => (JSON.parse(line) as { event: string }).event);
    expect(events).toEqual(auditLines(a.stateDir).map((l) => l['event']));
    expect(events).toEqual(expect.arrayContaining(['ledger.unavailable', 'run.reject', 'ledger.restored']));
    // The idle host said it too: it lost the link without any run asking.
    expect(
      stream('t4:')
        .filter(([, host]) => host === 'web-b')
        .map(([, , , line]) => (JSON.parse(line) as { event: string }).event),
    ).toEqual(['runner.start', 'ledger.unavailable', 'ledger.restored']);
    expect(cli(['verify', '--redis', redis.url], { SKILL_MCP_REDIS_PREFIX: 't4:' })).toMatchObject({ status: 0 });
  });

  it('a rotating log is mirrored whole: lines of every segment reach the stream in order, verify --redis intact', async () => {
    const [a] = await hosts('t5:', { SKILL_MCP_AUDIT_MAX_BYTES: '3000' });
    for (let i = 0; i < 4; i++) await prepareAndRun(a.client, 's', 'a.js', [`r${i}`]);
    const { allSegments } = await import('../../runner/audit/segments.js');
    const log = join(a.stateDir, 'audit.log');
    const local = allSegments(log).flatMap((p) => readFileSync(p, 'utf8').trim().split('\n'));
    expect(allSegments(log).length).toBeGreaterThan(1);
    await awaitMirrored('t5:', 'web-a', local.length);
    expect(
      stream('t5:')
        .filter(([, h]) => h === 'web-a')
        .map(([, , , line]) => line),
    ).toEqual(local);
    expect(cli(['verify', '--redis', redis.url, log], { SKILL_MCP_REDIS_PREFIX: 't5:', SKILL_MCP_AUDIT_HOST_ID: 'web-a' })).toMatchObject({
      status: 0,
      stdout: expect.stringContaining('the same'),
    });
  });
});
