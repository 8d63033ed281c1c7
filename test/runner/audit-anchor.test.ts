/**
 * The audit log's anchor (`audit.head`): lines deleted from the end of the log, or a log rolled
 * back to an older copy, are invisible to the hash chain alone; `skill-mcp audit verify` finds them
 * by comparing the tail with the anchor the runner rewrites after every append — also when the log
 * was cut while the runner was stopped and the runner has started again since.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, lstatSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkAnchor, publishAnchor, stageAnchor } from '../../runner/audit/anchor.js';
import type { AuditAnchor, TailEntry } from '../../runner/audit/anchor.js';
import { AuditLog, lineHash } from '../../runner/audit/log.js';
import { BIN, prepareAndRun, startRunner, tempDir, uidRange, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

const skills = writeSkills({
  s: { run: [{ script: 'a.js', interpreter: 'node', timeout: 5 }], files: { 'a.js': 'process.stdout.write("ok")' } },
});
const started: RunnerHandle[] = [];
afterEach(async () => {
  for (const r of started.splice(0)) await r.stop();
});

function verify(args: string[]): { status: number | null; stdout: string } {
  const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin' }; // no SKILL_MCP_STATE_DIR: the anchor is looked for beside FILE
  const r = spawnSync(process.execPath, [BIN, 'audit', 'verify', ...args], { encoding: 'utf8', env });
  return { status: r.status, stdout: r.stdout };
}

/** A runner that has written a few lines (start, prepare, accept, exit, checkpoint), and its log's path. */
async function busyRunner(base = tempDir('anchor')): Promise<{ runner: RunnerHandle; log: string; base: string }> {
  const runner = await startRunner({ env: { SKILLS_DIR: skills }, base, args: ['--uid-range', uidRange(6)] });
  started.push(runner);
  await prepareAndRun(runner.client, 's', 'a.js');
  const log = join(runner.stateDir, 'audit.log');
  // The answer waits for the exit line on disk; the anchor naming it follows at once (log.ts appendDurable).
  await anchorCaughtUp(log, join(runner.stateDir, 'audit.head'));
  return { runner, log, base };
}

/** Waits (a bounded while) until the anchor names the log's last line. */
async function anchorCaughtUp(log: string, head: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const last = lines(log).at(-1);
    const anchor = existsSync(head) ? (JSON.parse(readFileSync(head, 'utf8')) as AuditAnchor) : undefined;
    if (last !== undefined && anchor?.seq === (JSON.parse(last) as { seq: number }).seq) return;
    await new Promise((ok) => setTimeout(ok, 25));
  }
}

const lines = (file: string): string[] => readFileSync(file, 'utf8').split('\n').filter(Boolean);

