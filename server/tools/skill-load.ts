/**
 * @module `skill_load`: the `SKILL.md` body exactly as on disk, plus the manifest (paths, sizes).
 * Referenced files are not inlined: `skill_file` fetches them in one batched call.
 */
import { SkillMcpError } from '../../shared/errors.js';
import { parseSkillMd } from '../../shared/frontmatter.js';
import { PUBLISH_MAX_BYTES } from '../../shared/limits.js';
import { readServedFile } from '../catalog/read.js';
import type { FrontContext } from '../context.js';

/** Reads a skill's current SKILL.md, refreshing the catalog if it changed since the scan. */
export async function loadBody(front: FrontContext, name: string): Promise<{ body: string; frontmatter: Record<string, unknown> }> {
  const record = front.requireSkill(name);
  const { bytes, truncated } = await readServedFile(record, 'SKILL.md', PUBLISH_MAX_BYTES);
  if (truncated) throw new SkillMcpError('TOO_LARGE', `SKILL.md of "${name}" is larger than 16 MiB and is not served.`);
  await front.catalog.confirmFresh(record, 'SKILL.md', bytes);
  const parsed = parseSkillMd(bytes.toString('utf8'), Number.POSITIVE_INFINITY);
  return { body: parsed.body, frontmatter: parsed.frontmatter };
}

export async function skillLoad(front: FrontContext, name: string): Promise<Record<string, unknown>> {
  const { body } = await loadBody(front, name);
  const record = front.requireSkill(name);
  return {
    name: record.name,
    description: record.description,
    body,
    files: record.files.map((f) => ({ path: f.path, size: f.size })),
    hint: 'Fetch the files the instructions reference with skill_file (up to 8 paths per call).',
  };
}
