/**
 * @module The authoring rules over one skill's files: SKILL.md (read the way both processes read
 * it) and every file the server would serve (read through the front's own checked open), so the
 * rules see exactly the bytes a client would get. Binary and oversized files are counted, not read.
 */
import { closeSync, lstatSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { isBytecode } from '../../shared/bytecode.js';
import { INTERPRETERS } from '../../shared/declaration.js';
import type { DiscoveredSkill } from '../../shared/discover.js';
import { FrontmatterError, parseSkillMd } from '../../shared/frontmatter.js';
import { MAX_SKILL_MD_BYTES, type CatalogLimits } from '../../shared/limits.js';
import { readSkillMdFile } from '../../shared/skill-md.js';
import { openInsideSkill } from '../../server/catalog/open-checked.js';
import { exactText } from '../../server/catalog/read.js';
import type { SkillRecord } from '../../server/catalog/skill.js';
import { walkSkill } from '../../server/catalog/walk.js';
import { adviseSkill } from './advice.js';
import { findCredentials } from './credentials.js';
import { capHits, type Hit } from './finding.js';
import { keyLine, mentionLine } from './frontmatter-lines.js';
import { findHiddenInstructions } from './hidden-text.js';
import { findDeadLinks } from './links.js';
import { findHiddenUnicode } from './unicode.js';

/** Files larger than this are not read as text (SKILL.md's own cap: nothing text-like is larger). */
const MAX_SCAN_BYTES = MAX_SKILL_MD_BYTES;

export interface SkillFileResult {
  /** SKILL.md's text, when it could be read. */
  skillMd?: string;
  /** Hits by path inside the skill. */
  hits: Map<string, Hit[]>;
  filesScanned: number;
  filesNotScanned: number;
}

/** The served file's text, or undefined when it is binary, not UTF-8, too large or unreadable. */
function readText(realDir: string, path: string): string | undefined {
  let opened: { fd: number; size: number };
  try {
    opened = openInsideSkill(realDir, path);
  } catch {
    return undefined; // the catalog reports what it cannot serve
  }
  try {
    if (opened.size > MAX_SCAN_BYTES) return undefined;
    const bytes = Buffer.allocUnsafe(opened.size);
    let got = 0;
    while (got < bytes.length) {
      const read = readSync(opened.fd, bytes, got, bytes.length - got, got);
      if (read === 0) break;
      got += read;
    }
    const body = bytes.subarray(0, got);
    return body.includes(0) ? undefined : exactText(body);
  } finally {
    closeSync(opened.fd);
  }
}

/** Rules that read SKILL.md beyond its text: links, hidden blocks, scripts, advice. */
function skillMdHits(text: string, record: SkillRecord | undefined, limits: CatalogLimits): Hit[] {
  const hits: Hit[] = [];
  let bodyOffset: number;
  try {
    bodyOffset = text.length - parseSkillMd(text, limits.maxFrontmatterBytes).body.length;
  } catch (error) {
    if (error instanceof FrontmatterError) return hits; // the catalog reports it; the skill is not served
    throw error;
  }
  hits.push(...findHiddenInstructions(text, bodyOffset));
  if (!record) return hits;
  const exists = (path: string): boolean => lstatSync(join(record.realDir, ...path.split('/')), { throwIfNoEntry: false }) !== undefined;
  hits.push(
    ...findDeadLinks(
      text,
      bodyOffset,
      record.files.map((f) => f.path),
      exists,
    ),
  );
  for (const declared of record.declaration?.run ?? []) {
    // The same test skill_list applies: an interpreter outside the fixed set never runs.
    if ((INTERPRETERS as readonly string[]).includes(declared.interpreter)) continue;
    const line = mentionLine(text, declared.script);
    hits.push({
      ruleId: 'script/interpreter',
      message: `"${declared.script}" declares interpreter "${declared.interpreter}", which is not one of ${INTERPRETERS.join(', ')}; this script never runs`,
      ...(line !== undefined ? { line, column: 1 } : {}),
    });
  }
  const descriptionLine = keyLine(text, 'description');
  hits.push(
    ...adviseSkill({
      text,
      ...(record.description !== '' ? { description: record.description } : {}),
      ...(descriptionLine !== undefined ? { descriptionLine } : {}),
      frontmatter: record.frontmatter,
      hasFrontmatterDeclaration: keyLine(text, 'mcp-host') !== undefined,
      lineOf: (key) => keyLine(text, key),
    }),
  );
  return hits;
}

export async function checkSkillFiles(
  found: DiscoveredSkill,
  record: SkillRecord | undefined,
  limits: CatalogLimits,
): Promise<SkillFileResult> {
  const hits = new Map<string, Hit[]>();
  let filesScanned = 0;
  let filesNotScanned = 0;
  const md = readSkillMdFile(found.realDir);
  const skillMd = md.ok ? md.text : undefined;
  if (skillMd !== undefined) {
    filesScanned++;
    hits.set('SKILL.md', capHits([...findHiddenUnicode(skillMd), ...findCredentials(skillMd), ...skillMdHits(skillMd, record, limits)]));
  }
  // A skill the catalog refused has no record; its files are still read, as an author would want.
  const files =
    record?.files ??
    (await walkSkill(found.name, found.realDir, found.displayPath, { maxFiles: limits.maxFilesPerSkill, maxDirs: limits.maxDirsPerSkill }))
      .files;
  for (const file of files) {
    if (file.path === 'SKILL.md') continue;
    if (isBytecode(file.path)) {
      // Compiled Python is code no reviewer can read; it is never copied into a run (shared/bytecode.ts).
      hits.set(file.path, [
        {
          ruleId: 'hidden/bytecode',
          message:
            'compiled Python is shipped with the skill: it is code no reviewer can read, and python would run it instead of the source beside it. skill-mcp never copies it into a run; remove it (and add __pycache__/ and *.pyc to the files you publish from)',
        },
      ]);
      filesNotScanned++;
      continue;
    }
    const text = readText(found.realDir, file.path);
    if (text === undefined) {
      filesNotScanned++;
      continue;
    }
    filesScanned++;
    const fileHits = capHits([...findHiddenUnicode(text), ...findCredentials(text)]);
    if (fileHits.length > 0) hits.set(file.path, fileHits);
  }
  return { ...(skillMd !== undefined ? { skillMd } : {}), hits, filesScanned, filesNotScanned };
}