describe('audit.head', () => {
  it('is 0600 in the state dir and names the last line the runner wrote (seq and sha256)', async () => {
    const { runner, log } = await busyRunner();
    const head = join(runner.stateDir, 'audit.head');
    expect(statSync(head).mode & 0o777).toBe(0o600);
    const anchor = JSON.parse(readFileSync(head, 'utf8')) as AuditAnchor;
    const last = lines(log).at(-1)!;
    expect(anchor).toEqual({ v: 1, log, seq: (JSON.parse(last) as { seq: number }).seq, sha256: lineHash(last) });
    expect(verify([log])).toMatchObject({ status: 0, stdout: expect.stringContaining('tail matches the anchor') });
  });

  it('detects lines deleted from the end of the log (truncation) and names the last line left', async () => {
    const { log } = await busyRunner();
    const kept = lines(log).slice(0, 2);
    writeFileSync(log, `${kept.join('\n')}\n`);
    const out = verify([log]);
    expect(out.status).toBe(1);
    expect(out.stdout).toMatch(
      /^TRUNCATED: the log ends at line 2 \(seq 2\) but the runner last wrote seq 5: lines after line 2 were deleted/,
    );
  });

  it('detects a log emptied in place', async () => {
    const { log } = await busyRunner();
    writeFileSync(log, '');
    expect(verify([log])).toMatchObject({ status: 1, stdout: expect.stringContaining('the log is empty but the runner last wrote seq 5') });
  });

  it('detects a rollback that forges a correctly chained line with the anchored seq', async () => {
    const { log } = await busyRunner();
    const kept = lines(log).slice(0, 4);
    const forged = JSON.stringify({ seq: 5, ts: new Date().toISOString(), prev: lineHash(kept[3]!), event: 'run.wait', run_id: 'forged' });
    writeFileSync(log, `${[...kept, forged].join('\n')}\n`);
    expect(verify([log])).toMatchObject({
      status: 1,
      stdout: expect.stringMatching(/^ROLLED BACK: line 5 \(seq 5\) is not the line the runner wrote/),
    });
  });

  it('a log cut while the runner was stopped stays detectable after the runner restarts and re-anchors', async () => {
    const { runner, log, base } = await busyRunner();
    await runner.stop();
    const anchored = (JSON.parse(lines(log).at(-1)!) as { seq: number }).seq;
    writeFileSync(log, `${lines(log).slice(0, 2).join('\n')}\n`);
    const again = await startRunner({ env: { SKILLS_DIR: skills }, base, args: ['--uid-range', uidRange(6)] });
    started.push(again);
    // Its start line comes with its first decision.
    expect(await again.client.prepare({ skill: 's', script: 'a.js', args: [] })).toMatchObject({ ok: true });
    const start = JSON.parse(lines(log)[2]!) as Record<string, unknown>;
    expect(start).toMatchObject({ event: 'runner.start', audit_anchor: 'truncated', audit_anchor_seq: anchored, audit_log_last_seq: 2 });
    expect(again.stderr()).toContain('the audit log does not match its anchor');
    const out = verify([log]);
    expect(out.status).toBe(1);
    expect(out.stdout).toMatch(/^TRUNCATED before line 3: the runner found at its start \(line 3\) that the log had been cut off/);
  });

  it('a copied log without an anchor still verifies, and says its tail is unanchored', async () => {
    const { log } = await busyRunner();
    const copy = join(tempDir('anchor-copy'), 'audit.log');
    copyFileSync(log, copy);
    expect(verify([copy])).toMatchObject({ status: 0, stdout: expect.stringContaining('tail unanchored') });
    // Judged against the live anchor, the copy is not mistaken for a truncated live log.
    expect(verify(['--head', join(dirname(log), 'audit.head'), copy])).toMatchObject({
      status: 0,
      stdout: expect.stringContaining('is for'),
    });
    // An anchor the operator names must exist: its absence may be the tampering.
    expect(verify(['--head', join(dirname(copy), 'missing.head'), copy])).toMatchObject({
      status: 1,
      stdout: expect.stringContaining('UNVERIFIED tail'),
    });
  });
});

describe('checkAnchor', () => {
  const entries: TailEntry[] = [1, 2, 3].map((seq) => ({ line: seq, seq, sha256: `h${seq}` }));
  const anchor = (seq: number, sha256: string): AuditAnchor => ({ v: 1, log: '/l', seq, sha256 });

  it('matches when the last line is the anchored one', () => {
    expect(checkAnchor(entries, anchor(3, 'h3'))).toEqual({ state: 'matched' });
  });
  it('accepts lines after an intact anchored line (a stop between the log write and the anchor rename)', () => {
    expect(checkAnchor(entries, anchor(2, 'h2'))).toEqual({ state: 'ahead', extra: 1 });
  });
  it('reports a log ending before the anchored seq as truncated', () => {
    expect(checkAnchor(entries, anchor(5, 'h5'))).toEqual({ state: 'truncated', lastLine: 3, lastSeq: 3, anchorSeq: 5 });
  });
  it('reports a different line at the anchored seq as replaced', () => {
    expect(checkAnchor(entries, anchor(3, 'other'))).toEqual({ state: 'replaced', line: 3, anchorSeq: 3 });
  });
});

