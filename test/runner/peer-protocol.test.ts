/**
 * A hostile peer on the runner's socket: garbage, oversized and deeply nested frames, requests
 * outside the table, and runs that end because another arrives, a cancel or a closed connection. Each ends in a refusal with a stable code, and the runner
 * keeps serving the next request.
 *
 * Tiers: `front` (nothing here depends on the uid or the level) and `node`: frames read off the
 * socket (node:net's chunks through the frame codec), and a run ended by its connection closing or a
 * cancel on another connection. The token refusals, decided by the runner's own code whatever the
 * Node major, are peer-tokens.test.ts (front only).
 */
import { createConnection } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FrameCodec } from '../../shared/frame.js';
import { randomBytes } from 'node:crypto';
import { auditLines, awaitAuditLine, helloFor, slotsFree, startRunner, uidRange } from './harness.js';
import type { RunnerHandle } from './harness.js';
import { peerSkills } from './peer-fixture.js';

/**
 * Sends raw bytes and collects answer frames: until `wantFrames` arrived, or — with `untilClosed` —
 * until the runner closes the connection (awaited as an event, not guessed from a pause).
 */
function raw(socketPath: string, bytes: Buffer, wantFrames: number, untilClosed = false): Promise<{ frames: unknown[]; closed: boolean }> {
  return new Promise((resolve) => {
    const codec = new FrameCodec(8 * 1024 * 1024);
    const frames: unknown[] = [];
    const socket = createConnection(socketPath, () => socket.write(bytes));
    const done = (closed: boolean): void => {
      socket.destroy();
      resolve({ frames, closed });
    };
    socket.on('data', (c: Buffer) => {
      for (const e of codec.push(c)) if (e.ok) frames.push(e.value);
      if (frames.length >= wantFrames && !untilClosed) done(false);
    });
    socket.on('end', () => done(true));
    socket.on('error', () => done(true));
  });
}

/** The run ids the runner has accepted so far. */
function acceptedRuns(): Set<unknown> {
  return new Set(
    auditLines(runner.stateDir)
      .filter((l) => l['event'] === 'run.accept')
      .map((l) => l['run_id']),
  );
}

function frameOf(body: Buffer): Buffer {
  const h = Buffer.alloc(4);
  h.writeUInt32BE(body.length, 0);
  return Buffer.concat([h, body]);
}

const { env } = peerSkills();
let runner: RunnerHandle;

async function stillServes(): Promise<void> {
  const answer = await runner.client.describe();
  expect(answer.ok).toBe(true);
}

beforeAll(async () => {
  runner = await startRunner({ env, args: ['--uid-range', uidRange(0)] });
});
// One slot, no queue: a run holds its slot until its folder is removed, after its answer; each test starts with it free.
beforeEach(() => slotsFree(runner.client));
afterAll(async () => {
  await runner?.stop();
});

describe('hostile peer: frames', () => {
  it('garbage bytes in a frame → BAD_FRAME, connection survives for the next frame', async () => {
    // 0xc1 is the one byte msgpack never uses: whatever random bytes follow, the frame cannot be read
    // (random bytes alone are now and then a valid msgpack value, which is BAD_REQUEST instead).
    const GARBAGE = Buffer.concat([Buffer.from([0xc1]), randomBytes(63)]);
    const codec = new FrameCodec(1024);
    const { frames } = await raw(
      runner.socketPath,
      Buffer.concat([codec.encode(helloFor(env)), frameOf(GARBAGE), codec.encode({ type: 'cancel', cancelId: '0'.repeat(32) })]),
      3,
    );
    expect(frames[1]).toMatchObject({ ok: false, error: { code: 'BAD_FRAME' } });
    expect(frames[2]).toMatchObject({ ok: true, result: { cancelled: false } });
    await stillServes();
  });

  it('a 4 GiB length header → FRAME_TOO_LARGE and the connection is closed', async () => {
    const h = Buffer.alloc(4);
    h.writeUInt32BE(0xffffffff, 0);
    const { frames, closed } = await raw(runner.socketPath, h, 1, true);
    expect(frames[0]).toMatchObject({ ok: false, error: { code: 'FRAME_TOO_LARGE' } });
    expect(closed).toBe(true);
    await stillServes();
  });

  it('a 100k-deep msgpack value → BAD_FRAME, the runner does not crash', async () => {
    const body = Buffer.alloc(100_001, 0x91);
    body[100_000] = 0xc0;
    const { frames } = await raw(runner.socketPath, frameOf(body), 1);
    expect(frames[0]).toMatchObject({ ok: false, error: { code: 'BAD_FRAME' } });
    expect(runner.proc.exitCode).toBeNull();
    await stillServes();
  });

  it('requests outside the closed table, or with extra keys, → BAD_REQUEST', async () => {
    const codec = new FrameCodec(1024);
    const bad = [
      { type: 'exec', cmd: 'id' },
      { type: 'describe', admin: true },
      { type: 'prepare', skill: 'echo', script: 'run.js', args: ['a\0b'] },
      'describe',
      null,
      { type: 'cancel' },
      { type: 'hello', view: helloFor(env).view },
    ];
    const { frames } = await raw(runner.socketPath, Buffer.concat([helloFor(env), ...bad].map((b) => codec.encode(b))), bad.length + 1);
    expect(frames).toHaveLength(bad.length + 1);
    expect(frames[0]).toMatchObject({ ok: true });
    for (const f of frames.slice(1)) expect(f).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST' } });
    await stillServes();
  });
});

