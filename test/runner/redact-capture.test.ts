/**
 * Redaction of what a run returns (runner/walker/walk.ts, runner/workspace/outputs.ts): real child
 * processes writing to real pipes, captured as the runner captures them (runner/sandbox/process.ts,
 * as written, up to the cap), then redacted as the walk redacts them; and a real workspace on disk. Attacks: a value cut by
 * the stream cap, markers longer than the values they replace growing an answer past its caps, a
 * file whose digest would let its value be guessed, and a file named after the value; and the same
 * returns walked without a value and redacted by a run's helper (runner/secrets/returns.ts). Through
 * the whole stack: test/e2e/skill-run-redaction.test.ts (at the bubblewrap levels its skill has
 * egress, so its helper redacts; at the others its walk does).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runProcess } from '../../runner/sandbox/process.js';
import type { SpawnSpec } from '../../runner/sandbox/spawn.js';
import { RunRedaction } from '../../runner/secrets/redact.js';
import { redactReturns, redactStreams } from '../../runner/secrets/returns.js';
import { checkWalk } from '../../runner/workspace/walk-link.js';
import { collectOutputs, MAX_WALK_ENTRIES } from '../../runner/workspace/outputs.js';
import { makeWorkspace } from '../../runner/workspace/workspace.js';

const sha = (bytes: Uint8Array | string): string => createHash('sha256').update(bytes).digest('hex');
const KEY = 'tok-9Qm2Zr7Lw4Xc';
const temp = mkdtempSync(join(tmpdir(), 'skill-mcp-redact-capture-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

/**
 * Runs `node -e code` with the value in its environment, captured as written, then each stream
 * through the run's redaction as the walk does it: what the run's result carries.
 */
async function capture(code: string, redaction: RunRedaction, cap: number) {
  const spec: SpawnSpec = {
    command: process.execPath,
    args: ['-e', code],
    env: { KEY, PATH: process.env['PATH'] ?? '/usr/bin' },
    cwd: temp,
    envNames: [],
    fds: [],
  };
  const proc = runProcess(spec, {
    timeoutMs: 60_000,
    killGraceMs: 1000,
    drainMs: 2000,
    maxStreamBytes: cap,
    afterExit: async () => undefined,
  });
  const o = await proc.outcome;
  const r = redactStreams(redaction, {
    cap,
    stdout: o.stdout,
    stderr: o.stderr,
    stdoutCut: o.stdoutTruncated,
    stderrCut: o.stderrTruncated,
  });
  const stdout = Buffer.from(r.stdout);
  const stdoutTruncated = o.stdoutTruncated || r.stdoutOver;
  const stderrTruncated = o.stderrTruncated || r.stderrOver;
  return {
    stdout,
    stderr: Buffer.from(r.stderr),
    stdoutBytes: o.stdoutBytes,
    stdoutSha256: sha(stdout),
    truncated: stdoutTruncated || stderrTruncated,
    stdoutTruncated,
    stderrTruncated,
    heldBack: { stdout: r.stdoutHeldBack, stderr: r.stderrHeldBack },
  };
}

describe('captured streams', () => {
  it('attack: a value cut by the cap — no prefix is returned, what was held back is counted, the digest is of the bytes returned', async () => {
    const cap = 4096;
    const redaction = new RunRedaction([{ name: 'KEY', value: KEY }]);
    const o = await capture(
      `process.stdout.write('x'.repeat(${cap} - 6) + process.env.KEY); process.stderr.write('fine ' + process.env.KEY)`,
      redaction,
      cap,
    );
    expect(o.stdout.toString()).toBe('x'.repeat(cap - o.heldBack!.stdout));
    expect(o.heldBack!.stdout).toBeGreaterThanOrEqual(6);
    expect(o).toMatchObject({
      truncated: true,
      stdoutTruncated: true,
      stderrTruncated: false,
      stdoutBytes: cap - 6 + KEY.length,
      stdoutSha256: sha(o.stdout),
    });
    expect(o.stderr.toString()).toBe('fine [secret:KEY]');
    expect(redaction.summary()).toEqual({ count: 1, names: [{ name: 'KEY', count: 1 }] });
  });

  it('attack: markers longer than the values they replace cannot grow a stream past its cap', async () => {
    const cap = 64 * 1024;
    const name = 'A_VERY_LONG_NAME_FOR_A_SHORT_SECRET_VALUE';
    const redaction = new RunRedaction([{ name, value: 'abcdefgh' }]);
    // Well under the cap as written (9 bytes per value), about 5x over it once each is a marker.
    const o = await capture(`process.stdout.write('abcdefgh-'.repeat(${Math.floor(cap / 9) - 1}))`, redaction, cap);
    expect(o.stdoutBytes).toBeLessThan(cap);
    expect(o.stdout.length).toBe(cap);
    expect(o).toMatchObject({ truncated: true, stdoutTruncated: true });
    expect(o.stdout.toString().startsWith(`[secret:${name}]-[secret:${name}]-`)).toBe(true);
    expect(o.stdout.includes('abcdefgh')).toBe(false);
  });

  it('without values the streams are returned as captured: the first cap bytes, cut and counted to the end', async () => {
    const o = await capture(`process.stdout.write(Buffer.alloc(10000, 0x41))`, new RunRedaction([]), 4096);
    expect(o).toMatchObject({ truncated: true, stdoutTruncated: true, stdoutBytes: 10000, stdoutSha256: sha(Buffer.alloc(4096, 0x41)) });
    expect(o.stdout.equals(Buffer.alloc(4096, 0x41))).toBe(true);
    expect(o.heldBack).toEqual({ stdout: 0, stderr: 0 });
  });
});

