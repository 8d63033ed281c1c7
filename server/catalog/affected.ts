/**
 * @module Which skills a set of changed paths touches, and whether the set of skills itself may
 * have changed (a folder added, removed or renamed at a root, a SKILL.md appearing or going): the
 * first means rescanning those skills only, the second re-running discovery (a readdir of the
 * roots, ~0.1 s at 5,000 skills) — never a rescan of the whole tree.
 */
import { lstatSync } from 'node:fs';
import { basename, dirname, relative, sep } from 'node:path';

export interface Affected {
  /** Skills (by name) whose folder holds a changed path. */
  names: Set<string>;
  /** Discovery must run again: the set of skill folders may have changed. */
  rediscover: boolean;
}

/** The skill whose real folder holds `path`, found by walking up its parents. */
function ownerOf(path: string, byRealDir: ReadonlyMap<string, string>): string | undefined {
  for (let at = path; ; at = dirname(at)) {
    const name = byRealDir.get(at);
    if (name !== undefined) return name;
    if (dirname(at) === at) return undefined;
  }
}

/** Where `path` sits under the first root holding it, as segments; undefined outside every root. */
function segmentsUnder(path: string, realRoots: readonly string[]): string[] | undefined {
  for (const root of realRoots) {
    const rel = relative(root, path);
    if (rel === '') return [];
    if (!rel.startsWith('..') && !rel.startsWith(sep)) return rel.split(sep);
  }
  return undefined;
}

function isRegularFile(path: string): boolean {
  try {
    return lstatSync(path, { throwIfNoEntry: false })?.isFile() === true;
  } catch {
    return false;
  }
}

/**
 * Sorts changed real paths into skills to rescan and whether to rediscover. Discovery looks only at
 * a root's entries, `<root>/skills/` entries and the SKILL.md directly inside them (shared/discover.ts),
 * so a change anywhere deeper only touches the skill that holds it.
 */
export function affectedBy(paths: Iterable<string>, realRoots: readonly string[], byRealDir: ReadonlyMap<string, string>): Affected {
  const names = new Set<string>();
  let rediscover = false;
  for (const path of paths) {
    const owner = ownerOf(path, byRealDir);
    if (owner !== undefined) names.add(owner);
    if (rediscover) continue;
    const segments = segmentsUnder(path, realRoots);
    if (segments === undefined || segments.length <= 1 || (segments[0] === 'skills' && segments.length <= 2)) {
      rediscover = true;
      continue;
    }
    // A SKILL.md where discovery looks: only its appearing or going (or turning into something
    // else) changes discovery; an edit of a served skill's SKILL.md is a rescan of that skill.
    const atDiscoveryDepth = segments.length === 2 || (segments[0] === 'skills' && segments.length === 3);
    if (
      atDiscoveryDepth &&
      basename(path) === 'SKILL.md' &&
      (owner === undefined || byRealDir.get(dirname(path)) !== owner || !isRegularFile(path))
    )
      rediscover = true;
  }
  return { names, rediscover };
}
