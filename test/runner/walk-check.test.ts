/**
 * A root runner's outputs walk runs as the run's uid (runner/workspace/walk-link.ts); what the
 * walker sends back is checked before the runner passes any of it on: attacks by a walker that lies.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { becomeRunUid } from '../../runner/walker/main.js';
import type { ProcessOutcome } from '../../runner/sandbox/process.js';
import { checkWalk, nothing, returnedStreams } from '../../runner/workspace/walk-link.js';
import type { StreamsIn } from '../../runner/workspace/walk-protocol.js';

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const bytes = (text: string): Uint8Array => Buffer.from(text);

describe('checkWalk: what a walker says is taken only once the runner has checked it', () => {
  it('a true answer passes, with the digests the runner takes itself', () => {
    const a = bytes('hello');
    const walked = checkWalk(
      {
        files: [
          { path: 'a.txt', size: 5, sha256: sha(a), bytes: a },
          { path: 'l', size: 3, omitted: 'a symbolic link' },
        ],
        bytes: 5,
        redacted: {},
      },
      10,
    );
    expect(walked).toMatchObject({
      collected: {
        files: [
          { path: 'a.txt', size: 5, sha256: sha(a) },
          { path: 'l', omitted: 'a symbolic link' },
        ],
        bytes: 5,
      },
    });
  });

  it('attack: a wrong digest is replaced by the digest of the bytes carried', () => {
    const a = bytes('real');
    const walked = checkWalk({ files: [{ path: 'a', size: 4, sha256: 'f'.repeat(64), bytes: a }], bytes: 4, redacted: {} }, 10);
    expect(typeof walked === 'string' ? walked : walked.collected.files[0]!.sha256).toBe(sha(a));
  });

  it('attack: more bytes than the budget it was given is refused whole', () => {
    const a = bytes('x'.repeat(11));
    expect(checkWalk({ files: [{ path: 'a', size: 11, bytes: a }], bytes: 11, redacted: {} }, 10)).toMatch(/over the 10-byte budget/);
  });

  it('attack: a size that is not the length of the bytes is refused', () => {
    expect(checkWalk({ files: [{ path: 'a', size: 1, bytes: bytes('abc') }], bytes: 3, redacted: {} }, 10)).toMatch(/not the size it said/);
  });

  it('attack: a byte count that does not add up is refused', () => {
    expect(checkWalk({ files: [{ path: 'a', size: 3, bytes: bytes('abc') }], bytes: 1, redacted: {} }, 10)).toMatch(/does not add up/);
  });
});

describe('the walker becomes the run uid before it walks', () => {
  it('attack: orders naming uid 0 are refused before any drop (a root walk would read what the script planted)', () => {
    expect(becomeRunUid(0)).toBe('the orders name uid 0');
  });
});

describe('the streams of a run with values to redact come back only through the walk', () => {
  const asked: StreamsIn = { cap: 8, stdout: bytes('raw'), stderr: bytes(''), stdoutCut: false, stderrCut: false };
  const streams = (stdout: string) => ({
    stdout: bytes(stdout),
    stderr: bytes(''),
    stdoutOver: false,
    stderrOver: false,
    stdoutHeldBack: 0,
    stderrHeldBack: 0,
  });

  it('attack: a walker that returns streams it was not asked for, or longer than the cap, is refused', () => {
    const answer = { files: [], bytes: 0, redacted: {}, streams: streams('[secret:K]') };
    expect(checkWalk(answer, 10)).toMatch(/not asked for/);
    expect(checkWalk(answer, 10, asked)).toMatch(/over their cap/);
    expect(checkWalk({ ...answer, streams: streams('ok') }, 10, asked)).toMatchObject({ streams: { stdout: bytes('ok') } });
  });

  const outcome = {
    stdout: Buffer.from('the value is sk-live-12345678'),
    stderr: Buffer.from('and again sk-live-12345678'),
    stdoutBytes: 29,
    stderrBytes: 26,
    stdoutSha256: sha(Buffer.from('the value is sk-live-12345678')),
    stderrSha256: sha(Buffer.from('and again sk-live-12345678')),
    stdoutTruncated: false,
    stderrTruncated: false,
  } as ProcessOutcome;

  it('attack: when the walk could not redact them (no walker, a crash, a refused answer), neither stream is returned; stderr says they were withheld', () => {
    const got = returnedStreams(outcome, true, nothing('the walker could not be started (EAGAIN)'));
    expect(got.stdout.length).toBe(0);
    expect(got.stderr.toString()).toMatch(/stdout and stderr are withheld: they could not be searched for its secret values/);
    expect(got.stderr.toString()).not.toContain('sk-live');
    expect(got).toMatchObject({ stdoutTruncated: true, stderrTruncated: true, stdoutSha256: sha(Buffer.alloc(0)) });
  });

  it('the redacted streams are returned with their own digests, cut where the markers ran past the cap; a run without values keeps what it wrote', () => {
    const walked = {
      ...nothing('x'),
      streams: { ...streams('the valu'), stderr: bytes('and again [secret:K]'), stdoutOver: true },
    };
    const got = returnedStreams(outcome, true, walked);
    expect(got.stdout.toString()).toBe('the valu');
    expect(got).toMatchObject({ stdoutTruncated: true, stderrTruncated: false, stderrSha256: sha(bytes('and again [secret:K]')) });
    expect(returnedStreams(outcome, false, walked)).toBe(outcome);
  });
});
