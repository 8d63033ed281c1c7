/**
 * @module What a run gets of its environments: each bound read-only into the sandbox at
 * `/deps/<kind>` (namespace levels) or used where it lies (uid levels: root's, read-only, so the
 * run uid can read and not write it), and the variable that makes the interpreter find it —
 * PYTHONPATH (the `site` folder) or NODE_PATH (`node_modules`). A declaration can never set
 * these (shared/declaration.ts isNeverGrantable): only the runner does, here.
 */
import { join } from 'node:path';
import type { Requirements } from '../../shared/requirements.js';
import type { DepsInfo } from '../../shared/protocol.js';
import type { Identities } from './identity.js';
import type { ExplicitIndex } from './index-settings.js';
import { resolveEnvironments } from './resolve.js';
import type { InterpreterPaths } from './resolve.js';
import { envInfo } from './store.js';
import type { EnvVerifier } from './verify.js';
import { installCommand } from './spec.js';

/** Where environments appear inside the sandbox. */
export const DEPS_MOUNT = '/deps';

/** The runner's part: where environments live, and what it remembers about interpreters and hashed files. */
export interface DepsContext {
  envsDir: string;
  identities: Identities;
  verifier: EnvVerifier;
  index: ExplicitIndex;
  /** Why the run uids cannot reach `envsDir` (a root runner's state folder inside a 0700 folder, shared/state-dir.ts). */
  unreachable?: string;
}

/** Host folders of the run's verified environments. */
export interface RunDeps {
  python?: string;
  node?: string;
}

export type DepsPlan = { ok: true; infos: DepsInfo[]; run: RunDeps } | { ok: false; why: string; infos: DepsInfo[] };

/** Resolves and verifies the environments of `skill` (its files read from `dir`); refused unless every one is ready. */
export async function planDeps(
  dctx: DepsContext,
  interpreters: InterpreterPaths,
  skill: string,
  dir: string,
  req: Requirements | undefined,
): Promise<DepsPlan> {
  if (req === undefined) return { ok: true, infos: [], run: {} };
  const resolved = resolveEnvironments(dir, req, interpreters, dctx.identities, dctx.index);
  if (!resolved.ok) return { ok: false, why: `${skill}: its requirements cannot be installed: ${resolved.why}`, infos: [] };
  if (dctx.index.problems.length > 0)
    return {
      ok: false,
      why: `${skill}: the package index settings are malformed (${dctx.index.problems.join('; ')}); the operator fixes them, then runs ${installCommand(skill)}`,
      infos: [],
    };
  // Installed or not, an environment the run's uid cannot reach would only fail in the sandbox.
  if (dctx.unreachable !== undefined && resolved.envs.length > 0)
    return { ok: false, why: `${skill}: its environments cannot be used: ${dctx.unreachable}`, infos: [] };
  const infos: DepsInfo[] = [];
  const run: RunDeps = {};
  for (const env of resolved.envs) {
    const info = await envInfo(dctx.verifier, dctx.envsDir, skill, env);
    infos.push(info);
    run[env.spec.kind] = join(dctx.envsDir, env.digest);
  }
  const bad = infos.find((i) => i.state !== 'ready');
  if (bad) return { ok: false, why: `${skill}: ${bad.why}`, infos };
  return { ok: true, infos, run };
}

/** The variables a run gets for its environments (`sandboxed`: the /deps mounts, else host paths). */
export function depsVariables(deps: RunDeps, sandboxed: boolean): Record<string, string> {
  const base = (kind: keyof RunDeps): string => (sandboxed ? `${DEPS_MOUNT}/${kind}` : deps[kind]!);
  return {
    ...(deps.python ? { PYTHONPATH: `${base('python')}/site` } : {}),
    ...(deps.node ? { NODE_PATH: `${base('node')}/node_modules` } : {}),
  };
}

/** Read-only binds for bubblewrap: host folder → /deps/<kind>. */
export function depsBinds(deps: RunDeps): { source: string; mount: string }[] {
  return (['python', 'node'] as const).flatMap((kind) => (deps[kind] ? [{ source: deps[kind]!, mount: `${DEPS_MOUNT}/${kind}` }] : []));
}
