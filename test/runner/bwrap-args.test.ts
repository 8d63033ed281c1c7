/**
 * The bubblewrap command line, read as a whole: what the sandbox binds, in which order, and what
 * it never binds. The behaviour itself is tested through the real runner (namespace-sandbox.test.ts);
 * this pins the mounts that stop specific escapes.
 */
import { describe, expect, it } from 'vitest';
import { bwrapArgs, SKILL_MOUNT, WORKSPACE_MOUNT } from '../../runner/sandbox/bwrap.js';
import { EGRESS_SOCKET_MOUNT } from '../../runner/egress/bridge.js';

const layout = { links: [{ path: '/bin', target: 'usr/bin' }], dirs: [], extra: ['/opt/node'] };
const args = bwrapArgs(layout, { skillDir: '/home/alice/skills/pdf', tmpBytes: 1024 });
const pairs = (flag: string): string[][] => args.flatMap((a, i) => (a === flag ? [[args[i + 1]!, args[i + 2]!]] : []));

describe('the sandbox command line', () => {
  it('every namespace is new, nested user namespaces are off, and the script dies with bubblewrap', () => {
    for (const flag of [
      '--unshare-user',
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-net',
      '--unshare-uts',
      '--disable-userns',
      '--die-with-parent',
      '--new-session',
    ])
      expect(args).toContain(flag);
    expect(args).not.toContain('--share-net');
  });

  it('binds only system folders, the /etc allowlist, the interpreter prefix and the skill; the home folder holding the skill is never bound', () => {
    const sources = [...pairs('--ro-bind'), ...pairs('--ro-bind-try'), ...pairs('--bind')].map(([src]) => src!);
    for (const src of sources)
      expect(
        src === '/usr' || src === '/opt/node' || src === '/home/alice/skills/pdf' || src === '/dev/null' || src.startsWith('/etc/'),
      ).toBe(true);
    expect(pairs('--bind')).toEqual([]);
    expect(pairs('--ro-bind')).toContainEqual(['/home/alice/skills/pdf', SKILL_MOUNT]);
    expect(sources).not.toContain('/etc/shadow');
    expect(sources).not.toContain('/etc/passwd');
  });

  it('the root and /dev are remounted read-only after every mount is made (no unbounded tmpfs to fill)', () => {
    const remountRoot = args.findIndex((a, i) => a === '--remount-ro' && args[i + 1] === '/');
    expect(remountRoot).toBeGreaterThan(args.indexOf(SKILL_MOUNT));
    expect(args.indexOf('--remount-ro')).toBeGreaterThan(args.lastIndexOf('--tmpfs'));
    expect(pairs('--remount-ro').map(([p]) => p)).toEqual(['/dev', '/']);
  });

  it('the writable places are size-capped tmpfs', () => {
    const tmpfs = args.flatMap((a, i) => (a === '--tmpfs' ? [[args[i - 2], args[i - 1], args[i + 1]]] : []));
    expect(tmpfs).toEqual([
      ['--size', String(16 * 1024 * 1024), '/dev/shm'],
      ['--size', '1024', '/tmp'],
    ]);
  });

  it('a run without egress gets no way out: no socket, and the network stays unshared', () => {
    expect(args.join(' ')).not.toContain(EGRESS_SOCKET_MOUNT);
  });

  it('a run with egress gets exactly one thing more: its own proxy socket, read-only, before the root is made read-only', () => {
    const withEgress = bwrapArgs(layout, {
      skillDir: '/home/alice/skills/pdf',
      tmpBytes: 1024,
      egressSocket: '/tmp/scratch/run-1-ab/egress.sock',
    });
    expect(withEgress.filter((a) => !args.includes(a))).toEqual(['/tmp/scratch/run-1-ab/egress.sock', EGRESS_SOCKET_MOUNT]);
    const at = withEgress.indexOf(EGRESS_SOCKET_MOUNT);
    expect(withEgress.slice(at - 2, at + 1)).toEqual(['--ro-bind', '/tmp/scratch/run-1-ab/egress.sock', EGRESS_SOCKET_MOUNT]);
    expect(withEgress.lastIndexOf('--remount-ro')).toBeGreaterThan(at);
    expect(withEgress).toContain('--unshare-net');
    expect(withEgress).not.toContain('--share-net');
  });

  it('/proc/keys is masked by /dev/null after /proc is mounted (it lists every key the uid may view)', () => {
    expect(pairs('--ro-bind')).toContainEqual(['/dev/null', '/proc/keys']);
    expect(args.indexOf('/proc/keys')).toBeGreaterThan(args.indexOf('--proc'));
  });

  it('the syscall filter is loaded from the fd given, and only when one is given', () => {
    expect(args).not.toContain('--seccomp');
    const filtered = bwrapArgs(layout, { skillDir: '/home/alice/skills/pdf', tmpBytes: 1024, seccompFd: 4 });
    expect(pairs('--seccomp').map(([fd]) => fd)).toEqual([]);
    expect(filtered.slice(filtered.indexOf('--seccomp'), filtered.indexOf('--seccomp') + 2)).toEqual(['--seccomp', '4']);
  });
});

describe('the workspace', () => {
  it('is bound read-write at /work and is the cwd, after the read-only skill', () => {
    const withWorkspace = bwrapArgs(layout, {
      skillDir: '/home/alice/skills/pdf',
      tmpBytes: 1024,
      workspace: '/tmp/scratch/run-1-ab/work',
    });
    const at = withWorkspace.indexOf('--bind');
    expect(withWorkspace.slice(at, at + 3)).toEqual(['--bind', '/tmp/scratch/run-1-ab/work', WORKSPACE_MOUNT]);
    expect(withWorkspace.filter((a) => a === '--bind')).toHaveLength(1);
    expect(withWorkspace.slice(-2)).toEqual(['--chdir', WORKSPACE_MOUNT]);
    expect(at).toBeGreaterThan(withWorkspace.indexOf(SKILL_MOUNT));
  });
});
