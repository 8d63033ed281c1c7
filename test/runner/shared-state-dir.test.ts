/**
 * Several runners on one state directory at the same time (standalone: every `skill-mcp` a user
 * starts — Claude Desktop, Claude Code, one-shot CLIs — runs its own runner on the default state
 * dir, sharing `token.key`). A token spent through one is refused by the others (also when two race
 * with it), their audit appends form one unbroken chain, a lock left by a killed process does not
 * block appends, and tokens spent before the upgrade (the old `spent-tokens` file) stay spent.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lineHash } from '../../runner/audit/log.js';
import { auditLines, BIN, prepareAndRun, startRunner, tempDir, tokenLogIdOf, uidRange, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

const skills = writeSkills({
  s: { run: [{ script: 'a.js', interpreter: 'node', timeout: 5 }], files: { 'a.js': 'process.stdout.write("ran")' } },
});
const env = { SKILLS_DIR: skills };
const started: RunnerHandle[] = [];
afterEach(async () => {
  for (const r of started.splice(0)) await r.stop();
});

/** Two runners started at the same moment on one state dir, each with its own socket and uid range. */
async function twoRunners(stateDir = join(tempDir('shared'), 'state')): Promise<[RunnerHandle, RunnerHandle]> {
  const pair = await Promise.all([0, 1].map(() => startRunner({ env, stateDir, args: ['--uid-range', uidRange(7)] })));
  started.push(...pair);
  return pair as [RunnerHandle, RunnerHandle];
}

async function mint(runner: RunnerHandle, args: string[] = []): Promise<string> {
  const prepared = await runner.client.prepare({ skill: 's', script: 'a.js', args });
  if (!prepared.ok) throw new Error(`prepare refused: ${prepared.error.code}`);
  return prepared.result.confirmToken;
}

const run = (runner: RunnerHandle, token: string, args: string[] = []) =>
  runner.client.run({ skill: 's', script: 'a.js', args, confirmToken: token });
const claimsOf = (token: string) =>
  JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { jti: string; exp: number };

function verify(stateDir: string): { status: number | null; stdout: string } {
  const r = spawnSync(process.execPath, [BIN, 'audit', 'verify'], {
    encoding: 'utf8',
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', SKILL_MCP_STATE_DIR: stateDir },
  });
  return { status: r.status, stdout: r.stdout };
}

/**
 * The whole log is one chain: seq 1..n with no gap or duplicate, and the anchor names its last line.
 * A run's answer waits for its exit line on disk, not for the anchor naming it (runner/audit/log.ts
 * appendDurable): the anchor follows at once, so verify may see the tail "anchored: 1 line(s) after"
 * for a moment — it is asked again until the anchor caught up, never accepting a cut.
 */
async function expectOneChain(stateDir: string): Promise<void> {
  let verdict = verify(stateDir);
  for (let i = 0; i < 100 && verdict.status === 0 && verdict.stdout.includes('tail anchored'); i++) {
    await new Promise((ok) => setTimeout(ok, 50));
    verdict = verify(stateDir);
  }
  expect(verdict).toMatchObject({ status: 0, stdout: expect.stringContaining('tail matches the anchor') });
  const raw = readFileSync(join(stateDir, 'audit.log'), 'utf8').split('\n').filter(Boolean);
  expect(raw.map((l) => (JSON.parse(l) as { seq: number }).seq)).toEqual(raw.map((_, i) => i + 1));
  const anchor = JSON.parse(readFileSync(join(stateDir, 'audit.head'), 'utf8')) as { seq: number; sha256: string };
  expect(anchor).toMatchObject({ seq: raw.length, sha256: lineHash(raw.at(-1)!) });
}

describe('two runners on one state dir: spent tokens', () => {
  it('a token run through one runner is refused by the other as TOKEN_REUSED (both ways)', async () => {
    const [a, b] = await twoRunners();
    const fromA = await mint(a);
    expect(await run(a, fromA)).toMatchObject({ ok: true });
    expect(await run(b, fromA)).toMatchObject({ ok: false, error: { code: 'TOKEN_REUSED' } });
    const fromB = await mint(b);
    expect(await run(b, fromB)).toMatchObject({ ok: true });
    expect(await run(a, fromB)).toMatchObject({ ok: false, error: { code: 'TOKEN_REUSED' } });
    // They share the key: a token minted by one runs once in the other.
    const crossed = await mint(a, ['x']);
    expect(await run(b, crossed, ['x'])).toMatchObject({ ok: true });
    expect(await run(a, crossed, ['x'])).toMatchObject({ ok: false, error: { code: 'TOKEN_REUSED' } });
  });

  it('the same token fired at both runners at once runs exactly once; the audit log shows one accept and one token-reused', async () => {
    const [a, b] = await twoRunners();
    for (let round = 0; round < 6; round++) {
      const token = await mint(round % 2 ? b : a, [String(round)]);
      const answers = await Promise.all([run(a, token, [String(round)]), run(b, token, [String(round)])]);
      expect(answers.filter((x) => x.ok)).toHaveLength(1);
      expect(answers.filter((x) => !x.ok).map((x) => !x.ok && x.error.code)).toEqual(['TOKEN_REUSED']);
      const about = auditLines(a.stateDir).filter((l) => l['token_id'] === tokenLogIdOf(token));
      expect(about.filter((l) => l['event'] === 'run.accept')).toHaveLength(1);
      expect(about.filter((l) => l['event'] === 'run.reject').map((l) => l['reason'])).toEqual(['token-reused']);
    }
    await expectOneChain(a.stateDir);
  });
});

