/**
 * @module Plans the skills of one fetched commit for `skill-mcp pull --git`: the skill folders under
 * `--path` in the layouts the server serves (the folder itself, `<name>/`, `skills/<name>/`), and
 * each one's files through the same checks as a pull from an MCP server (checks.ts). Only regular
 * blobs become files. Links and submodules are never materialised, LFS pointers are not files
 * anyone wants, dot-files are never served: each is reported as a file not pulled. A path the
 * rules refuse (a backslash, a control character) refuses the whole skill.
 */
import { createHash } from 'node:crypto';
import { PULL_MAX_FILES, PULL_MAX_SKILL_BYTES, checkFileList, checkFilePath, checkSkillName, type PlannedFile } from './checks.js';
import { GitError, type Repo, type TreeEntry } from './git.js';
import { checkPathString, isHiddenPath } from '../../shared/paths.js';
import type { Refusal, RemoteSkill } from './remote.js';

const LFS_POINTER = Buffer.from('version https://git-lfs.github.com/spec/v1');
/** Real LFS pointers are ~130 bytes; the spec caps them at 1024. */
const LFS_POINTER_MAX = 1024;

export interface GitSkill extends RemoteSkill {
  /** Blob id by file path, to read the bytes again at install time. */
  blobs: Map<string, string>;
}

export interface GitDiscovery {
  skills: GitSkill[];
  refused: Refusal[];
  /** Files inside a planned skill that are not pulled, each with why. */
  skipped: { skill: string; path: string; why: string }[];
}

const digestOf = (bytes: Buffer): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

/** The skill folders under the listing: prefix (`""`, `name/` or `skills/name/`) and the name it gives. */
function skillFolders(entries: readonly TreeEntry[], selfName: string): { prefix: string; raw: string }[] {
  if (entries.some((e) => e.path === 'SKILL.md')) return [{ prefix: '', raw: selfName }];
  const out: { prefix: string; raw: string }[] = [];
  const hasSkillMd = new Set(entries.filter((e) => e.path.endsWith('/SKILL.md')).map((e) => e.path.slice(0, -'/SKILL.md'.length)));
  for (const folder of hasSkillMd) {
    const parts = folder.split('/');
    if (parts.length === 1) out.push({ prefix: `${folder}/`, raw: folder });
    // `skills/` without its own SKILL.md is the third layout's container.
    else if (parts.length === 2 && parts[0] === 'skills' && !hasSkillMd.has('skills')) out.push({ prefix: `${folder}/`, raw: parts[1]! });
  }
  return out;
}

function planOne(
  repo: Repo,
  base: string,
  prefix: string,
  name: string,
  entries: readonly TreeEntry[],
  out: GitDiscovery,
): GitSkill | Refusal {
  const candidates: { path: string; oid: string; size: number }[] = [];
  const skipped: GitDiscovery['skipped'] = [];
  for (const entry of entries) {
    if (!entry.path.startsWith(prefix)) continue;
    const rel = entry.path.slice(prefix.length);
    const plain = checkPathString(rel);
    if (plain.ok && isHiddenPath(plain.segments)) {
      skipped.push({ skill: name, path: rel, why: 'a dot-file; hidden files are never pulled' });
      continue;
    }
    const path = checkFilePath(rel);
    if (!path.ok) return { name, why: path.why };
    // Security: a link (to /etc/passwd, to another skill) is never written, so it can never be followed.
    if (entry.mode === '120000') skipped.push({ skill: name, path: rel, why: 'a symbolic link; links are never materialised' });
    // Security: a submodule would be another repository, fetched and trusted blindly; it is never fetched.
    else if (entry.mode === '160000') skipped.push({ skill: name, path: rel, why: 'a submodule (gitlink); submodules are never fetched' });
    else if (entry.type === 'blob' && (entry.mode === '100644' || entry.mode === '100755') && entry.size !== undefined)
      candidates.push({ path: path.value, oid: entry.oid, size: entry.size });
    else return { name, why: `"${rel}" is a tree entry of mode ${entry.mode}, not a file` };
  }
  // Security: the caps are checked on the sizes the tree records, before a byte is read.
  if (candidates.length > PULL_MAX_FILES)
    return { name, why: `it holds ${candidates.length} files, over the ${PULL_MAX_FILES} a pull accepts` };
  let total = 0;
  for (const c of candidates) {
    total += c.size;
    if (total > PULL_MAX_SKILL_BYTES)
      return {
        name,
        why: `its files add up to more than ${PULL_MAX_SKILL_BYTES} bytes ("${c.path}" is ${c.size}), over what a pull accepts; nothing was read`,
      };
  }
  const bytes = repo.read(
    candidates.map((c) => c.oid),
    total,
  );
  const files: PlannedFile[] = [];
  const blobs = new Map<string, string>();
  candidates.forEach((c, i) => {
    const data = bytes[i]!;
    if (data.length <= LFS_POINTER_MAX && data.subarray(0, LFS_POINTER.length).equals(LFS_POINTER)) {
      skipped.push({ skill: name, path: c.path, why: 'a Git LFS pointer; LFS objects are never fetched (refused file)' });
      return;
    }
    files.push({ path: c.path, uri: `${base}${prefix}${c.path}`, size: data.length, digest: digestOf(data) });
    blobs.set(c.path, c.oid);
  });
  const why = checkFileList(files);
  if (why) return { name, why };
  out.skipped.push(...skipped);
  return { name, uri: `${base}${prefix}SKILL.md`, via: 'git', files, blobs };
}

/**
 * Every skill under `path` at the fetched commit (or only the `wanted` ones), planned. Two
 * folders that would be one skill folder here are both refused, never first-wins.
 */
export function planGit(repo: Repo, path: string, selfName: string, wanted: ReadonlySet<string>): GitDiscovery {
  const entries = repo.list(path);
  if (!entries) throw new GitError(`--path ${JSON.stringify(path)} is not a folder at commit ${repo.commit}`);
  const out: GitDiscovery = { skills: [], refused: [], skipped: [] };
  const base = path === '' ? '' : `${path}/`;
  const folders = skillFolders(entries, selfName);
  const count = new Map<string, number>();
  for (const f of folders) count.set(f.raw.toLowerCase(), (count.get(f.raw.toLowerCase()) ?? 0) + 1);
  for (const folder of folders) {
    if (wanted.size > 0 && !wanted.has(folder.raw)) continue;
    const name = checkSkillName(folder.raw);
    if (!name.ok) out.refused.push({ name: folder.raw, why: name.why });
    else if (count.get(folder.raw.toLowerCase())! > 1)
      out.refused.push({
        name: folder.raw,
        why: `more than one folder in the repository would be the skill folder "${folder.raw}"; none of them is pulled`,
      });
    else {
      const plan = planOne(repo, base, folder.prefix, name.value, entries, out);
      if ('files' in plan) out.skills.push(plan as GitSkill);
      else out.refused.push(plan);
    }
  }
  return out;
}

/** Reads a planned skill's bytes again and checks each against its planned digest. */
export function readGitSkill(repo: Repo, skill: GitSkill): Map<string, Buffer> {
  const total = skill.files.reduce((sum, f) => sum + f.size, 0);
  const bytes = repo.read(
    skill.files.map((f) => skill.blobs.get(f.path)!),
    total,
  );
  const out = new Map<string, Buffer>();
  skill.files.forEach((f, i) => {
    // Security: what is written is exactly what was planned and recorded in the lock.
    if (digestOf(bytes[i]!) !== f.digest) throw new GitError(`"${f.path}" changed between planning and writing`);
    out.set(f.path, bytes[i]!);
  });
  return out;
}
