/**
 * @module What this machine lets the runner do, decided once at start: the interpreters (resolved to
 * absolute paths, docs/architecture.md §4), the helper tools of the sandbox (util-linux `prlimit`, `setpriv`,
 * `unshare`), and from those the isolation level every preview reports (docs/architecture.md §8).
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { INTERPRETERS } from '../shared/declaration.js';
import type { IsolationLevel } from '../shared/protocol.js';

const SYSTEM_DIRS = ['/usr/local/bin', '/usr/bin', '/bin', '/usr/sbin', '/sbin'];

export type Resolved = { path: string } | { why: string };

export interface Platform {
  asRoot: boolean;
  interpreters: Map<string, Resolved>;
  tools: { prlimit?: string; setpriv?: string; unshare?: string; sh?: string; kill?: string; mount?: string };
  isolation: IsolationLevel;
  isolationDetail: string;
  /** Set when this runner must refuse every run (root without the tools to drop privileges). */
  refuseWhy?: string;
}

/** Whether every other uid may traverse to and execute `path` (a run uid owns nothing here). */
function othersCanExecute(path: string): boolean {
  if ((statSync(path).mode & 0o001) === 0) return false;
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return false;
    if (dir === '/') return true;
  }
}

/**
 * Finds `name` in the system directories first, then in PATH. Security: the result is a real,
 * absolute path fixed at start, so neither a script nor a later PATH change can pick the binary.
 */
export function resolveBinary(name: string, searchPath: string | undefined, forOthers: boolean): Resolved {
  const dirs = [...SYSTEM_DIRS, ...(searchPath ?? '').split(':').filter((d) => isAbsolute(d))];
  let rejected: string | undefined;
  for (const dir of dirs) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      const real = realpathSync(candidate);
      if (!statSync(real).isFile()) continue;
      if (forOthers && !othersCanExecute(real)) {
        rejected = `${name} was found, but only in a place a run's own uid cannot execute`;
        continue;
      }
      return { path: real };
    } catch {
      // not here; keep looking
    }
  }
  return { why: rejected ?? `${name} is not installed on the runner's machine` };
}

function pathOf(resolved: Resolved): string | undefined {
  return 'path' in resolved ? resolved.path : undefined;
}

/** Probes the machine once. `searchPath` is the runner's own PATH (from its private env copy). */
export function probePlatform(searchPath: string | undefined): Platform {
  const asRoot = process.getuid?.() === 0;
  const interpreters = new Map<string, Resolved>();
  for (const name of INTERPRETERS) interpreters.set(name, resolveBinary(name, searchPath, asRoot));
  const tool = (name: string): string | undefined => pathOf(resolveBinary(name, undefined, false));
  const tools = { prlimit: tool('prlimit'), setpriv: tool('setpriv'), unshare: tool('unshare'), sh: tool('sh'), kill: tool('kill'), mount: tool('mount') };

  if (!asRoot) {
    return {
      asRoot, interpreters, tools, isolation: 'same-uid',
      isolationDetail: 'the runner is not root: scripts run as the runner\'s own uid; they can read what that uid can read (including the runner\'s and the front\'s memory if they share it) and write where it can write. Rlimits, no_new_privs, death with the runner and a private HOME/TMPDIR still apply.',
    };
  }
  if (!tools.setpriv || !tools.prlimit || !tools.kill) {
    return {
      asRoot, interpreters, tools, isolation: 'same-uid', isolationDetail: 'root without util-linux setpriv/prlimit',
      refuseWhy: 'the runner is root but util-linux setpriv, prlimit or kill is missing, so it cannot drop privileges; install util-linux',
    };
  }
  const mountNs = tools.unshare !== undefined && tools.sh !== undefined && tools.mount !== undefined &&
    spawnSync(tools.unshare, ['--mount', '--propagation', 'private', '--', tools.sh, '-c', '"$0" --bind /tmp /tmp && "$0" -o remount,bind,ro /tmp', tools.mount], { stdio: 'ignore', timeout: 5000 }).status === 0;
  if (mountNs) {
    return {
      asRoot, interpreters, tools, isolation: 'uid-sandbox',
      isolationDetail: 'each run gets its own unprivileged uid/gid, no groups, no capabilities, no_new_privs, rlimits (processes, file size, open files, CPU, no core), a private HOME/TMPDIR, and a mount namespace where the shared /tmp, /var/tmp, /dev/shm and /run/lock are read-only. The network is not isolated.',
    };
  }
  return {
    asRoot, interpreters, tools, isolation: 'uid',
    isolationDetail: 'each run gets its own unprivileged uid/gid, no groups, no capabilities, no_new_privs, rlimits and a private HOME/TMPDIR; mount namespaces are unavailable, so world-writable places like /tmp stay writable. The network is not isolated.',
  };
}
