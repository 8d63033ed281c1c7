/**
 * @module An interpreter's identity, part of every environment's address: a wheel built for
 * CPython 3.11 does not load in 3.12, and a native Node module only in the node ABI it was built
 * for. Asked of the interpreter itself (one short process), and remembered per binary by its
 * file identity (device, inode, size, mtime, ctime), so an upgraded interpreter is asked again and
 * its environments become missing rather than silently wrong.
 */
import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import type { DepsKind } from './spec.js';

const PYTHON_PROBE =
  'import json,platform,sys,sysconfig;print(json.dumps([sys.implementation.name,sys.version,sysconfig.get_config_var("SOABI"),platform.machine(),sys.platform]))';
const NODE_PROBE = 'console.log(JSON.stringify([process.version,process.versions.modules,process.platform,process.arch]))';

export type Identity = { ok: true; text: string } | { ok: false; why: string };

function fileKey(path: string): string | undefined {
  try {
    const st = statSync(path, { bigint: true });
    return `${path}\0${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  } catch {
    return undefined;
  }
}

/** Asks `path` (the runner's resolved interpreter of `kind`) who it is. */
export function probeIdentity(kind: DepsKind, path: string): Identity {
  const args = kind === 'python' ? ['-I', '-S', '-c', PYTHON_PROBE] : ['-e', NODE_PROBE];
  const out = spawnSync(path, args, { encoding: 'utf8', timeout: 20_000, env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' } });
  const text = (out.stdout ?? '').trim();
  if (out.status !== 0 || text === '')
    return {
      ok: false,
      why: `the ${kind === 'python' ? 'python3' : 'node'} interpreter did not say its version (${out.error?.message ?? `exit ${out.status}`})`,
    };
  return { ok: true, text: `${kind}:${text}` };
}

/** Identities remembered per interpreter binary for one process (the runner's, or the CLI's). */
export class Identities {
  readonly #known = new Map<string, Identity>();

  get(kind: DepsKind, path: string): Identity {
    const key = fileKey(path);
    if (key === undefined) return { ok: false, why: `the ${kind} interpreter is gone from the runner's machine` };
    const known = this.#known.get(key);
    if (known) return known;
    const found = probeIdentity(kind, path);
    if (this.#known.size > 16) this.#known.clear();
    this.#known.set(key, found);
    return found;
  }
}
