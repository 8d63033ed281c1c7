/**
 * @module Does the runner run the bytes this front shows? (docs/architecture.md §7.) The front reads
 * the skill's served files again, now, through the same shared walk and hashing the runner uses
 * (shared/skill-content.ts), and compares its digest with the one the runner bound into a preview
 * or reported in `describe`. They differ when the two processes see different copies of the skill
 * folder (another machine, another mount, a stale sync): then a person would approve — and the
 * runner would run — code the model never read. Refused `CONTENT_MISMATCH`; `skill_list` says so.
 */
import { shortDigest } from '../../shared/content-digest.js';
import { MAX_RUN_CONTENT_BYTES, readSkillContent, type SkillContent } from '../../shared/skill-content.js';
import type { SkillRecord } from '../catalog/skill.js';
import type { FrontContext } from '../context.js';

export type FrontView = { ok: true; content: SkillContent } | { ok: false; why: string };

/** The front's content digest of `record`, from the disk as it is now (not the catalog's snapshot). */
export async function frontContent(front: FrontContext, record: SkillRecord): Promise<FrontView> {
  const limits = {
    maxFiles: front.catalogLimits.maxFilesPerSkill,
    maxDirs: front.catalogLimits.maxDirsPerSkill,
    maxBytes: MAX_RUN_CONTENT_BYTES,
  };
  const read = await readSkillContent(record.name, record.realDir, limits);
  if (!read.ok) return { ok: false, why: read.why };
  // The catalog's manifest is older than the disk (a file added, removed or resized): rescan it, so
  // the read tools show what a run would bind.
  const files = read.content.files;
  if (files.length !== record.files.length || files.some((f, i) => f.path !== record.files[i]!.path || f.size !== record.files[i]!.size)) {
    await front.catalog.refresh(record.name);
  }
  return { ok: true, content: read.content };
}

/** Why the runner's content `runnerDigest` (of `runnerFiles` files) is not what this front serves, or undefined when it is. */
export function contentMismatch(name: string, view: FrontView, runnerDigest: string, runnerFiles: number): string | undefined {
  if (view.ok && view.content.digest === runnerDigest) return undefined;
  const here = view.ok ? `${shortDigest(view.content.digest)}, ${view.content.files.length} files` : `unreadable here: ${view.why}`;
  return `the runner serves other content for skill "${name}" than this server shows (runner ${shortDigest(runnerDigest)}, ${runnerFiles} files; here ${here}): the two processes see different copies of the skill folder. Give both the same folder with the same bytes; until then no script of this skill runs.`;
}
