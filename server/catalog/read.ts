/**
 * @module Reads one served file of a skill: both path checks (docs/architecture.md §5), then open and check what
 * was opened — a regular file whose real location is still inside the skill — so a file swapped
 * for a link or a FIFO between the check and the read is refused, not followed. Reads at most
 * `maxBytes`, so a 256 MiB file costs 1 MiB of heap, never the whole file.
 */
import { closeSync, readSync } from 'node:fs';
import { SkillMcpError } from '../../shared/errors.js';
import { checkPathString, isHiddenPath } from '../../shared/paths.js';
import { openInsideSkill } from './open-checked.js';
import type { SkillRecord } from './skill.js';

export interface ReadResult {
  bytes: Buffer;
  /** The file's size when opened. */
  size: number;
  truncated: boolean;
}

export async function readServedFile(skill: SkillRecord, path: unknown, maxBytes: number): Promise<ReadResult> {
  const check = checkPathString(path);
  if (!check.ok) throw new SkillMcpError('INVALID_PATH', `${check.why}.`);
  const rel = check.segments.join('/');
  // Security: dotfiles (.env, .git/config) never leave the server, even when named exactly.
  if (isHiddenPath(check.segments))
    throw new SkillMcpError('NOT_FOUND', `hidden files are never served; "${rel}" is not in skill "${skill.name}".`);
  if (!skill.files.some((f) => f.path === rel)) {
    throw new SkillMcpError('NOT_FOUND', `"${rel}" is not a file of skill "${skill.name}"; skill_load lists its files.`);
  }
  const { fd, size } = openInsideSkill(skill.realDir, rel);
  try {
    const want = Math.min(size, maxBytes);
    const bytes = Buffer.allocUnsafe(want);
    let got = 0;
    while (got < want) {
      const read = readSync(fd, bytes, got, want - got, got);
      if (read === 0) break;
      got += read;
    }
    return { bytes: got === want ? bytes : bytes.subarray(0, got), size, truncated: size > maxBytes };
  } finally {
    closeSync(fd);
  }
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The text of `bytes` when they are UTF-8 that round-trips exactly, else undefined (serve base64). */
export function exactText(bytes: Uint8Array): string | undefined {
  try {
    return STRICT_UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}

const MEDIA_TYPES: Record<string, string> = {
  md: 'text/markdown',
  markdown: 'text/markdown',
  txt: 'text/plain',
  json: 'application/json',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  js: 'text/javascript',
  mjs: 'text/javascript',
  cjs: 'text/javascript',
  ts: 'text/x-typescript',
  py: 'text/x-python',
  sh: 'text/x-shellscript',
  html: 'text/html',
  htm: 'text/html',
  css: 'text/css',
  csv: 'text/csv',
  xml: 'application/xml',
  svg: 'image/svg+xml',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  pdf: 'application/pdf',
  zip: 'application/zip',
  ttf: 'font/ttf',
  otf: 'font/otf',
  woff: 'font/woff',
  woff2: 'font/woff2',
  toml: 'application/toml',
  xsd: 'application/xml',
};

export function mediaTypeFor(path: string, isText: boolean): string {
  const dot = path.lastIndexOf('.');
  const ext = dot > path.lastIndexOf('/') ? path.slice(dot + 1).toLowerCase() : '';
  return MEDIA_TYPES[ext] ?? (isText ? 'text/plain' : 'application/octet-stream');
}
