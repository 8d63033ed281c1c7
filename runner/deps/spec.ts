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
  /** Whether those settings were explicit (the variables) or the installing user's own tool configuration; said in messages, in the address through `indexDigest`. */
  indexExplicit?: boolean;
}

/**
 * What an environment was built from, input by input (each a digest or a short text, never a URL or
 * a path): written into the environment as `address.json` (so the manifest covers it), and read back
 * when an environment is missing, to say which input differs from the one installed for the skill.
 */
export interface EnvAddress {
  v: 1;
  kind: DepsKind;
  /** The skill `deps install` built it for (environments are shared by content; this is the first asker). */
  skill: string;
  builtAt: string;
  interpreter: string;
  /** sha256 of the requirement lines (python) or of package.json and the lockfile (node). */
  requirements: string;
  sourceBuilds: boolean;
  index: string;
  indexFrom: 'explicit' | 'own-configuration';
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

/** The inputs of `spec`'s address, for `address.json`. */
export function addressOf(spec: EnvSpec, skill: string, builtAt: string): EnvAddress {
  const requirements =
    spec.kind === 'python'
      ? sha256((spec.lines ?? []).join('\n'))
      : sha256(`${sha256(spec.packageJson ?? '')}:${sha256(spec.lockfile ?? '')}`);
  return {
    v: 1,
    kind: spec.kind,
    skill,
    builtAt,
    interpreter: spec.interpreter,
    requirements,
    sourceBuilds: spec.kind === 'python' ? spec.sourceBuilds : false,
    index: spec.indexDigest,
    indexFrom: spec.indexExplicit ? 'explicit' : 'own-configuration',
  };
}

/** An interpreter's identity (runner/deps/identity.ts) in a few words: `python 3.11.2`, `node v20.19.0`. */
function interpreterWords(identity: string): string {
  const colon = identity.indexOf(':');
  try {
    const parts = JSON.parse(identity.slice(colon + 1)) as unknown[];
    const kind = identity.slice(0, colon);
    const version = String(kind === 'python' ? parts[1] : parts[0]).split(' ')[0];
    return `${kind === 'python' ? String(parts[0] ?? 'python') : 'node'} ${version}`;
  } catch {
    return identity.slice(0, colon) || 'an interpreter';
  }
}

/**
 * Which inputs of `wanted`'s address differ from `installed`'s, in words for a DEPS_MISSING message
 * (no URL, no path: the model reads it). Empty when none does (then the environment is simply not there).
 */
export function addressDifferences(installed: EnvAddress, wanted: EnvAddress): string[] {
  const out: string[] = [];
  if (installed.interpreter !== wanted.interpreter)
    out.push(`the interpreter (${interpreterWords(installed.interpreter)} then, ${interpreterWords(wanted.interpreter)} now)`);
  if (installed.requirements !== wanted.requirements)
    out.push(wanted.kind === 'python' ? 'the requirement lines' : 'package.json or package-lock.json');
  if (installed.sourceBuilds !== wanted.sourceBuilds)
    out.push(`source-builds (${installed.sourceBuilds} then, ${wanted.sourceBuilds} now)`);
  if (installed.index !== wanted.index) {
    const vars = wanted.kind === 'python' ? 'SKILL_MCP_PIP_INDEX_URL / SKILL_MCP_PIP_FIND_LINKS' : 'SKILL_MCP_NPM_REGISTRY';
    const how =
      installed.indexFrom === 'explicit' && wanted.indexFrom === 'explicit'
        ? `${vars} had other values when it was installed`
        : installed.indexFrom === 'explicit'
          ? `it was installed with ${vars} set, and the runner has none of them`
          : `it was installed from the installing user's own ${wanted.kind === 'python' ? 'pip' : 'npm'} configuration, and the runner has ${vars} set`;
    out.push(
      `the index settings (${how}; they are part of an environment's address: give the runner the same ${vars} as \`deps install\` had)`,
    );
  }
  return out;
}

/** The command an operator runs to build a skill's environments (in every DEPS_MISSING message). */
export function installCommand(skill: string): string {
  return `skill-mcp deps install --skill ${skill}`;
}
