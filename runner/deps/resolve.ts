/**
 * @module A skill's declared requirements turned into the environments they need (runner/deps/spec.ts):
 * the requirement file or lockfile read from the skill's folder (at a run: the runner's private
 * copy, so the bytes are the approved ones), checked line by line, and addressed. The runner does
 * this for every preview and run; `skill-mcp deps install` does the same before it builds, so
 * both arrive at the same digest.
 */
import { readBounded } from '../../shared/bounded-read.js';
import { closeSync, realpathSync } from 'node:fs';
import { relative, sep } from 'node:path';
import { rootReads } from '../../shared/open-beneath.js';
import { isInside } from '../../shared/paths.js';
import { MAX_REQUIREMENTS_FILE_BYTES, parseRequirementLines } from '../../shared/requirements.js';
import type { Requirements } from '../../shared/requirements.js';
import type { Identities } from './identity.js';
import { indexDigest } from './index-settings.js';
import type { ExplicitIndex } from './index-settings.js';
import { envDigest } from './spec.js';
import type { DepsKind, EnvSpec } from './spec.js';

/** A lockfile can be large (every transitive package); still bounded. */
export const MAX_LOCKFILE_BYTES = 16 * 1024 * 1024;

export interface ResolvedEnv {
  spec: EnvSpec;
  digest: string;
}

export type Resolution = { ok: true; envs: ResolvedEnv[] } | { ok: false; why: string };

/** The interpreters the runner resolved (absolute paths), by declaration name. */
export type InterpreterPaths = { python3?: string; node?: string };

/** Reads a file of the skill: inside it after resolution, a regular file, at most `max` bytes. */
export function readSkillFile(skillDir: string, path: string, max: number): { ok: true; bytes: Buffer } | { ok: false; why: string } {
  let fd: number | undefined;
  try {
    const real = realpathSync(skillDir + sep + path.split('/').join(sep));
    // Security: a requirements file that is a link out of the skill would install what another file says.
    if (!isInside(skillDir, real)) return { ok: false, why: `${path} resolves outside the skill` };
    // Security: opened below the skill's folder without following anything, so a folder on the way
    // swapped for a link after the check above is not followed (a root runner reading /root/...).
    const { opener } = rootReads();
    const root = opener.openRoot(skillDir);
    try {
      fd = opener.open(root, relative(skillDir, real).split(sep));
    } finally {
      closeSync(root);
    }
    const read = readBounded(fd, max);
    if (!read.ok && read.why === 'not-a-file') return { ok: false, why: `${path} is not a regular file` };
    if (!read.ok) return { ok: false, why: `${path} is ${read.stat.size} bytes, over the ${max}-byte limit` };
    return { ok: true, bytes: read.bytes };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOTDIR' || code === 'EXDEV')
      return { ok: false, why: `${path} changed into a link (or crosses a mount point) while it was opened; not followed` };
    return { ok: false, why: code === 'ENOENT' ? `${path} is not in the skill` : `${path} cannot be read (${code ?? 'error'})` };
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function identityOf(
  kind: DepsKind,
  interpreters: InterpreterPaths,
  ids: Identities,
): { ok: true; text: string } | { ok: false; why: string } {
  const path = kind === 'python' ? interpreters.python3 : interpreters.node;
  if (path === undefined)
    return {
      ok: false,
      why: `its ${kind} requirements need the ${kind === 'python' ? 'python3' : 'node'} interpreter, which the runner does not have`,
    };
  return ids.get(kind, path);
}

/** The environments `req` needs, read from `skillDir` (a real path). */
export function resolveEnvironments(
  skillDir: string,
  req: Requirements,
  interpreters: InterpreterPaths,
  ids: Identities,
  index: ExplicitIndex,
): Resolution {
  const envs: ResolvedEnv[] = [];
  if (req.python) {
    let lines = req.python.lines;
    let hashed = false;
    if ('file' in req.python.from) {
      const read = readSkillFile(skillDir, req.python.from.file, MAX_REQUIREMENTS_FILE_BYTES);
      if (!read.ok) return { ok: false, why: `requirements.python: ${read.why}` };
      const parsed = parseRequirementLines(read.bytes.toString('utf8'));
      if (!parsed.ok) return { ok: false, why: `requirements.python ${req.python.from.file}: ${parsed.why}` };
      lines = parsed.lines;
      hashed = parsed.hashed;
    } else {
      const parsed = parseRequirementLines((lines ?? []).join('\n'));
      if (!parsed.ok) return { ok: false, why: `requirements.python: ${parsed.why}` };
      lines = parsed.lines;
      hashed = parsed.hashed;
    }
    const id = identityOf('python', interpreters, ids);
    if (!id.ok) return { ok: false, why: id.why };
    const spec: EnvSpec = {
      kind: 'python',
      interpreter: id.text,
      lines,
      hashed,
      sourceBuilds: req.sourceBuilds,
      indexDigest: indexDigest('python', index),
      indexExplicit: index.pip !== undefined,
    };
    envs.push({ spec, digest: envDigest(spec) });
  }
  if (req.node) {
    const pkg = readSkillFile(skillDir, req.node.packageJson, MAX_REQUIREMENTS_FILE_BYTES);
    if (!pkg.ok) return { ok: false, why: `requirements.node: ${pkg.why}` };
    const lock = readSkillFile(skillDir, req.node.lockfile, MAX_LOCKFILE_BYTES);
    if (!lock.ok)
      return {
        ok: false,
        why: `requirements.node: ${lock.why} (npm ci installs exactly what the lockfile says: commit package-lock.json beside package.json)`,
      };
    for (const [name, bytes] of [
      [req.node.packageJson, pkg.bytes],
      [req.node.lockfile, lock.bytes],
    ] as const) {
      try {
        const value: unknown = JSON.parse(bytes.toString('utf8'));
        if (value === null || typeof value !== 'object' || Array.isArray(value))
          return { ok: false, why: `requirements.node: ${name} is not a JSON object` };
      } catch {
        return { ok: false, why: `requirements.node: ${name} is not valid JSON` };
      }
    }
    const id = identityOf('node', interpreters, ids);
    if (!id.ok) return { ok: false, why: id.why };
    const spec: EnvSpec = {
      kind: 'node',
      interpreter: id.text,
      packageJson: pkg.bytes,
      lockfile: lock.bytes,
      sourceBuilds: false,
      indexDigest: indexDigest('node', index),
      indexExplicit: index.npm !== undefined,
    };
    envs.push({ spec, digest: envDigest(spec) });
  }
  return { ok: true, envs };
}
