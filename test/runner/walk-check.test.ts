/**
 * A root runner's outputs walk runs as the run's uid (runner/workspace/walk-link.ts); what the
 * walker sends back is checked before the runner passes any of it on: attacks by a walker that lies.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { becomeRunUid } from '../../runner/walker/main.js';
import { checkWalk } from '../../runner/workspace/walk-link.js';

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