describe('one run at a time, cancellation', () => {
  it('a second run while one is running → BUSY at once (no queue wait configured); a cancel naming its cancel id, on another connection, kills the first at once', async () => {
    const a = await runner.client.prepare({ skill: 'slow', script: 'sleep.js', args: [] });
    const b = await runner.client.prepare({ skill: 'echo', script: 'run.js', args: ['second'] });
    const started = Date.now();
    const cancelId = randomBytes(16).toString('hex');
    const seen = acceptedRuns();
    const first = runner.client.run(
      { skill: 'slow', script: 'sleep.js', args: [], confirmToken: a.ok ? a.result.confirmToken : '' },
      { cancelId },
    );
    // The first run holds the slot once it is accepted (awaited, not guessed with a sleep).
    await awaitAuditLine(runner.stateDir, (l) => l['event'] === 'run.accept' && !seen.has(l['run_id']));
    const second = await runner.client.run({
      skill: 'echo',
      script: 'run.js',
      args: ['second'],
      confirmToken: b.ok ? b.result.confirmToken : '',
    });
    expect(second).toMatchObject({ ok: false, error: { code: 'BUSY' } });
    expect(await runner.client.cancel(cancelId)).toMatchObject({ ok: true, result: { cancelled: true } });
    const result = await first;
    expect(result).toMatchObject({ ok: true, result: { cancelled: true, signal: 'SIGKILL' } });
    // Well before the script's own 15 s end (the bound is not the behaviour; the SIGKILL is).
    expect(Date.now() - started).toBeLessThan(12_000);
    // The refused second token was not spent: it runs now (once the first's folder is gone and its slot free).
    await slotsFree(runner.client);
    const retry = await runner.client.run({
      skill: 'echo',
      script: 'run.js',
      args: ['second'],
      confirmToken: b.ok ? b.result.confirmToken : '',
    });
    expect(retry).toMatchObject({ ok: true, result: { stdout: Buffer.from('["second"]') } });
  });

  it('aborting the client call kills the run (its connection closes)', async () => {
    const a = await runner.client.prepare({ skill: 'slow', script: 'sleep.js', args: [] });
    const abort = new AbortController();
    const started = Date.now();
    const seen = acceptedRuns();
    const pending = runner.client.run(
      { skill: 'slow', script: 'sleep.js', args: [], confirmToken: a.ok ? a.result.confirmToken : '' },
      { signal: abort.signal },
    );
    // Abort once the run is really under way, so it is the run that gets killed.
    await awaitAuditLine(runner.stateDir, (l) => l['event'] === 'run.accept' && !seen.has(l['run_id']));
    abort.abort();
    await expect(pending).rejects.toMatchObject({ code: 'CANCELLED' });
    // The runner is free again shortly after.
    for (;;) {
      const b = await runner.client.prepare({ skill: 'echo', script: 'run.js', args: [] });
      const r = await runner.client.run({ skill: 'echo', script: 'run.js', args: [], confirmToken: b.ok ? b.result.confirmToken : '' });
      if (r.ok) break;
      expect(r.error.code).toBe('BUSY');
      await new Promise((res) => setTimeout(res, 100));
    }
    expect(Date.now() - started).toBeLessThan(12_000);
  });

  it('an unreachable runner is RUNNER_UNAVAILABLE, not a hang', async () => {
    const { RunnerClient } = await import('../../server/runner-client.js');
    await expect(new RunnerClient('/nonexistent/runner.sock', { view: () => helloFor(env).view }).describe()).rejects.toMatchObject({
      code: 'RUNNER_UNAVAILABLE',
    });
  });
});
