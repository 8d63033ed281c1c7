/**
 * A runner with a front secret serves only the front that holds it: every other process that can
 * reach the socket (another instance's front has the same uid) is refused at its hello, before it
 * can read the runner's skills or ask for a run. Also: the cancel of one front cannot stop another
 * front's run on a shared runner, because a cancel must name the run's front-chosen cancel id.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunnerClient } from '../../server/runner-client.js';
import { configView } from '../../shared/config-view.js';
import { FrameCodec } from '../../shared/frame.js';
import { auditLines, BUNDLED, helloFor, prepareAndRun, startRunner, tempDir, text, uidRange, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

const skills = writeSkills({
  echo: {
    run: [{ script: 'run.js', interpreter: 'node', timeout: 5 }],
    files: { 'run.js': 'process.stdout.write(JSON.stringify(process.argv.slice(2)))' },
  },
  slow: {
    run: [{ script: 'sleep.js', interpreter: 'node', timeout: 20 }],
    files: { 'sleep.js': 'process.stdout.write("started"); setTimeout(() => process.stdout.write(" done"), 1500)' },
  },
});
const env = { SKILLS_DIR: skills };
const SECRET = randomBytes(32).toString('hex');
let secretFile: string;
let runner: RunnerHandle;

/** A front like the runner's own, holding `frontSecret` (or none). */
function front(frontSecret: string | undefined): RunnerClient {
  return new RunnerClient(runner.socketPath, {
    view: () => configView(env, BUNDLED),
    frontSecret,
    requestTimeoutMs: 10_000,
    runSlackMs: 10_000,
  });
}

/** Sends frames on one connection; resolves with every answer once the runner closes it or `wantFrames` arrived. */
function rawExchange(requests: unknown[], wantFrames: number): Promise<{ frames: unknown[]; closed: boolean }> {
  return new Promise((resolve) => {
    const codec = new FrameCodec(8 * 1024 * 1024);
    const out = new FrameCodec(1024 * 1024);
    const frames: unknown[] = [];
    const socket = createConnection(runner.socketPath, () => socket.write(Buffer.concat(requests.map((r) => out.encode(r)))));
    const done = (closed: boolean): void => {
      socket.destroy();
      resolve({ frames, closed });
    };
    const timer = setTimeout(() => done(false), 3_000);
    socket.on('data', (c: Buffer) => {
      for (const e of codec.push(c)) if (e.ok) frames.push(e.value);
      if (frames.length >= wantFrames && wantFrames > 0)
        setTimeout(() => {
          clearTimeout(timer);
          done(socket.readableEnded);
        }, 100);
    });
    socket.on('end', () => {
      clearTimeout(timer);
      done(true);
    });
    socket.on('error', () => {
      clearTimeout(timer);
      done(true);
    });
  });
}

beforeAll(async () => {
  const dir = tempDir('secret');
  secretFile = join(dir, 'front.secret');
  writeFileSync(secretFile, `${SECRET}\n`, { mode: 0o600 });
  runner = await startRunner({ env, args: ['--uid-range', uidRange(3), '--front-secret-file', secretFile], frontSecret: SECRET });
});
afterAll(async () => {
  await runner?.stop();
});

