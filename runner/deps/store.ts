/**
 * @module Where environments live: `<state dir>/envs/<digest>/`, beside the runner's other state.
 * A root runner's state directory is 0711 (traversable, not listable; every file in it is private
 * by its own mode) so a run's uid can reach its environment and nothing else there; `envs/` is
 * 0711 too, and each environment is root's, read-only (folders 0555, files 0444 or 0555). Build
 * folders (`.build-*`, `.work-*`) are never an environment: one becomes `<digest>` by a rename
 * only once whole, with its manifest.
 */
import { chmodSync, lstatSync, readdirSync, rmSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import type { DepsInfo } from '../../shared/protocol.js';
import { ensurePrivateDir } from '../state.js';
import type { ResolvedEnv } from './resolve.js';
import { installCommand } from './spec.js';
import type { EnvVerifier } from './verify.js';

export const ENVS_FOLDER = 'envs';

export function envsDirOf(stateDir: string): string {
  return join(stateDir, ENVS_FOLDER);
}

/** The state directory's mode for this process: root's must be traversable by run uids. */
export function stateDirMode(): number {
  return process.getuid?.() === 0 ? 0o711 : 0o700;
}

/** Creates the envs folder (and the state dir) with the modes above; refuses a link or a foreign owner (runner/state.ts). */
export function ensureEnvsDir(stateDir: string): string {
  const dir = envsDirOf(stateDir);
  for (const path of [stateDir, dir]) ensurePrivateDir(path, stateDirMode());
  return dir;
}

/** Removes a tree that may be read-only (an environment's folders are 0555). */
export function removeTree(path: string): void {
  const open = (dir: string): void => {
    let st: Stats;
    try {
      st = lstatSync(dir);
    } catch {
      return;
    }
    if (!st.isDirectory()) return;
    chmodSync(dir, 0o700);
    for (const name of readdirSync(dir)) open(join(dir, name));
  };
  open(path);
  rmSync(path, { recursive: true, force: true });
}

/** The state of one resolved environment, as previews, skill_list and doctor show it. */
export async function envInfo(verifier: EnvVerifier, envsDir: string, skill: string, env: ResolvedEnv): Promise<DepsInfo> {
  const verdict = await verifier.verify(join(envsDir, env.digest), env.digest);
  if (verdict.ok) return { kind: env.spec.kind, digest: env.digest, state: 'ready' };
  const why =
    verdict.state === 'missing'
      ? `the ${env.spec.kind} environment ${env.digest.slice(0, 12)} is not installed; the operator runs: ${installCommand(skill)}`
      : `the ${env.spec.kind} environment ${env.digest.slice(0, 12)} was tampered with (${verdict.why}); nothing runs with it — the operator reinstalls it: ${installCommand(skill)}`;
  return { kind: env.spec.kind, digest: env.digest, state: verdict.state, why };
}
