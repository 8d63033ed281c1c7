/**
 * @module Which isolation level a runner started by the tests should report on this machine, so
 * tests assert the level the machine really gives instead of skipping. CI runs the suite with
 * bubblewrap and again with `SKILL_MCP_BWRAP=off` (the fallback levels), as root and not.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { IsolationLevel } from '../shared/protocol.js';

export const isRoot = process.getuid?.() === 0;
export const bwrapOff = process.env['SKILL_MCP_BWRAP'] === 'off';

/** Whether bubblewrap can make a user namespace here (installed, and not switched off by the kernel). */
export const bwrapWorks: boolean =
  !bwrapOff &&
  process.platform === 'linux' &&
  ['/usr/bin/bwrap', '/bin/bwrap', '/usr/local/bin/bwrap'].some(existsSync) &&
  spawnSync('bwrap', ['--unshare-user', '--unshare-pid', '--ro-bind', '/', '/', '--', 'true'], {
    stdio: 'ignore',
    timeout: 10_000,
    env: { PATH: '/usr/bin:/bin:/usr/local/bin' },
  }).status === 0;

/** The level a runner of this uid reports here (util-linux present, Linux). */
export function expectedLevel(runnerIsRoot: boolean): IsolationLevel {
  if (runnerIsRoot) return bwrapWorks ? 'namespace-uid' : 'uid-sandbox';
  return bwrapWorks ? 'namespace' : 'same-uid';
}

/** Whether a level gives the run pid and network namespaces of its own. */
export function hasNamespaces(level: IsolationLevel): boolean {
  return level === 'namespace' || level === 'namespace-uid' || level === 'uid-sandbox';
}

/**
 * The variables every script gets here besides the granted ones, sorted: in bubblewrap also
 * `PWD=/work`, which bubblewrap exports and the runner names (runner/sandbox/bwrap.ts sandboxPwd).
 */
export const BASE_ENV_NAMES: readonly string[] = bwrapWorks
  ? ['HOME', 'PATH', 'PWD', 'SKILL_DIR', 'TMPDIR']
  : ['HOME', 'PATH', 'SKILL_DIR', 'TMPDIR'];

/** The bubblewrap levels: private /tmp, nothing of the host but system folders and the skill. */
export function hasBwrap(level: IsolationLevel): boolean {
  return level === 'namespace' || level === 'namespace-uid';
}

/** One bubblewrap level a test can reach on this machine, and how to start its runner. */
export interface NamespaceVariant {
  name: string;
  level: 'namespace' | 'namespace-uid';
  /** False when this machine cannot give the level (no working bubblewrap, or not root). */
  run: boolean;
  /** The runner's uid when the test makes one (a root test process drops it), or undefined (the test's own). */
  uid: number | undefined;
}

/**
 * Both bubblewrap levels: a runner as an ordinary uid (`userUid` when the test runs as root), and a
 * root runner. As root the ordinary uid's level runs only when `where` is `'always'`: CI tests that
 * level in a pass of its own as a real ordinary uid (.ci/run, 2b), which starts the runner as a user
 * does, so a root pass dropping to `userUid` would run the same tests a second time
 * (CONTRIBUTING.md, "Tests and CI"). The skipped variant's name says where it runs.
 */
export function namespaceVariants(userUid: number, where: 'own-pass' | 'always' = 'own-pass'): NamespaceVariant[] {
  const ordinary = where === 'always' || !isRoot;
  return [
    {
      name: ordinary
        ? 'a runner started as an ordinary user'
        : "a runner started as an ordinary user (as root: in the ordinary uid's pass)",
      level: 'namespace',
      run: bwrapWorks && ordinary,
      uid: isRoot ? userUid : undefined,
    },
    { name: 'a root runner (per-run uid)', level: 'namespace-uid', run: bwrapWorks && isRoot, uid: undefined },
  ];
}