describe("another instance's front on the socket (same uid, not this runner's secret)", () => {
  it('without a secret: describe, prepare and run are all refused PEER_REFUSED', async () => {
    const stranger = front(undefined);
    expect(await stranger.describe()).toMatchObject({ ok: false, error: { code: 'PEER_REFUSED' } });
    expect(await stranger.prepare({ skill: 'echo', script: 'run.js', args: [] })).toMatchObject({
      ok: false,
      error: { code: 'PEER_REFUSED' },
    });
    const token = await runner.client.prepare({ skill: 'echo', script: 'run.js', args: ['stolen'] });
    expect(token.ok).toBe(true);
    // Even holding a valid token (say, read off a shared chat), it cannot spend it here.
    const ran = await stranger.run({
      skill: 'echo',
      script: 'run.js',
      args: ['stolen'],
      confirmToken: token.ok ? token.result.confirmToken : '',
    });
    expect(ran).toMatchObject({ ok: false, error: { code: 'PEER_REFUSED' } });
    expect(auditLines(runner.stateDir).some((l) => l['event'] === 'run.accept' && JSON.stringify(l['argv']).includes('stolen'))).toBe(
      false,
    );
  });

  it('with a guessed secret of the same length: refused, and the audit log records peer.refuse (front-secret)', async () => {
    const before = auditLines(runner.stateDir).filter((l) => l['event'] === 'peer.refuse').length;
    expect(await front(randomBytes(32).toString('hex')).describe()).toMatchObject({
      ok: false,
      error: { code: 'PEER_REFUSED', message: expect.stringMatching(/front secret does not match/) },
    });
    const refusals = auditLines(runner.stateDir).filter((l) => l['event'] === 'peer.refuse');
    expect(refusals.length).toBe(before + 1);
    expect(refusals.at(-1)).toMatchObject({ reason: 'front-secret' });
    expect(JSON.stringify(auditLines(runner.stateDir))).not.toContain(SECRET);
  });

  it('a connection that skips hello is refused PEER_REFUSED and closed; frames sent after it are never served', async () => {
    const { frames, closed } = await rawExchange([{ type: 'describe' }, helloFor(env, SECRET), { type: 'describe' }], 0);
    expect(frames).toHaveLength(1);
    expect(frames[0]).toMatchObject({ ok: false, error: { code: 'PEER_REFUSED', message: expect.stringMatching(/hello/) } });
    expect(closed).toBe(true);
  });

  it('a refused hello closes the connection: a request pipelined behind it is not served', async () => {
    const { frames, closed } = await rawExchange([helloFor(env, 'x'.repeat(64)), { type: 'describe' }], 0);
    expect(frames).toEqual([expect.objectContaining({ ok: false, error: expect.objectContaining({ code: 'PEER_REFUSED' }) })]);
    expect(closed).toBe(true);
  });
});

describe('the front that holds the secret', () => {
  it('describes, prepares and runs as before', async () => {
    const described = await runner.client.describe();
    expect(described.ok).toBe(true);
    const { result } = await prepareAndRun(runner.client, 'echo', 'run.js', ['mine']);
    expect(text(result.stdout)).toBe('["mine"]');
  });

  it('a world-readable secret file stops the runner at start (a secret every user can read authenticates nobody)', async () => {
    const open = join(tempDir('secret-open'), 'front.secret');
    writeFileSync(open, `${SECRET}\n`);
    chmodSync(open, 0o644);
    await expect(startRunner({ env, args: ['--uid-range', uidRange(3), '--front-secret-file', open] })).rejects.toThrow(
      /readable by every user/,
    );
  });
});

describe('cancel names its run: two fronts on one runner', () => {
  it("front B's cancel (no id, or an id it guessed) does not kill A's run; A's cancel id does", async () => {
    const a = runner.client;
    const b = front(SECRET); // another front of the same (hosted) runner: same secret, its own connections
    const prepared = await a.prepare({ skill: 'slow', script: 'sleep.js', args: [] });
    if (!prepared.ok) throw new Error(prepared.error.message);
    const cancelId = randomBytes(16).toString('hex');
    const accepted = (): number => auditLines(runner.stateDir).filter((l) => l['event'] === 'run.accept' && l['skill'] === 'slow').length;
    const before = accepted();
    const run = a.run({ skill: 'slow', script: 'sleep.js', args: [], confirmToken: prepared.result.confirmToken }, { cancelId });
    // Wait until the run holds the slot (its run.accept is logged), then let B try to stop it.
    while (accepted() === before) await new Promise((r) => setTimeout(r, 20));
    const { frames } = await rawExchange([helloFor(env, SECRET), { type: 'cancel' }], 2);
    expect(frames[1]).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST', message: expect.stringMatching(/cancelId/) } });
    expect(await b.cancel(randomBytes(16).toString('hex'))).toMatchObject({ ok: true, result: { cancelled: false } });
    const finished = await run;
    expect(finished).toMatchObject({ ok: true, result: { cancelled: false, exitCode: 0 } });
    expect(text((finished as { result: { stdout: Uint8Array } }).result.stdout)).toBe('started done');

    // A's own cancel, on another connection, still stops A's next run at once.
    const again = await a.prepare({ skill: 'slow', script: 'sleep.js', args: [] });
    if (!again.ok) throw new Error(again.error.message);
    const second = a.run({ skill: 'slow', script: 'sleep.js', args: [], confirmToken: again.result.confirmToken }, { cancelId });
    while (accepted() === before + 1) await new Promise((r) => setTimeout(r, 20));
    expect(await a.cancel(cancelId)).toMatchObject({ ok: true, result: { cancelled: true } });
    expect(await second).toMatchObject({ ok: true, result: { cancelled: true } });
  });
});
