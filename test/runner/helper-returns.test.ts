/**
 * A run's helper redacting its run's returns (runner/helper/main.ts, runner/secrets/returns.ts): the
 * built helper bundle (dist/skill-mcp-helper.cjs) run as a plain process, spoken to in its own
 * frames as the runner speaks (runner/egress/helper-link.ts) — without its sandbox, which the runner
 * adds (test/runner/helper.test.ts drives it through the real runner, and the e2e redaction tests
 * through a client). Given its run's values at `start`, told at `close` to wait for the returns, it
 * answers `redact` with every name, byte, note and stream redacted, and exits. Attacks: `redact` out
 * of turn (before `close`, or after a `close` that did not ask for it) ends the helper and answers
 * nothing; a second `redact` is never answered.
 *
 * Tier `unit`: no product server, the outcome is the same at every level; it runs on each Node major.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HELPER_MAX_FRAME_BYTES } from '../../runner/egress/helper-protocol.js';
import type { HelperToRunner } from '../../runner/egress/helper-protocol.js';
import { FrameCodec } from '../../shared/frame.js';

const BUNDLE = resolve(import.meta.dirname, '../../dist/skill-mcp-helper.cjs');
const KEY = 'helper-returns-key/4e9+c';
const temp = mkdtempSync(join(tmpdir(), 'skill-mcp-helper-returns-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

interface Talk {
  child: ChildProcessWithoutNullStreams;
  send(message: unknown): void;
  /** The next message, or `exit N` when the helper exited first. */
  next(): Promise<HelperToRunner | string>;
}

let n = 0;
function helper(): Talk {
  const dir = join(temp, `h${n++}`);
  mkdirSync(dir, { mode: 0o700 });
  // Its warm-up makes a socket in its /tmp: each its own.
  const child = spawn(process.execPath, [BUNDLE, '--dir', dir], { stdio: 'pipe', env: { PATH: '/usr/bin:/bin', TMPDIR: dir } });
  const reader = new FrameCodec(HELPER_MAX_FRAME_BYTES);
  const writer = new FrameCodec(HELPER_MAX_FRAME_BYTES);
  const queue: (HelperToRunner | string)[] = [];
  const waiting: ((m: HelperToRunner | string) => void)[] = [];
  const push = (m: HelperToRunner | string): void => {
    const w = waiting.shift();
    if (w) w(m);
    else queue.push(m);
  };
  child.stdout.on('data', (chunk: Buffer) => {
    for (const event of reader.push(chunk)) push(event.ok ? (event.value as HelperToRunner) : `bad frame ${event.error.code}`);
  });
  child.on('exit', (code) => push(`exit ${code}`));
  return {
    child,
    send: (message) => child.stdin.write(writer.encode(message)),
    next: () => {
      const m = queue.shift();
      return m !== undefined ? Promise.resolve(m) : new Promise((r) => waiting.push(r));
    },
  };
}

const START = {
  type: 'start',
  runId: 'r1',
  entries: ['127.0.0.1:1'],
  secrets: [],
  redact: [{ name: 'KEY', value: KEY }],
  timeoutMs: 30_000,
};
const hex = Buffer.from(KEY).toString('hex');
const said = Buffer.from(`out ${KEY}\n`);
const REDACT = {
  type: 'redact',
  walked: {
    files: [
      { path: `${hex}.txt`, size: 4, bytes: Buffer.from('name') },
      { path: 'out/leak.txt', size: 4 + KEY.length, bytes: Buffer.from(`k = ${KEY}`) },
      { path: 'big.bin', size: 10_000_000, omitted: 'past the output budget' },
    ],
    bytes: 8 + KEY.length,
    redacted: {},
    data: { bytes: 0, entries: 1, odd: [`fifo-${KEY}`] },
  },
  budgetBytes: 1024,
  streams: { cap: 1024, stdout: said, stderr: said, stdoutCut: false, stderrCut: false },
};

/** A helper given its run, then closed with `returns`: it waits for `redact`. */
async function waitingForReturns(): Promise<Talk> {
  const h = helper();
  h.send(START);
  expect(await h.next()).toEqual({ type: 'ready' });
  h.send({ type: 'close', returns: true });
  expect(await h.next()).toEqual({ type: 'closed' });
  return h;
}

describe('a helper redacts its run’s returns', () => {
  it('ready, closed, then the returns redacted — names, bytes, odd names, streams — with the markers by name; then it exits', async () => {
    const h = await waitingForReturns();
    h.send(REDACT);
    const answer = await h.next();
    if (typeof answer === 'string' || answer.type !== 'returns') throw new Error(`no returns: ${JSON.stringify(answer)}`);
    const r = answer.returns;
    expect(r.files.map((f) => [f.path, f.bytes && Buffer.from(f.bytes).toString(), f.omitted])).toEqual([
      ['[secret:KEY].txt', 'name', undefined],
      ['out/leak.txt', 'k = [secret:KEY]', undefined],
      ['big.bin', undefined, 'past the output budget'],
    ]);
    expect(r.bytes).toBe(4 + 'k = [secret:KEY]'.length);
    expect(r.data?.odd).toEqual(['fifo-[secret:KEY]']);
    expect(Buffer.from(r.streams!.stdout).toString()).toBe('out [secret:KEY]\n');
    expect(Buffer.from(r.streams!.stderr).toString()).toBe('out [secret:KEY]\n');
    expect(r.redacted).toEqual({ KEY: 5 });
    expect(JSON.stringify(r)).not.toContain(KEY);
    expect(await h.next()).toBe('exit 0');
  });

  it('attack: redact before close ends the helper, unanswered', async () => {
    const h = helper();
    h.send(START);
    expect(await h.next()).toEqual({ type: 'ready' });
    h.send(REDACT);
    expect(await h.next()).toEqual({ type: 'failed', why: 'the runner sent redact out of turn' });
    expect(await h.next()).toBe('exit 1');
  });

  it('attack: redact after a close that did not ask for the returns is never answered (the helper has gone)', async () => {
    const h = helper();
    h.send(START);
    expect(await h.next()).toEqual({ type: 'ready' });
    h.send({ type: 'close' });
    expect(await h.next()).toEqual({ type: 'closed' });
    h.send(REDACT);
    expect(await h.next()).toBe('exit 0');
  });

  it('attack: a second redact is never answered', async () => {
    const h = await waitingForReturns();
    h.send(REDACT);
    h.send(REDACT);
    const said: (HelperToRunner | string)[] = [];
    for (let m = await h.next(); !(typeof m === 'string' && m.startsWith('exit')); m = await h.next()) said.push(m);
    // Read in one chunk, the second is refused after the first is answered; read after it, never.
    expect(said.filter((m) => typeof m !== 'string' && m.type === 'returns')).toHaveLength(1);
    expect(said.filter((m) => typeof m === 'string' || !['returns', 'failed'].includes(m.type))).toEqual([]);
  });
});