describe('returned files', () => {
  let n = 0;
  function workspace(files: Record<string, string | Buffer>, inputs: { path: string; bytes: Uint8Array }[] = []) {
    const run = join(temp, `run-${n++}`);
    mkdirSync(run, { mode: 0o700 });
    const ws = makeWorkspace(run, undefined, inputs);
    for (const [path, bytes] of Object.entries(files)) {
      mkdirSync(join(ws.dir, path, '..'), { recursive: true });
      writeFileSync(join(ws.dir, path), bytes);
    }
    return ws;
  }

  it("a file's bytes are redacted in chunks, with the size and digest of what is returned (never of the raw bytes)", () => {
    // Values straddling every 64 KiB read: 3 MiB of filler with the value every 1000 bytes.
    const big = Buffer.concat(Array.from({ length: 3000 }, () => Buffer.from(`${'.'.repeat(1000 - KEY.length)}${KEY}`)));
    const ws = workspace({ 'out/big.txt': big, 'only-the-key.txt': KEY });
    const redaction = new RunRedaction([{ name: 'KEY', value: KEY }]);
    const got = collectOutputs(ws, 16 * 1024 * 1024, MAX_WALK_ENTRIES, redaction);
    const only = got.files.find((f) => f.path === 'only-the-key.txt')!;
    expect(Buffer.from(only.bytes!).toString()).toBe('[secret:KEY]');
    expect(only.sha256).toBe(sha('[secret:KEY]'));
    expect(only.sha256).not.toBe(sha(KEY));
    const bigOut = got.files.find((f) => f.path === 'out/big.txt')!;
    const expected = Buffer.from(big.toString().split(KEY).join('[secret:KEY]'));
    expect(Buffer.from(bigOut.bytes!).equals(expected)).toBe(true);
    expect(bigOut).toMatchObject({ size: expected.length, sha256: sha(expected) });
    expect(redaction.summary().count).toBe(3001);
  });

  it('attack: a file named after the value — its path is redacted; an input returned unchanged is still recognised', () => {
    // The input holds the value: unchanged, it is not returned (compared by its raw digest), redacted or not.
    const ws = workspace({ [`${Buffer.from(KEY).toString('hex')}/note.txt`]: 'hi' }, [
      { path: 'input.txt', bytes: Buffer.from(`in ${KEY}`) },
    ]);
    const redaction = new RunRedaction([{ name: 'KEY', value: KEY }]);
    expect(collectOutputs(ws, 1024, MAX_WALK_ENTRIES, redaction).files.map((f) => f.path)).toEqual(['[secret:KEY]/note.txt']);
    writeFileSync(join(ws.dir, 'input.txt'), `in ${KEY}!`);
    expect(
      collectOutputs(ws, 1024, MAX_WALK_ENTRIES, redaction).files.map((f) => [f.path, f.bytes && Buffer.from(f.bytes).toString()]),
    ).toEqual([
      ['input.txt', 'in [secret:KEY]!'],
      ['[secret:KEY]/note.txt', 'hi'],
    ]);
  });

  it('attack: markers longer than the values cannot grow the files past the output budget — the file is listed as omitted', () => {
    const name = 'A_VERY_LONG_NAME_FOR_A_SHORT_SECRET_VALUE';
    const ws = workspace({ 'grow.txt': 'abcdefgh-'.repeat(100) });
    const redaction = new RunRedaction([{ name, value: 'abcdefgh' }]);
    const got = collectOutputs(ws, 2000, MAX_WALK_ENTRIES, redaction);
    expect(got.files).toHaveLength(1);
    expect(got.files[0]).toMatchObject({ path: 'grow.txt', omitted: expect.stringContaining('past the output budget') });
    expect(got.files[0]!.bytes).toBeUndefined();
    expect(got.files[0]!.size).toBeGreaterThan(2000);
    expect(got.bytes).toBe(0);
  });
});

/**
 * A run with a helper: its walk is given no value, and its helper redacts what the walk found
 * (runner/secrets/returns.ts). The same workspace on disk, walked as the walker walks it without a
 * value, then through the helper's redaction; checked as the runner checks a walk's answer.
 */
