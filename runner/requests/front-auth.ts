/**
 * @module Which front a runner serves. Every front started as root drops to the same uid (61183
 * by default), so a socket's modes and SO_PEERCRED cannot tell one instance's front from another's.
 * A standalone launcher therefore makes a per-instance secret, hands it to its runner over the
 * guard's stdin pipe (never argv or the environment, which other processes can read), and keeps it
 * in the front's memory; every connection's `hello` must carry it. An operator may give a hosted
 * pair one in a file (`--front-secret-file`). Without a secret the socket modes and the peer uid
 * are the whole check, as before.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Readable } from 'node:stream';
import { SkillMcpError } from '../../shared/errors.js';
import { parseFrontSecret } from '../../shared/front-secret.js';
import { MAX_FRONT_SECRET_CHARS } from '../../shared/protocol.js';

const SECRET_LINE_TIMEOUT_MS = 10_000;

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** Whether a hello's secret is the runner's: both absent, or equal. */
export function frontSecretMatches(expected: string | undefined, presented: string | undefined): boolean {
  if (expected === undefined) return presented === undefined;
  // Security: hashing both sides gives equal-length buffers, so timingSafeEqual leaks neither the
  // secret's bytes nor its length to a front probing the socket.
  return timingSafeEqual(digest(presented ?? ''), digest(expected)) && presented !== undefined;
}

/** The first line on `input` (the guard's pipe): the standalone secret. Leaves the stream paused. */
export function readFrontSecretLine(input: Readable): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    const done = (error: Error | undefined, secret?: string): void => {
      clearTimeout(timer);
      input.off('data', onData);
      input.off('end', onEnd);
      input.pause();
      if (error) reject(error);
      else resolve(secret!);
    };
    const onData = (chunk: Buffer): void => {
      buffered += chunk.toString('utf8');
      const end = buffered.indexOf('\n');
      if (end >= 0) {
        try {
          done(undefined, parseFrontSecret(buffered.slice(0, end), 'the guard'));
        } catch (error) {
          done(error as Error);
        }
      } else if (buffered.length > MAX_FRONT_SECRET_CHARS)
        done(new SkillMcpError('BAD_REQUEST', 'the front secret line from the guard is too long'));
    };
    const onEnd = (): void => done(new SkillMcpError('BAD_REQUEST', 'stdin closed before the front secret arrived'));
    const timer = setTimeout(
      () => done(new SkillMcpError('BAD_REQUEST', `no front secret on stdin within ${SECRET_LINE_TIMEOUT_MS / 1000} s`)),
      SECRET_LINE_TIMEOUT_MS,
    );
    input.on('data', onData);
    input.on('end', onEnd);
    input.resume();
  });
}
