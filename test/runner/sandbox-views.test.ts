/**
 * The run sandbox and the `deps install` sandbox share one system view (runner/sandbox/bwrap.ts):
 * the same namespaces, the same read-only system folders, /etc allowlist, /proc with /proc/keys
 * masked, /dev, capped tmpfs, and the same read-only seal at the end. Each command line is read as
 * a list of bubblewrap operations; what one has and the other lacks must be exactly the
 * differences each side documents, so a bind added to one side only fails here.
 */
import { describe, expect, it } from 'vitest';
import { EGRESS_SOCKET_MOUNT } from '../../runner/egress/bridge.js';
import { BUILD_ENV, BUILD_WORK, bwrapInstallArgs, INSTALL_SECCOMP_FD, TMP_BYTES } from '../../cli/deps/sandbox.js';
import { bwrapArgs, SANDBOX_PROCESS, SEAL_VIEW, SKILL_MOUNT, systemView, WORKSPACE_MOUNT } from '../../runner/sandbox/bwrap.js';
import type { HostLayout } from '../../runner/sandbox/bwrap.js';
import { SECCOMP_FD } from '../../runner/sandbox/spawn.js';

/** How many values each bubblewrap option the sandboxes use takes. An option not listed fails the test until it is. */
const ARITY: Record<string, number> = {
  '--unshare-user': 0,
  '--unshare-pid': 0,
  '--unshare-ipc': 0,
  '--unshare-net': 0,
  '--unshare-uts': 0,
  '--unshare-cgroup-try': 0,
  '--disable-userns': 0,
  '--die-with-parent': 0,
  '--new-session': 0,
  '--as-pid-1': 0,
  '--hostname': 1,
  '--proc': 1,
  '--dev': 1,
  '--tmpfs': 1,
  '--seccomp': 1,
  '--remount-ro': 1,
  '--chdir': 1,
  '--ro-bind': 2,
  '--ro-bind-try': 2,
  '--bind': 2,
  '--symlink': 2,
};

/** The command line as operations, one string each (`--size N` kept with the mount it sizes). */
function operations(args: readonly string[]): string[] {
  const ops: string[] = [];
  let size: string[] = [];
  for (let i = 0; i < args.length; ) {
    if (args[i] === '--size') {
      size = args.slice(i, i + 2);
      i += 2;
      continue;
    }
    const arity = ARITY[args[i]!];
    if (arity === undefined) throw new Error(`unclassified bubblewrap option ${args[i]}: add it to ARITY`);
    ops.push([...size, ...args.slice(i, i + 1 + arity)].join(' '));
    size = [];
    i += 1 + arity;
  }
  return ops;
}

function containsRun(args: readonly string[], part: readonly string[]): boolean {
  return args.some((_, i) => part.every((a, j) => args[i + j] === a));
}

const LAYOUTS: Record<string, HostLayout> = {
  'merged /usr': {
    links: [
      { path: '/bin', target: 'usr/bin' },
      { path: '/lib', target: 'usr/lib' },
      { path: '/lib64', target: 'usr/lib64' },
      { path: '/sbin', target: 'usr/sbin' },
    ],
    dirs: [],
    extra: [],
  },
  'split /usr, node in /opt': { links: [], dirs: ['/bin', '/lib', '/lib64', '/sbin'], extra: ['/opt/node'] },
};

const run = (layout: HostLayout): string[] =>
  bwrapArgs(layout, {
    skillDir: '/var/lib/skill-mcp/runs/run-1/skill',
    tmpBytes: TMP_BYTES,
    egressSocket: '/var/lib/skill-mcp/runs/run-1/egress.sock',
    seccompFd: SECCOMP_FD,
    workspace: '/var/lib/skill-mcp/runs/run-1/work',
    deps: [{ source: '/var/lib/skill-mcp/envs/abc', mount: '/deps/python' }],
  });
const install = (layout: HostLayout): string[] =>
  bwrapInstallArgs(
    layout,
    {
      envDir: '/var/lib/skill-mcp/envs/.build-1',
      workDir: '/var/lib/skill-mcp/envs/.work-1',
      readOnly: ['/srv/wheels'],
      egressSocket: '/var/lib/skill-mcp/envs/.work-1/egress.sock',
    },
    INSTALL_SECCOMP_FD,
  );