describe('a line an answer waits on (appendDurable)', () => {
  it('resolves with its line in the log; the anchor names it right after; a failed fsync neither rejects nor loses it', async () => {
    const dir = tempDir('anchor-durable');
    const path = join(dir, 'audit.log');
    const head = join(dir, 'audit.head');
    let failSync = false;
    const audit = new AuditLog({
      path,
      anchorPath: head,
      fault: (point) => {
        if (failSync && point === 'sync') throw Object.assign(new Error('injected'), { code: 'EIO' });
      },
    });
    audit.begin(() => ({ event: 'runner.start' }));
    // In one batch with an ordinary append: the durable line is answered first, before the anchor
    // is published (an ordinary append waits for that), while the anchor still names it right after.
    const order: string[] = [];
    // A first line starts a batch; the two below queue behind it and go out together in the next.
    const first = audit.append({ event: 'run.prepare', skill: 's', script: 'first' });
    await Promise.all([
      first,
      audit.append({ event: 'run.prepare', skill: 's', script: 'a' }).then(() => order.push('append')),
      audit.appendDurable({ event: 'run.exit', run_id: 'one', exit_code: 0 }).then(() => order.push('durable')),
    ]);
    expect(order).toEqual(['durable', 'append']);
    expect(
      lines(path)
        .map((l) => JSON.parse(l) as { event: string; run_id?: string })
        .at(-1),
    ).toMatchObject({ event: 'run.exit', run_id: 'one' });
    await audit.flush();
    expect((JSON.parse(readFileSync(head, 'utf8')) as AuditAnchor).seq).toBe(lines(path).length);
    failSync = true;
    await expect(audit.appendDurable({ event: 'run.exit', run_id: 'two', exit_code: 0 })).resolves.toBeUndefined();
    failSync = false;
    await audit.close(() => ({
      event: 'runner.stop',
      pid: process.pid,
      config_sha256: '0'.repeat(64),
      uptime_ms: 0,
      lines: 0,
      why: 'test',
    }));
    // Written once (the failed fsync's batch is not written again), and the chain holds.
    expect(lines(path).filter((l) => l.includes('"run_id":"two"'))).toHaveLength(1);
    expect(verify([path])).toMatchObject({ status: 0 });
  });
});

describe('staging and publishing the anchor (anchor.ts)', () => {
  const anchor = (seq: number): AuditAnchor => ({ v: 1, log: '/state/audit.log', seq, sha256: 'a'.repeat(64) });

  it('attack: a link planted at the temp name is removed, not followed — the file it points at keeps its bytes', async () => {
    const dir = tempDir('anchor-stage');
    const head = join(dir, 'audit.head');
    const victim = join(dir, 'victim');
    writeFileSync(victim, 'precious\n');
    symlinkSync(victim, `${head}.${process.pid}.tmp`);
    await publishAnchor(head, anchor(7), await stageAnchor(head, anchor(7)));
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    expect(JSON.parse(readFileSync(head, 'utf8'))).toEqual(anchor(7));
    expect(lstatSync(head).isFile()).toBe(true);
    expect(existsSync(`${head}.${process.pid}.tmp`)).toBe(false);
  });

  it('the new anchor is in place when onVisible is called, before the folder fsync resolves the publish', async () => {
    const dir = tempDir('anchor-visible');
    const head = join(dir, 'audit.head');
    await publishAnchor(head, anchor(1), await stageAnchor(head, anchor(1)));
    let seen: unknown;
    const published = publishAnchor(head, anchor(2), await stageAnchor(head, anchor(2)), undefined, () => {
      seen = JSON.parse(readFileSync(head, 'utf8'));
    });
    expect(seen).toEqual(anchor(2));
    await published;
    expect(statSync(head).mode & 0o777).toBe(0o600);
  });

  it('under the lock, an anchor further along is not replaced by an older one (and the temp file goes)', async () => {
    const dir = tempDir('anchor-order');
    const head = join(dir, 'audit.head');
    const locked = <T>(fn: () => T): Promise<T> => Promise.resolve(fn());
    await publishAnchor(head, anchor(9), await stageAnchor(head, anchor(9)), locked);
    let visible = false;
    await publishAnchor(head, anchor(8), await stageAnchor(head, anchor(8)), locked, () => (visible = true));
    expect(JSON.parse(readFileSync(head, 'utf8'))).toEqual(anchor(9));
    expect(visible).toBe(false);
    expect(existsSync(`${head}.${process.pid}.tmp`)).toBe(false);
  });
});
