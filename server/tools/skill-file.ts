/**
 * @module `skill_file`: a batch of a skill's files, one result per path in request order. Limits
 * bound the front's heap (docs/architecture.md §1): 8 paths, 1 MiB per entry (then `truncated: true`), 4 MiB per
 * call summed from file sizes before any byte is read, so the answer never depends on path order.
 * One bad path fails only its own entry.
 */
import { SkillMcpError, isSkillMcpError } from '../../shared/errors.js';
import { MAX_CALL_BYTES, MAX_ENTRY_BYTES, MAX_PATHS_PER_CALL } from '../../shared/limits.js';
import { checkPathString } from '../../shared/paths.js';
import { mediaTypeFor, readServedFile } from '../catalog/read.js';
import { readablePrefix, readableText } from './encoding.js';
import type { FrontContext } from '../context.js';

export async function skillFile(front: FrontContext, name: string, paths: string[]): Promise<Record<string, unknown>> {
  const record = front.requireSkill(name);
  if (paths.length === 0) throw new SkillMcpError('BATCH_LIMIT', 'paths is empty; name 1 to 8 files (skill_load lists them).');
  if (paths.length > MAX_PATHS_PER_CALL) {
    throw new SkillMcpError('BATCH_LIMIT', `${paths.length} paths in one call; at most ${MAX_PATHS_PER_CALL}. Split the batch.`);
  }
  // Decide the 4 MiB budget from the manifest sizes, before reading any byte.
  const sizes = paths.map((p) => {
    const check = checkPathString(p);
    return check.ok ? (record.files.find((f) => f.path === check.segments.join('/'))?.size ?? 0) : 0;
  });
  const charged = sizes.reduce((sum, size) => sum + Math.min(size, MAX_ENTRY_BYTES), 0);
  if (charged > MAX_CALL_BYTES) {
    const list = paths.map((p, i) => `${p} (${sizes[i]} bytes)`).join(', ');
    throw new SkillMcpError(
      'BATCH_LIMIT',
      `these files add up to ${charged} bytes, over the ${MAX_CALL_BYTES}-byte limit per call (each counts at most ${MAX_ENTRY_BYTES}): ${list}. Request fewer files per call.`,
    );
  }
  // Clear the garbage of earlier batches before making this one's (peak RSS stays flat).
  if (charged > MAX_ENTRY_BYTES) front.collectGarbage();
  const files = await Promise.all(
    paths.map(async (path) => {
      try {
        const { bytes, size, truncated } = await readServedFile(record, path, MAX_ENTRY_BYTES);
        if (!truncated) await front.catalog.confirmFresh(record, path, bytes);
        const text = truncated ? readablePrefix(bytes) : readableText(bytes);
        const mediaType = mediaTypeFor(path, text !== undefined);
        const body = text !== undefined ? { text } : { base64: bytes.toString('base64') };
        return {
          path,
          mediaType,
          size,
          truncated,
          ...(truncated ? { returnedBytes: text !== undefined ? Buffer.byteLength(text) : bytes.length } : {}),
          ...body,
        };
      } catch (error) {
        if (!isSkillMcpError(error)) throw error;
        await front.catalog.confirmGone(record, path);
        return { path, error: { code: error.code, message: error.message } };
      }
    }),
  );
  return { name: record.name, files };
}