describe('returns redacted by the helper (a walk made without a value)', () => {
  let n = 0;
  function walkedRaw(files: Record<string, string | Buffer>, budget: number) {
    const run = join(temp, `helper-run-${n++}`);
    mkdirSync(run, { mode: 0o700 });
    const ws = makeWorkspace(run, undefined, []);
    for (const [path, bytes] of Object.entries(files)) {
      mkdirSync(join(ws.dir, path, '..'), { recursive: true });
      writeFileSync(join(ws.dir, path), bytes);
    }
    const got = collectOutputs(ws, budget, MAX_WALK_ENTRIES);
    return { files: got.files, bytes: got.bytes, redacted: {}, ...(got.note !== undefined ? { note: got.note } : {}) };
  }
  const keyHex = Buffer.from(KEY).toString('hex');

  it('every name, byte, note and odd name of the data folder, and both streams, come back redacted, with the digests of what is returned', () => {
    const raw = walkedRaw({ 'out/leak.txt': `k=${KEY}\n`, [`${keyHex}.txt`]: 'named after the key\n' }, 1024);
    // The walk, given no value, returned the raw bytes and names.
    expect(raw.files.map((f) => f.path)).toEqual([`${keyHex}.txt`, 'out/leak.txt']);
    const walked = { ...raw, note: `stopped at ${KEY}`, data: { bytes: 1, entries: 1, odd: [`link-${KEY}`] } };
    const said = Buffer.from(`said ${KEY}`);
    const streams = { cap: 1024, stdout: said, stderr: said, stdoutCut: false, stderrCut: false };
    const got = redactReturns(new RunRedaction([{ name: 'KEY', value: KEY }]), walked, 1024, streams);
    expect(got.files.map((f) => [f.path, f.bytes && Buffer.from(f.bytes).toString()])).toEqual([
      ['[secret:KEY].txt', 'named after the key\n'],
      ['out/leak.txt', 'k=[secret:KEY]\n'],
    ]);
    expect(got.files[1]).toMatchObject({ size: 'k=[secret:KEY]\n'.length });
    expect(got).toMatchObject({ note: 'stopped at [secret:KEY]', data: { odd: ['link-[secret:KEY]'] }, redacted: { KEY: 6 } });
    expect(Buffer.from(got.streams!.stdout).toString()).toBe('said [secret:KEY]');
    expect(Buffer.from(got.streams!.stderr).toString()).toBe('said [secret:KEY]');
    // The runner's own check of a walk's answer takes it, digests taken again.
    const checked = checkWalk(got, 1024, streams);
    if (typeof checked === 'string') throw new Error(checked);
    expect(checked.collected.bytes).toBe(got.bytes);
    // The digest of a carried file is the runner's own, of the bytes returned.
    expect(checked.collected.files[1]).toMatchObject({ path: 'out/leak.txt', sha256: sha('k=[secret:KEY]\n') });
    expect(JSON.stringify(checked)).not.toContain(KEY);
  });

  it('attack: markers longer than the values grow a carried file past the budget — it is listed, its bytes not carried, and said', () => {
    const name = 'A_VERY_LONG_NAME_FOR_A_SHORT_SECRET_VALUE';
    // Carried by the walk (900 raw bytes under a 2000-byte budget), about 5x over it once redacted.
    const raw = walkedRaw({ 'grow.txt': 'abcdefgh-'.repeat(100), 'small.txt': 'fine' }, 2000);
    expect(raw.bytes).toBe(904);
    const got = redactReturns(new RunRedaction([{ name, value: 'abcdefgh' }]), raw, 2000);
    const grow = got.files.find((f) => f.path === 'grow.txt')!;
    expect(grow).toMatchObject({ omitted: expect.stringContaining('past the output budget once its secret values were redacted') });
    expect(grow.bytes).toBeUndefined();
    expect(grow.size).toBeGreaterThan(2000);
    expect(got.bytes).toBe(4);
    expect(typeof checkWalk(got, 2000)).not.toBe('string');
  });

  it("attack: a file the walk read but could not carry — its raw digest (a value's, guessable offline) is not returned", () => {
    // The walk reads an unchanged-size input to compare it, and over the budget returns its raw digest.
    const run = join(temp, `helper-run-${n++}`);
    mkdirSync(run, { mode: 0o700 });
    const ws = makeWorkspace(run, undefined, [{ path: 'in.txt', bytes: Buffer.from('x'.repeat(KEY.length)) }]);
    writeFileSync(join(ws.dir, 'in.txt'), KEY);
    const got = collectOutputs(ws, 4, MAX_WALK_ENTRIES);
    const read = got.files.find((f) => f.path === 'in.txt')!;
    expect(read).toMatchObject({ sha256: sha(KEY), omitted: expect.stringContaining('past the output budget') });
    const back = redactReturns(new RunRedaction([{ name: 'KEY', value: KEY }]), { files: got.files, bytes: got.bytes, redacted: {} }, 4);
    expect(back.files).toEqual([{ path: 'in.txt', size: KEY.length, omitted: expect.stringContaining('past the output budget') }]);
  });
});
