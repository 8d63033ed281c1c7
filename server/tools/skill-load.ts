/**
 * @module `skill_load`: the `SKILL.md` body exactly as on disk, plus the manifest (paths, sizes).
 * Referenced files are not inlined: `skill_file` fetches them in one batched call. A body over
 * 4 MiB is cut at a character boundary and says so (`truncated`), never silently.
 */
import { SkillMcpError } from '../../shared/errors.js';
import { parseSkillMd } from '../../shared/frontmatter.js';
import { MAX_BODY_BYTES, MAX_SKILL_MD_BYTES } from '../../shared/limits.js';
import { readServedFile } from '../catalog/read.js';
import type { FrontContext } from '../context.js';

/** Reads a skill's current SKILL.md, refreshing the catalog if it changed since the scan. */
export async function loadBody(front: FrontContext, name: string): Promise<{ body: string; frontmatter: Record<string, unknown> }> {
  const record = front.requireSkill(name);
  const { bytes, truncated } = await readServedFile(record, 'SKILL.md', MAX_SKILL_MD_BYTES);
  if (truncated) throw new SkillMcpError('TOO_LARGE', `SKILL.md of "${name}" grew over ${MAX_SKILL_MD_BYTES} bytes and is not served.`);
  await front.catalog.confirmFresh(record, 'SKILL.md', bytes);
  const parsed = parseSkillMd(bytes.toString('utf8'), Number.POSITIVE_INFINITY);
  return { body: parsed.body, frontmatter: parsed.frontmatter };
}

/** The first `maxBytes` of `text`, cut at a character boundary. */
export function cutText(text: string, maxBytes: number): { text: string; truncated: boolean; bytes: number } {
  const bytes = Buffer.byteLength(text);
  if (bytes <= maxBytes) return { text, truncated: false, bytes };
  const cut = Buffer.from(text)
    .subarray(0, maxBytes)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  return { text: cut, truncated: true, bytes };
}

export async function skillLoad(front: FrontContext, name: string): Promise<Record<string, unknown>> {
  const { body } = await loadBody(front, name);
  const record = front.requireSkill(name);
  const cut = cutText(body, MAX_BODY_BYTES);
  return {
    name: record.name,
    description: record.description,
    body: cut.text,
    ...(cut.truncated
      ? { truncated: true, bodyBytes: cut.bytes, note: `the body is ${cut.bytes} bytes; the first ${MAX_BODY_BYTES} are shown` }
      : {}),
    files: record.files.map((f) => ({ path: f.path, size: f.size })),
    hint: 'Fetch the files the instructions reference with skill_file (up to 8 paths per call).',
  };
}
