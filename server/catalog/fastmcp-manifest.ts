/**
 * @module FastMCP's skill manifest, `skill://<name>/_manifest`: the file list FastMCP's client
 * utilities (`fastmcp.utilities.skills`: `get_skill_manifest`, `download_skill`, `sync_skills`)
 * read before they fetch a skill's files. Its shape is the one FastMCP 4.0's own skill provider
 * writes — `{"skill": name, "files": [{"path", "size", "hash"}]}`, JSON text — and every `hash`
 * is the SEP-2640 digest of the same file (`sha256:<hex>`), taken from the skill's entry, so the
 * two views of a skill can never disagree.
 *
 * It is read by URI only: not in the SEP-2640 entry (it is not a file of the skill, and a strict
 * host would copy it into the skill's folder) and not in `resources/list` (FastMCP's client never
 * looks it up there; a host showing that list would offer a JSON listing per skill as context).
 */
import type { Skill } from '@modelcontextprotocol/server/ext/skills';
import type { FileRecord } from './walk.js';

/** The path FastMCP reserves in every skill. A skill holding it is not published (skill.ts). */
export const FASTMCP_MANIFEST_PATH = '_manifest';

export interface FastmcpManifest {
  skill: string;
  files: { path: string; size: number; hash: string }[];
}

/**
 * The manifest of a skill from its walked files and its entry (whose resources are built from the
 * same files, in the same order: catalog.ts).
 */
export function fastmcpManifest(name: string, files: readonly FileRecord[], entry: Skill): FastmcpManifest {
  if (entry.resources === 'dynamic' || entry.resources.length !== files.length) {
    throw new Error(`the entry of skill "${name}" does not list its ${files.length} files`);
  }
  const resources = entry.resources;
  return {
    skill: name,
    files: files.map((file, i) => ({ path: file.path, size: resources[i]!.size, hash: resources[i]!.digest })),
  };
}

/** Whether a walked path would be shadowed by (or would shadow) the manifest's URI. */
export function holdsManifestPath(files: readonly FileRecord[]): boolean {
  return files.some((f) => f.path === FASTMCP_MANIFEST_PATH || f.path.startsWith(`${FASTMCP_MANIFEST_PATH}/`));
}
