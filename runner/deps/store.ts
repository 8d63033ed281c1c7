/**
 * @module Where environments live: `<state dir>/envs/<digest>/`, beside the runner's other state.
 * A root runner's state directory is 0711 (traversable, not listable; every file in it is private
 * by its own mode) so a run's uid can reach its environment and nothing else there; `envs/` is
 * 0711 too, and each environment is root's, read-only (folders 0555, files 0444 or 0555). Build
 * folders (`.build-*`, `.work-*`) are never an environment: one becomes `<digest>` by a rename
 * only once whole, with its manifest.
 */
import { chmodSync, closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readFileSync, rmSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { joinBytes } from '../../shared/byte-names.js';
import type { DepsInfo } from '../../shared/protocol.js';
import { ensurePrivateDir } from '../state.js';
import type { ResolvedEnv } from './resolve.js';
import { addressDifferences, addressOf, installCommand } from './spec.js';
import type { EnvAddress } from './spec.js';
import type { EnvVerifier } from './verify.js';

export const ENVS_FOLDER = 'envs';
/** An environment's record of its inputs (runner/deps/spec.ts, EnvAddress), covered by its manifest. */
export const ADDRESS_FILE = 'address.json';
/** An address.json is a few hundred bytes; anything larger is not one. */
const MAX_ADDRESS_BYTES = 64 * 1024;

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
  // Names as bytes (shared/byte-names.ts): a folder an install named with a byte that is not valid UTF-8 is opened too.
  const open = (dir: Buffer): void => {
    let st: Stats;
    try {
      st = lstatSync(dir);
    } catch {
      return;
    }
    if (!st.isDirectory()) return;
    chmodSync(dir, 0o700);
    for (const name of readdirSync(dir, { encoding: 'buffer' })) open(joinBytes(dir, name));
  };
  open(Buffer.from(path));
  rmSync(path, { recursive: true, force: true });
}

/** An environment's address.json, or undefined (none: built before addresses were recorded; unreadable; not one). */
function readAddress(dir: string): EnvAddress | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(join(dir, ADDRESS_FILE), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > MAX_ADDRESS_BYTES) return undefined;
    const value = JSON.parse(readFileSync(fd, 'utf8')) as EnvAddress;
    return value?.v === 1 && typeof value.skill === 'string' && typeof value.builtAt === 'string' ? value : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * For a missing environment: which inputs of its address differ from the newest environment of the
 * same kind installed for `skill` (`; the python environment installed for pdf (…) was built from
 * other inputs: …`), or nothing when there is none to compare with. Read only on this failure path.
 */
function installedDiffers(envsDir: string, skill: string, env: ResolvedEnv): string {
  let names: string[];
  try {
    names = readdirSync(envsDir).filter((n) => /^[0-9a-f]{64}$/.test(n) && n !== env.digest);
  } catch {
    return '';
  }
  const mine = names
    .map((n) => ({ digest: n, address: readAddress(join(envsDir, n)) }))
    .filter((x): x is { digest: string; address: EnvAddress } => x.address?.skill === skill && x.address.kind === env.spec.kind)
    .sort((a, b) => b.address.builtAt.localeCompare(a.address.builtAt));
  const newest = mine[0];
  if (newest === undefined) return '';
  const differs = addressDifferences(newest.address, addressOf(env.spec, skill, ''));
  return differs.length === 0
    ? ''
    : `; the ${env.spec.kind} environment installed for ${skill} (${newest.digest.slice(0, 12)}) was built from other inputs: ${differs.join('; ')}`;
}

/** The state of one resolved environment, as previews, skill_list and doctor show it. */
export async function envInfo(verifier: EnvVerifier, envsDir: string, skill: string, env: ResolvedEnv): Promise<DepsInfo> {
  const verdict = await verifier.verify(join(envsDir, env.digest), env.digest);
  if (verdict.ok) return { kind: env.spec.kind, digest: env.digest, state: 'ready' };
  const why =
    verdict.state === 'missing'
      ? `the ${env.spec.kind} environment ${env.digest.slice(0, 12)} is not installed${installedDiffers(envsDir, skill, env)}; the operator runs: ${installCommand(skill)}`
      : `the ${env.spec.kind} environment ${env.digest.slice(0, 12)} was tampered with (${verdict.why}); nothing runs with it — the operator reinstalls it: ${installCommand(skill)}`;
  return { kind: env.spec.kind, digest: env.digest, state: verdict.state, why };
}