describe('two runners on one state dir: the audit chain', () => {
  it('many prepares and refusals appended concurrently by both runners form one unbroken chain matching the anchor', async () => {
    const [a, b] = await twoRunners();
    // 8 connections per runner at a time (a runner admits 16), each sending prepares back to back.
    const worker = async (r: RunnerHandle, w: number) => {
      const answers = [];
      for (let i = 0; i < 8; i++)
        answers.push(
          await r.client.prepare(
            i % 4 === 0 ? { skill: 'nope', script: 'a.js', args: [] } : { skill: 's', script: 'a.js', args: [`${w}-${i}`] },
          ),
        );
      return answers;
    };
    const answers = (await Promise.all([a, b].flatMap((r) => Array.from({ length: 8 }, (_, w) => worker(r, w))))).flat();
    expect(answers.filter((x) => x.ok)).toHaveLength(96);
    const lines = auditLines(a.stateDir);
    expect(lines.filter((l) => l['event'] === 'run.prepare')).toHaveLength(128);
    expect(
      lines
        .filter((l) => l['event'] === 'runner.start')
        .map((l) => l['pid'])
        .sort(),
    ).toEqual([a.proc.pid, b.proc.pid].sort());
    await expectOneChain(a.stateDir);
  });

  it('a runner starting beside a live one that keeps appending does not report the log as cut', async () => {
    const stateDir = join(tempDir('shared'), 'state');
    const first = await startRunner({ env, stateDir, args: ['--uid-range', uidRange(7)] });
    started.push(first);
    let busy = true;
    const hammer = (async () => {
      while (busy) await first.client.prepare({ skill: 'nope', script: 'a.js', args: [] });
    })();
    for (let i = 0; i < 3; i++) {
      const next = await startRunner({ env, stateDir, args: ['--uid-range', uidRange(7)] });
      // Its start line (with its anchor finding) comes with its first decision.
      await next.client.prepare({ skill: 'nope', script: 'a.js', args: [] });
      await next.stop();
    }
    busy = false;
    await hammer;
    const starts = auditLines(stateDir)
      .filter((l) => l['event'] === 'runner.start')
      .slice(1);
    // The anchor is written after each batch's fsync, outside the lock: a runner starting meanwhile
    // may find lines past it ('ahead', which verify accepts) — never a cut or rolled-back log.
    expect(starts).toHaveLength(3);
    for (const start of starts) expect(['matched', 'ahead']).toContain(start['audit_anchor']);
    await expectOneChain(stateDir);
  });

  it('a lock left by a killed process is broken and the next append goes through at once', async () => {
    const stateDir = join(tempDir('shared'), 'state');
    const runner = await startRunner({ env, stateDir, args: ['--uid-range', uidRange(7)] });
    started.push(runner);
    const lock = join(stateDir, 'audit.lock');
    // A process that took the lock (pid and nonce, the holder's format) and was killed holding it.
    // Taken the way a holder takes it (a whole file linked into place, EEXIST while another holds it):
    // writing the lock's path directly could land on the runner's own lock file of the moment, which
    // its release then deletes (CI once saw the lock vanish under the test that way).
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const fs = require('fs'); const tmp = ${JSON.stringify(`${lock}.test-holder`)}; fs.writeFileSync(tmp, process.pid + ' 0123456789abcdef\\n'); const take = () => { try { fs.linkSync(tmp, ${JSON.stringify(lock)}); } catch (e) { if (e.code !== 'EEXIST') throw e; return setTimeout(take, 5); } fs.unlinkSync(tmp); console.log('held'); setInterval(() => {}, 1000); }; take();`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise((ok) => holder.stdout!.once('data', ok));
    holder.kill('SIGKILL');
    await new Promise((ok) => holder.once('exit', ok));
    expect(existsSync(lock)).toBe(true);
    const t0 = Date.now();
    expect(await runner.client.prepare({ skill: 's', script: 'a.js', args: [] })).toMatchObject({ ok: true });
    // Not made to wait out the 10 s a live holder's lock is trusted for (2 s was too tight on a loaded machine).
    expect(Date.now() - t0).toBeLessThan(8_000);
    // The dead holder's lock is gone: the answer may come while the anchor is published under a lock of
    // its own (runner/audit/log.ts: a commit goes ahead at its fsync), so that one is waited out.
    // (Read without a separate exists check: the runner's own lock of the moment may go in between.)
    const deadHolderLock = (): boolean => {
      try {
        return readFileSync(lock, 'utf8').includes('0123456789abcdef');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
        throw error;
      }
    };
    while (deadHolderLock()) await new Promise((ok) => setTimeout(ok, 10));
    while (existsSync(lock)) await new Promise((ok) => setTimeout(ok, 10));
    // A live pid cannot keep a lock forever either (a reused pid, or a holder frozen far longer than an append takes).
    // Made old before it is linked into place (a link keeps the file's times), and linked the way a
    // holder takes the lock, so it never lands on a lock the runner holds at that moment.
    const aged = `${lock}.test-aged`;
    writeFileSync(aged, `${process.pid} fedcba9876543210\n`);
    const old = new Date(Date.now() - 60_000);
    utimesSync(aged, old, old);
    await takeLock(aged, lock);
    expect(await runner.client.prepare({ skill: 's', script: 'a.js', args: [] })).toMatchObject({ ok: true });
    while (existsSync(lock)) await new Promise((ok) => setTimeout(ok, 10));
    await expectOneChain(stateDir);
  });
});

/** Links `file` to the lock's name once no one holds it (as runner/file-lock.ts takes it), then drops `file`. */
async function takeLock(file: string, lock: string): Promise<void> {
  for (;;) {
    try {
      linkSync(file, lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      await new Promise((ok) => setTimeout(ok, 5));
    }
  }
  unlinkSync(file);
}

describe('upgrade from the single spent-tokens file', () => {
  it('tokens spent before the upgrade are still refused as TOKEN_REUSED, and the old file is migrated to markers', async () => {
    const stateDir = join(tempDir('legacy'), 'state');
    const first = await startRunner({ env, stateDir, args: ['--uid-range', uidRange(7)] });
    started.push(first);
    const spentBefore = await mint(first);
    const expiredLongAgo = 'Zexpiredexpiredexpired';
    await first.stop();
    // What an earlier version left: `<jti> <exp>` lines (and no markers).
    writeFileSync(
      join(stateDir, 'spent-tokens'),
      `${claimsOf(spentBefore).jti} ${claimsOf(spentBefore).exp}\n${expiredLongAgo} ${Date.now() - 86_400_000}\n`,
      { mode: 0o600 },
    );
    const [a, b] = await twoRunners(stateDir);
    expect(await run(a, spentBefore)).toMatchObject({ ok: false, error: { code: 'TOKEN_REUSED' } });
    expect(await run(b, spentBefore)).toMatchObject({ ok: false, error: { code: 'TOKEN_REUSED' } });
    expect(existsSync(join(stateDir, 'spent-tokens'))).toBe(false);
    expect(readdirSync(join(stateDir, 'spent'))).toEqual([claimsOf(spentBefore).jti]);
  });

  it('markers are pruned only well after their token expired, never within its lifetime', async () => {
    const stateDir = join(tempDir('prune'), 'state');
    const spent = join(stateDir, 'spent');
    mkdirSync(spent, { recursive: true, mode: 0o700 });
    const marker = (name: string, exp: number) => writeFileSync(join(spent, name), `${exp}\n`, { mode: 0o600 });
    marker('live_live_live_live', Date.now() + 3_600_000);
    marker('justexpiredjustexpired', Date.now() - 60_000); // within the grace: a run may still be deciding
    marker('longgonelonggonelonggone', Date.now() - 86_400_000);
    const runner = await startRunner({ env, stateDir, args: ['--uid-range', uidRange(7)] });
    started.push(runner);
    expect(readdirSync(spent).sort()).toEqual(['justexpiredjustexpired', 'live_live_live_live']);
  });
});

it('a token runs once in a one-runner setup too (the marker is what is checked)', async () => {
  const runner = await startRunner({ env, args: ['--uid-range', uidRange(7)] });
  started.push(runner);
  const { token } = await prepareAndRun(runner.client, 's', 'a.js');
  expect(readdirSync(join(runner.stateDir, 'spent'))).toEqual([claimsOf(token).jti]);
  expect(await run(runner, token)).toMatchObject({ ok: false, error: { code: 'TOKEN_REUSED' } });
});
