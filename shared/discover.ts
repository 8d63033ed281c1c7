/**
 * @module Finds the skill directories under the configured roots (docs/architecture.md §3) — the part of the
 * catalog both processes need: the front to list skills, the runner to find a skill by name again
 * before every run instead of trusting a path the front sent. It does not walk skill contents.
 *
 * Rules: three layouts per root; identity is the directory name (of the symlink's *target* for a
 * linked skill); a name claimed by two directories is refused on both sides; links leaving the
 * root are refused; the same real directory counts once; hidden entries are never candidates.
 *
 * Metadata calls are synchronous on purpose: a promise round trip costs ~30 µs of main-thread
 * time against a few µs for the syscall itself, and discovery is ~4 calls per skill (measured on
 * 5,000 skills in bench/: ~0.4 s as promises; the runner repeats discovery before every run).
 */
import { lstatSync, realpathSync, statSync, type Stats } from 'node:fs';
import { basename, join } from 'node:path';
import { readFolder, type FolderListing, type FolderListings } from './folder-listing.js';
import { isInside, usableSkillName } from './paths.js';
import type { Problem } from './problems.js';
import { explainUnreadableRoot } from './unreadable-root.js';

export interface DiscoveredSkill {
  /** Identity: the real directory's name. */
  name: string;
  /** Real (symlink-free) absolute path of the skill directory. Never shown to the model. */
  realDir: string;
  /** Where it was found, relative to its root's folder name (safe to show). */
  displayPath: string;
  /** Index into the roots list. */
  root: number;
}

export interface Discovery {
  skills: DiscoveredSkill[];
  problems: Problem[];
}

/** Label of a root in what the model sees: its folder name, never its absolute path. */
export function rootLabel(root: string): string {
  return basename(root) || 'root';
}

interface Candidate {
  entryPath: string;
  display: string;
  root: number;
  realRoot: string;
  /** Name of the entry that led here (differs from the real name for a symlink). */
  entryName: string;
  /** The entry is a symbolic link (its target's name decides the skill's name). */
  link: boolean;
}

