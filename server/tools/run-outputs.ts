/**
 * @module The output files of a run as a tool result carries them (docs/architecture.md §8, "A run's workspace"): the
 * structured `files` list (path, size, sha256, and `omitted` with the reason for any file whose
 * bytes did not come back), and each carried file as an embedded resource
 * `skill-run://<runId>/<path>` — text when it is readable UTF-8, else a base64 blob.
 *
 * The scheme is not `skill://`: that one names a served skill's files, readable again at any time
 * with `resources/read`; a run's outputs exist only in this result (the workspace is gone once it
 * is returned), so they get a name of their own that no client will try to read back. Path
 * segments are percent-encoded as in `skill://` (shared/skill-uri.ts).
 */
import type { EmbeddedResource } from '@modelcontextprotocol/server';
import { mediaTypeFor } from '../catalog/read.js';
import type { RunResult } from '../../shared/protocol.js';
import { encodeSegment } from '../../shared/skill-uri.js';
import { readableText } from './encoding.js';

export type OutputEntry = { path: string; size: number; sha256?: string; omitted?: string };

export function outputUri(runId: string, path: string): string {
  return `skill-run://${runId}/${path.split('/').map(encodeSegment).join('/')}`;
}

/** The listed files (never their bytes) and one resource item per file carried. */
export function outputContent(result: RunResult): { files: OutputEntry[]; resources: EmbeddedResource[] } {
  const files: OutputEntry[] = [];
  const resources: EmbeddedResource[] = [];
  for (const file of result.files ?? []) {
    files.push({
      path: file.path,
      size: file.size,
      ...(file.sha256 ? { sha256: file.sha256 } : {}),
      ...(file.omitted ? { omitted: file.omitted } : {}),
    });
    if (file.bytes === undefined) continue;
    const uri = outputUri(result.runId, file.path);
    const text = readableText(file.bytes);
    resources.push({
      type: 'resource',
      resource:
        text !== undefined
          ? { uri, mimeType: mediaTypeFor(file.path, true), text }
          : { uri, mimeType: mediaTypeFor(file.path, false), blob: Buffer.from(file.bytes).toString('base64') },
    });
  }
  return { files, resources };
}
