/**
 * @module Walks one skill directory into its manifest: every regular file a client may read, with
 * its size. Hidden entries are never listed; links are followed only while they stay inside the
 * skill; anything else that cannot be served becomes a problem, never a silent gap. Shared: the
 * front's catalog lists these files and the runner copies exactly these into a run's private folder
 * (shared/skill-content.ts), so what a person can read is what an approval binds and what runs.
 *
 * The walk uses synchronous metadata calls on purpose: on a page-cached tree an `lstatSync` costs a
 * few microseconds, a promise round trip through the thread pool ~30 µs of main-thread time plus
 * garbage; measured on 5,000 skills / 50,000 files (bench/), the parallel async walk took ~2.3 s of
 * CPU and ~480 MB of RSS, the synchronous one ~0.6 s. Nothing can be served before the scan anyway.
 */
import { lstatSync, readdirSync, realpathSync, statSync, type BigIntStats, type Dirent } from 'node:fs';
import { join } from 'node:path';
import { fileState } from './file-state.js';
import { checkPathString, isInside } from './paths.js';
import type { Problem } from './problems.js';
import { uriFor } from './skill-uri.js';

export interface FileRecord {
  /** `/`-separated path inside the skill, as clients name it. */
  path: string;
  size: number;
}

export interface WalkResult {
  files: FileRecord[];
  problems: Problem[];
  /** The walk stopped at a limit. */
  limited: boolean;
  /**
   * With `states` asked for: each listed file's state (file-state.ts) from the very stat that gave
   * its size — of the file itself, or of a link's target — by path.
   */
  states?: Map<string, string>;
  /** With `states`: the listed files reached through a link (their state is the target's). */
  linked?: Set<string>;
}

/** A folder still to walk: its real path, its path in the skill, the real folders above it. */
type Subdir = [string, string, string[]];

/** The entry's metadata, or undefined when it vanished or cannot be inspected (not served). */
function metadata(call: typeof lstatSync, path: string): BigIntStats | undefined {
  try {
    return call(path, { throwIfNoEntry: false, bigint: true });
  } catch {
    return undefined;
  }
}

interface WalkLimits {
  maxFiles: number;
  maxDirs: number;
  /** Also return each file's state ({@link WalkResult.states}). */
  states?: boolean;
}

export async function walkSkill(name: string, realDir: string, display: string, limits: WalkLimits): Promise<WalkResult> {
  const files: FileRecord[] = [];
  const problems: Problem[] = [];
  const states = limits.states ? new Map<string, string>() : undefined;
  const linked = limits.states ? new Set<string>() : undefined;
  let dirs = 0;
  let limited = false;

  const report = (rel: string, reason: Problem['reason'], detail: string): void => {
    problems.push({ path: `${display}/${rel}`, reason, detail });
  };

  const addFile = (rel: string, info: BigIntStats): void => {
    if (files.length >= limits.maxFiles) {
      limited = true;
      return;
    }
    files.push({ path: rel, size: Number(info.size) });
    states?.set(rel, fileState(info));
  };

  // `chain` holds the real folders from the skill down to this one: a link to any of them loops.
  const visit = (dirReal: string, rel: string, chain: readonly string[]): void => {
    if (limited) return;
    if (++dirs > limits.maxDirs) {
      limited = true;
      return;
    }
    let entries: Dirent[];
    try {
      entries = readdirSync(dirReal, { withFileTypes: true });
    } catch (error) {
      report(
        rel || '.',
        'unusable-path',
        `the folder cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}); its files are not served`,
      );
      return;
    }
    const subdirs: Subdir[] = [];
    for (const entry of entries) visitEntry(entry, dirReal, rel, chain, subdirs);
    for (const [dir, childRel, childChain] of subdirs) visit(dir, childRel, childChain);
  };

  /** One directory entry: a file to list, a folder to walk next, or a problem. */
  const visitEntry = (entry: Dirent, dirReal: string, rel: string, chain: readonly string[], subdirs: Subdir[]): void => {
    // Hidden entries (.git, .env, ...) are never served or listed: they leak tokens.
    if (entry.name.startsWith('.')) return;
    const childRel = rel ? `${rel}/${entry.name}` : entry.name;
    const check = checkPathString(childRel);
    if (!check.ok || uriFor(name, childRel) === undefined) {
      report(
        childRel,
        'unusable-path',
        `this name cannot be served by the read tools (${check.ok ? 'no exact URI form' : check.why}); left out of the manifest`,
      );
      return;
    }
    const full = join(dirReal, entry.name);
    if (entry.isSymbolicLink()) {
      let target: string;
      try {
        target = realpathSync(full);
      } catch {
        report(childRel, 'symlink-escape', 'a link whose target does not exist; not served');
        return;
      }
      // Security: a link planted inside a skill pointing at /etc/passwd or another skill.
      if (!isInside(realDir, target)) {
        report(childRel, 'symlink-escape', 'a link pointing outside the skill; not served');
        return;
      }
      const info = metadata(statSync, target);
      if (info?.isFile()) {
        addFile(childRel, info);
        linked?.add(childRel);
      } else if (info?.isDirectory()) {
        // A link back to the skill or to a folder holding the link would loop forever. Other
        // folder links are aliases, walked under their own path (the folder limit bounds the work).
        if (chain.includes(target)) {
          report(childRel, 'unusable-path', 'a link back to a folder that contains it (a loop); not followed');
          return;
        }
        subdirs.push([target, childRel, [...chain, target]]);
      } else report(childRel, 'unusable-path', 'a link to something that is not a regular file; not served');
      return;
    }
    if (entry.isDirectory()) {
      subdirs.push([full, childRel, [...chain, full]]);
      return;
    }
    if (!entry.isFile()) {
      report(childRel, 'unusable-path', 'not a regular file (a FIFO, socket or device); not served');
      return;
    }
    const info = metadata(lstatSync, full);
    if (info?.isFile()) addFile(childRel, info);
  };

  visit(realDir, '', [realDir]);
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  if (limited) {
    problems.push({
      path: display,
      reason: 'file-limit',
      detail: `more than ${limits.maxFiles} files or ${limits.maxDirs} folders; the walk stopped and the manifest lists the ${files.length} files walked (raise SKILL_MCP_MAX_FILES / SKILL_MCP_MAX_DIRS)`,
    });
  }
  return { files, problems, limited, ...(states ? { states } : {}), ...(linked ? { linked } : {}) };
}