/** The entry itself (not a link's target), or undefined when it is missing or cannot be inspected. */
function entryAt(path: string): Stats | undefined {
  try {
    return lstatSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

function exists(path: string): boolean {
  return entryAt(path) !== undefined;
}

/** One folder of a root whose entries are candidates: the root itself, or its `skills/` container. */
interface CandidateFolder {
  path: string;
  display: string;
  listing: FolderListing;
}

/** A root's candidates: the root itself when it holds a SKILL.md, else the entries of its folders. */
interface RootCandidates {
  index: number;
  realRoot: string;
  single?: Candidate;
  folders: CandidateFolder[];
}

/** How a folder is listed: now (full discovery), or through the runner's remembered listings. */
type ListFolder = (dir: string) => FolderListing;

/** Finds one root's candidate folders (its three layouts), reporting what it cannot use. */
function rootCandidates(root: string, index: number, problems: Problem[], listFolder: ListFolder): RootCandidates | undefined {
  const label = rootLabel(root);
  let realRoot: string;
  try {
    realRoot = realpathSync.native(root);
    if (!statSync(realRoot).isDirectory()) throw new Error('not a directory');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'EACCES' ? explainUnreadableRoot(root, label)?.forModel : undefined;
    problems.push({
      path: label,
      reason: 'root-unreadable',
      detail: why ?? `the configured root "${label}" cannot be read (${code ?? 'not a directory'})`,
    });
    return undefined;
  }
  if (exists(join(realRoot, 'SKILL.md'))) {
    return {
      index,
      realRoot,
      single: {
        entryPath: realRoot,
        display: label,
        root: index,
        realRoot: join(realRoot, '..'),
        entryName: basename(realRoot),
        link: false,
      },
      folders: [],
    };
  }
  const list = (dir: string, display: string): CandidateFolder | undefined => {
    try {
      return { path: dir, display, listing: listFolder(dir) };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const why = code === 'EACCES' && dir === realRoot ? explainUnreadableRoot(realRoot, label)?.forModel : undefined;
      problems.push({ path: display, reason: 'root-unreadable', detail: why ?? `"${display}" cannot be listed (${code ?? 'error'})` });
      return undefined;
    }
  };
  const top = list(realRoot, label);
  if (!top) return { index, realRoot, folders: [] };
  const folders = [top];
  // `<root>/skills/` without its own SKILL.md is the third layout's container, not a candidate.
  const container = top.listing.byName.get('skills') === undefined ? undefined : join(realRoot, 'skills');
  if (container !== undefined && !exists(join(container, 'SKILL.md'))) {
    const nested = list(container, `${label}/skills`);
    if (nested) folders.push(nested);
    else folders.push({ path: container, display: `${label}/skills`, listing: { entries: [], links: [], byName: new Map() } });
  }
  return { index, realRoot, folders };
}

/** Whether `folder`'s entry `i` is a candidate (the container itself is not). */
function isCandidate(rc: RootCandidates, folder: number, i: number): boolean {
  return !(folder === 0 && rc.folders.length > 1 && rc.folders[0]!.listing.entries[i]!.name === 'skills');
}

function candidateAt(rc: RootCandidates, folder: CandidateFolder, i: number): Candidate {
  const entry = folder.listing.entries[i]!;
  return {
    entryPath: join(folder.path, entry.name),
    display: `${folder.display}/${entry.name}`,
    root: rc.index,
    realRoot: rc.realRoot,
    entryName: entry.name,
    link: entry.link,
  };
}

/** How many candidates a root has, without making them. */
function candidateCount(rc: RootCandidates): number {
  if (rc.single) return 1;
  return rc.folders.reduce((sum, f) => sum + f.listing.entries.length, 0) - (rc.folders.length > 1 ? 1 : 0);
}

/** Every candidate of a root, in listing order (the top folder's, then its container's). */
function allCandidates(rc: RootCandidates): Candidate[] {
  if (rc.single) return [rc.single];
  const out: Candidate[] = [];
  for (const [f, folder] of rc.folders.entries()) {
    for (let i = 0; i < folder.listing.entries.length; i++) if (isCandidate(rc, f, i)) out.push(candidateAt(rc, folder, i));
  }
  return out;
}

/** The candidates of a root that can be the skill `name`: the entries called `name`, and every link (its target's name decides). */
function candidatesNamed(rc: RootCandidates, name: string): Candidate[] {
  if (rc.single) return rc.single.entryName === name ? [rc.single] : [];
  const out: Candidate[] = [];
  for (const [f, folder] of rc.folders.entries()) {
    const named = folder.listing.byName.get(name);
    const indexes =
      named === undefined || folder.listing.entries[named]!.link
        ? folder.listing.links
        : [...folder.listing.links, named].sort((a, b) => a - b);
    for (const i of indexes) if (isCandidate(rc, f, i)) out.push(candidateAt(rc, folder, i));
  }
  return out;
}

/** Resolves one candidate to a skill, or a problem. */
async function resolveCandidate(c: Candidate, problems: Problem[]): Promise<DiscoveredSkill | undefined> {
  let realDir: string;
  try {
    realDir = realpathSync.native(c.entryPath);
    if (!statSync(realDir).isDirectory()) return undefined; // a link to a file is not a candidate
  } catch {
    problems.push({ path: c.display, reason: 'symlink-escape', detail: `"${c.display}" is a link whose target does not exist` });
    return undefined;
  }
  // Security: a linked skill pointing outside its root would serve arbitrary host directories.
  if (!isInside(c.realRoot, realDir) || realDir === c.realRoot) {
    problems.push({ path: c.display, reason: 'symlink-escape', detail: `"${c.display}" links outside its root; it is not served` });
    return undefined;
  }
  // One lstat answers both questions (was two: ~3 ms at 553 skills on the bench VM).
  const skillMd = entryAt(join(realDir, 'SKILL.md'));
  if (skillMd === undefined) {
    problems.push({ path: c.display, reason: 'no-skill-md', detail: `"${c.display}" has no SKILL.md, so it is not a skill` });
    return undefined;
  }
  if (!skillMd.isFile()) {
    problems.push({
      path: `${c.display}/SKILL.md`,
      reason: 'unreadable-skill-md',
      detail: 'SKILL.md is not a regular file (a directory, link or special file)',
    });
    return undefined;
  }
  const name = basename(realDir);
  const unusable = usableSkillName(name);
  if (unusable) {
    problems.push({ path: c.display, reason: 'unusable-name', detail: `the directory name cannot be served: ${unusable}` });
    return undefined;
  }
  if (name !== c.entryName) {
    problems.push({
      path: c.display,
      reason: 'name-mismatch',
      detail: `"${c.entryName}" links to the directory "${name}"; it is served as "${name}" (identity is the real directory's name)`,
    });
  }
  return { name, realDir, displayPath: c.display, root: c.root };
}

/**
 * Discovers the skills under `roots`, sorted by name, at most `maxSkills` of them (the rest are
 * reported as `skill-limit`, never dropped silently).
 */
export async function discoverSkills(roots: readonly string[], maxSkills: number): Promise<Discovery> {
  const problems: Problem[] = [];
  const rooted = roots.map((root, i) => rootCandidates(root, i, problems, readFolder)).filter((rc) => rc !== undefined);
  const candidates = rooted.flatMap(allCandidates);
  const resolved = (await Promise.all(candidates.map((c) => resolveCandidate(c, problems)))).filter(
    (s): s is DiscoveredSkill => s !== undefined,
  );

  // The same real directory reached twice (a link beside the linked directory) is one skill.
  const byReal = new Map<string, DiscoveredSkill>();
  for (const skill of resolved) {
    const seen = byReal.get(skill.realDir);
    if (!seen || skill.displayPath.length < seen.displayPath.length) byReal.set(skill.realDir, skill);
  }
  // Two different directories serving one name: both refused, never first-wins.
  const byName = new Map<string, DiscoveredSkill[]>();
  for (const skill of byReal.values()) byName.set(skill.name, [...(byName.get(skill.name) ?? []), skill]);
  const skills: DiscoveredSkill[] = [];
  for (const [name, group] of byName) {
    if (group.length === 1) skills.push(group[0]!);
    else {
      const where = group.map((s) => s.displayPath).join(', ');
      for (const s of group) {
        problems.push({
          path: s.displayPath,
          reason: 'duplicate-name',
          detail: `"${name}" is served by ${group.length} directories (${where}); all are refused until one is renamed`,
        });
      }
    }
  }
  skills.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const dropped of skills.splice(maxSkills)) {
    problems.push({
      path: dropped.displayPath,
      reason: 'skill-limit',
      detail: `more than ${maxSkills} skills; "${dropped.name}" is not served (raise SKILL_MCP_MAX_SKILLS)`,
    });
  }
  problems.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { skills, problems };
}

/**
 * The one skill served as `name`, or undefined — exactly what {@link discoverSkills} would say,
 * without resolving every candidate. Only entries called `name` and links (whose target's name
 * decides) can be that skill, and a duplicate among them refuses it as discovery does; when the
 * candidates outnumber `maxSkills`, the limit depends on every other skill, so it falls back to a
 * full discovery. The runner calls this before every prepare and run, on catalogs of thousands:
 * with `listings` (shared/folder-listing.ts) a root's listing is read again only when the root
 * changed, so the cost is the links' and the one skill's, not the catalog's.
 */
export async function findSkillByName(
  roots: readonly string[],
  name: string,
  maxSkills: number,
  listings?: FolderListings,
): Promise<DiscoveredSkill | undefined> {
  const ignored: Problem[] = [];
  const listFolder: ListFolder = listings ? (dir) => listings.read(dir) : readFolder;
  const rooted = roots.map((root, i) => rootCandidates(root, i, ignored, listFolder)).filter((rc) => rc !== undefined);
  if (rooted.reduce((sum, rc) => sum + candidateCount(rc), 0) > maxSkills)
    return (await discoverSkills(roots, maxSkills)).skills.find((s) => s.name === name);
  const possible = rooted.flatMap((rc) => candidatesNamed(rc, name));
  const resolved = (await Promise.all(possible.map((c) => resolveCandidate(c, ignored)))).filter(
    (s): s is DiscoveredSkill => s?.name === name,
  );
  const realDirs = new Set(resolved.map((s) => s.realDir));
  // Security: two directories claiming one name are both refused, here as in the catalog.
  if (realDirs.size !== 1) return undefined;
  return resolved.reduce((best, s) => (s.displayPath.length < best.displayPath.length ? s : best));
}