describe.each(Object.entries(LAYOUTS))('run and install sandboxes on a host with %s', (_name, layout) => {
  const runOps = operations(run(layout));
  const installOps = operations(install(layout));

  it('both contain the one system view, the same namespaces and the same seal, whole and in order', () => {
    for (const args of [run(layout), install(layout)]) {
      expect(containsRun(args, systemView(layout, { tmpBytes: TMP_BYTES }))).toBe(true);
      expect(args.slice(0, SANDBOX_PROCESS.length)).toEqual(SANDBOX_PROCESS);
      expect(containsRun(args, SEAL_VIEW)).toBe(true);
      expect(args.slice(-SEAL_VIEW.length - 2, -2)).toEqual(SEAL_VIEW);
    }
  });

  it('drift: everything they share is the same list in the same order', () => {
    expect(runOps.filter((op) => installOps.includes(op))).toEqual(installOps.filter((op) => runOps.includes(op)));
  });

  it('drift: the run has exactly its documented extras (skill, egress socket, filter on fd 4, workspace, environment, cwd)', () => {
    expect(runOps.filter((op) => !installOps.includes(op))).toEqual([
      '--hostname skill-sandbox',
      `--ro-bind /var/lib/skill-mcp/runs/run-1/skill ${SKILL_MOUNT}`,
      `--ro-bind /var/lib/skill-mcp/runs/run-1/egress.sock ${EGRESS_SOCKET_MOUNT}`,
      `--seccomp ${SECCOMP_FD}`,
      `--bind /var/lib/skill-mcp/runs/run-1/work ${WORKSPACE_MOUNT}`,
      '--ro-bind /var/lib/skill-mcp/envs/abc /deps/python',
      `--chdir ${WORKSPACE_MOUNT}`,
    ]);
  });

  it('drift: the install has exactly its deliberate extras (index paths, the two build folders, the proxy socket, filter on fd 3, cwd)', () => {
    expect(installOps.filter((op) => !runOps.includes(op))).toEqual([
      '--hostname skill-deps',
      '--ro-bind-try /srv/wheels /srv/wheels',
      `--bind /var/lib/skill-mcp/envs/.build-1 ${BUILD_ENV}`,
      `--bind /var/lib/skill-mcp/envs/.work-1 ${BUILD_WORK}`,
      `--ro-bind /var/lib/skill-mcp/envs/.work-1/egress.sock ${EGRESS_SOCKET_MOUNT}`,
      `--seccomp ${INSTALL_SECCOMP_FD}`,
      `--chdir ${BUILD_WORK}`,
    ]);
  });

  it('the install, as a run, masks /proc/keys after /proc, keeps the network unshared and nested user namespaces off, and seals / and /dev read-only last', () => {
    const args = install(layout);
    expect(installOps).toContain('--ro-bind /dev/null /proc/keys');
    expect(installOps.indexOf('--ro-bind /dev/null /proc/keys')).toBeGreaterThan(installOps.indexOf('--proc /proc'));
    for (const flag of ['--unshare-net', '--unshare-user', '--disable-userns', '--die-with-parent', '--new-session'])
      expect(args).toContain(flag);
    expect(args).not.toContain('--share-net');
    expect(installOps.slice(-3)).toEqual(['--remount-ro /dev', '--remount-ro /', `--chdir ${BUILD_WORK}`]);
  });
});

describe('the install sandbox without a filter for this machine', () => {
  it('gets no --seccomp, and nothing else changes', () => {
    const layout = LAYOUTS['merged /usr']!;
    const filtered = operations(install(layout));
    const bare = operations(
      bwrapInstallArgs(
        layout,
        {
          envDir: '/var/lib/skill-mcp/envs/.build-1',
          workDir: '/var/lib/skill-mcp/envs/.work-1',
          readOnly: ['/srv/wheels'],
          egressSocket: '/var/lib/skill-mcp/envs/.work-1/egress.sock',
        },
        undefined,
      ),
    );
    expect(filtered.filter((op) => !bare.includes(op))).toEqual([`--seccomp ${INSTALL_SECCOMP_FD}`]);
    expect(bare.filter((op) => !filtered.includes(op))).toEqual([]);
  });
});
