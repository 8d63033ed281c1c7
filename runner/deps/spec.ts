/**
 * @module What one environment is built from, and its address. An environment is named by the
 * sha256 over everything that decides what gets installed: its kind, the interpreter's identity
 * (python3's version and ABI, node's version and module ABI), the requirement text (the checked
 * lines pip is given) or the package.json and lockfile bytes, the source-builds flag, and the
 * digest of the operator's explicit index settings. Change any of these and it is another
 * environment, installed beside the old one; nothing is ever updated in place. Pure.
 */
import { createHash } from 'node:crypto';

export type DepsKind = 'python' | 'node';

export interface EnvSpec {
  kind: DepsKind;
  /** The interpreter's identity text (runner/deps/identity.ts). */
  interpreter: string;
  /** Python: the checked requirement lines, in order. */
  lines?: string[];
  /** Whether any line carries `--hash=` (pip then runs with --require-hashes). */
  hashed?: boolean;
  /** Node: the package.json and package-lock.json bytes, as in the skill. */
  packageJson?: Buffer;
  lockfile?: Buffer;
  sourceBuilds: boolean;
  /** sha256 of the operator's explicit index settings for this kind (runner/deps/index-settings.ts). */
  indexDigest: string;
}

const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

/** The environment's address: 64 hex digits, the name of its folder. */
export function envDigest(spec: EnvSpec): string {
  const parts = {
    v: 1,
    kind: spec.kind,
    interpreter: spec.interpreter,
    requirements: spec.kind === 'python' ? sha256((spec.lines ?? []).join('\n')) : null,
    packageJson: spec.packageJson ? sha256(spec.packageJson) : null,
    lockfile: spec.lockfile ? sha256(spec.lockfile) : null,
    sourceBuilds: spec.kind === 'python' ? spec.sourceBuilds : false,
    index: spec.indexDigest,
  };
  return sha256(JSON.stringify(parts));
}

/** The command an operator runs to build a skill's environments (in every DEPS_MISSING message). */
export function installCommand(skill: string): string {
  return `skill-mcp deps install --skill ${skill}`;
}
