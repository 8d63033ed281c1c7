/**
 * The pidfd kill the uid reap falls back to (runner/sandbox/pidfd.ts): it signals the process it
 * opened, and only when that process belongs to the uid being reaped — a pid whose number now
 * names a process of another uid is left alone.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { loadPidfdKiller } from '../../runner/sandbox/pidfd.js';
import { processesOfUid, reapUid } from '../../runner/uids/pool.js';

const killer = loadPidfdKiller();
const me = process.getuid!();

describe.skipIf(killer === undefined)('pidfd kill', () => {
  it('kills a process of the uid through its pidfd, and leaves one of another uid alone', async () => {
    const child = spawn('sleep', ['100'], { stdio: 'ignore' });
    const exited = new Promise<string | null>((resolve) => child.on('exit', (_c, signal) => resolve(signal)));
    expect(killer!.kill(child.pid!, me + 1)).toBe(false);
    expect(child.exitCode).toBe(null);
    expect(killer!.kill(child.pid!, me)).toBe(true);
    expect(await exited).toBe('SIGKILL');
    // Reaped and gone: the number names no process, nothing is signalled.
    expect(killer!.kill(child.pid!, me)).toBe(false);
  });
});

describe.skipIf(process.getuid?.() !== 0)('reapUid (root only: kills as another uid)', () => {
  it('kills a setsid leftover of the run uid and returns; a uid with nothing left returns at once', async () => {
    const uid = 61990;
    const child = spawn('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--', 'setsid', 'sleep', '100'], {
      stdio: 'ignore',
    });
    // Until setpriv has switched uid, the uid has no process to reap.
    while (processesOfUid(uid).length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const exited = new Promise((resolve) => child.on('exit', resolve));
    const reaped = await reapUid(uid, '/usr/bin/setpriv', '/usr/bin/kill');
    await exited;
    expect(reaped.remaining).toBe(0);
    expect(await reapUid(uid, '/usr/bin/setpriv', '/usr/bin/kill')).toEqual({ killed: 0, remaining: 0 });
  });
});
