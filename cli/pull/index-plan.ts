/**
 * @module Reads an Agent Skills discovery index (`/.well-known/agent-skills/index.json`, the
 * Cloudflare-drafted "Agent Skills Discovery via Well-Known URIs", v0.2.0) and fetches and checks
 * one skill of it. Two shapes of v0.2.0 are accepted (docs/pull-sources.md says exactly which):
 *
 * - `$schema: https://schemas.agentskills.io/discovery/0.2.0/schema.json`, each skill
 *   `{name, type: "skill-md" | "archive", description, url, digest}`, the digest being the sha256
 *   of the artifact at `url` (a SKILL.md, or a `.tar.gz` or `.zip` archive);
 * - the earlier draft's `version: "0.2.0"`, each skill `{name, description, digest, files:
 *   [{path, digest}], package?: {url, digest}}`: every file fetched from `<name>/<path>` beside
 *   the index (or the package unpacked) and checked, and the skill-level digest recomputed.
 *
 * An index without digests (v0.1.0), or of a schema we do not know, is refused whole. Every name
 * and path passes checks.ts, as for the other sources.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { DIGEST, PULL_MAX_FILES, PULL_MAX_SKILL_BYTES, checkFileList, checkFilePath, checkSkillName, type PlannedFile } from './checks.js';
import { FetchRefused, getChecked, shownUrl } from './http-get.js';
import { ArchiveRefused, type ArchiveEntry, gunzipCapped, readTar } from './tar.js';
import { readZip } from './zip.js';
import { checkPathString, isHiddenPath } from '../../shared/paths.js';
import type { Refusal } from './remote.js';

export const SCHEMA_0_2_0 = 'https://schemas.agentskills.io/discovery/0.2.0/schema.json';
/** An index larger than this is refused: thousands of entries fit in far less. */
export const MAX_INDEX_BYTES = 4 * 1024 * 1024;
/** The tar stream of a 16 MiB skill: its bytes plus a header and padding per file, and the end blocks
 * (also the cap on what a zip may unpack to; its headers are not in its output, so this is looser). */
const MAX_TAR_BYTES = PULL_MAX_SKILL_BYTES + (PULL_MAX_FILES * 4 + 64) * 1024;
/** Entries a zip may list: the files a skill may have, its folders, and the dot-files skipped. */
const MAX_ZIP_ENTRIES = PULL_MAX_FILES * 4;

export class IndexRefused extends Error {}

const Digest = z.string().regex(DIGEST, 'a digest must be sha256: and 64 lowercase hex digits');

const ArtifactEntry = z.object({ name: z.string(), type: z.string(), description: z.string().optional(), url: z.string(), digest: Digest });
const ArtifactIndex = z.object({ $schema: z.literal(SCHEMA_0_2_0), skills: z.array(z.unknown()) });
const FilesEntry = z.object({
  name: z.string(),
  description: z.string().optional(),
  digest: Digest,
  files: z.array(z.object({ path: z.string(), digest: Digest })).min(1),
  package: z.object({ url: z.string(), digest: Digest }).optional(),
});
const FilesIndex = z.object({ version: z.literal('0.2.0'), skills: z.array(z.unknown()) });

/** One skill as the index describes it, its URLs resolved against the index URL. */
export type IndexSkill =
  | { name: string; form: 'skill-md' | 'archive'; url: URL; digest: string }
  | {
      name: string;
      form: 'files';
      files: { path: string; digest: string }[];
      digest: string;
      base: URL;
      package?: { url: URL; digest: string };
    };

export interface ParsedIndex {
  skills: IndexSkill[];
  refused: Refusal[];
}

const issue = (error: z.ZodError): string => error.issues.map((i) => `${i.path.join('.') || 'entry'}: ${i.message}`).join('; ');

/** The entries of an index, or IndexRefused for the whole of it. */
export function parseIndex(text: string, indexUrl: URL): ParsedIndex {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new IndexRefused(`${shownUrl(indexUrl)} is not JSON`);
  }
  const top = json !== null && typeof json === 'object' ? (json as Record<string, unknown>) : {};
  const out: ParsedIndex = { skills: [], refused: [] };
  const named = (entry: unknown, i: number): string =>
    entry !== null && typeof entry === 'object' && typeof (entry as { name?: unknown }).name === 'string'
      ? (entry as { name: string }).name
      : `entry ${i}`;
  const resolve = (url: string): URL | undefined => {
    try {
      return new URL(url, indexUrl);
    } catch {
      return undefined;
    }
  };
  if ('$schema' in top) {
    const index = ArtifactIndex.safeParse(top);
    if (!index.success)
      throw new IndexRefused(
        `${shownUrl(indexUrl)} names the schema ${JSON.stringify(top['$schema'])}, which this pull does not know (it reads ${SCHEMA_0_2_0})`,
      );
    for (const [i, raw] of index.data.skills.entries()) {
      const entry = ArtifactEntry.safeParse(raw);
      if (!entry.success) {
        out.refused.push({ name: named(raw, i), why: `its index entry is invalid: ${issue(entry.error)}` });
        continue;
      }
      const { name, type, url, digest } = entry.data;
      if (type !== 'skill-md' && type !== 'archive') {
        out.refused.push({ name, why: `its type ${JSON.stringify(type)} is not skill-md or archive; skipped` });
        continue;
      }
      const at = resolve(url);
      if (!at) {
        out.refused.push({ name, why: `its url ${JSON.stringify(url)} is not a URL` });
        continue;
      }
      out.skills.push({ name, form: type, url: at, digest });
    }
    return out;
  }
  if ('version' in top) {
    const index = FilesIndex.safeParse(top);
    if (!index.success)
      throw new IndexRefused(
        `${shownUrl(indexUrl)} has version ${JSON.stringify(top['version'])}; this pull reads version "0.2.0" and $schema ${SCHEMA_0_2_0}`,
      );
    for (const [i, raw] of index.data.skills.entries()) {
      const entry = FilesEntry.safeParse(raw);
      if (!entry.success) {
        out.refused.push({ name: named(raw, i), why: `its index entry is invalid: ${issue(entry.error)}` });
        continue;
      }
      const { name, files, digest } = entry.data;
      const base = resolve(`${encodeURIComponent(name)}/`);
      const pkg = entry.data.package ? resolve(entry.data.package.url) : undefined;
      if (!base || (entry.data.package && !pkg)) {
        out.refused.push({ name, why: 'its URLs cannot be resolved' });
        continue;
      }
      out.skills.push({
        name,
        form: 'files',
        files,
        digest,
        base,
        ...(pkg ? { package: { url: pkg, digest: entry.data.package!.digest } } : {}),
      });
    }
    return out;
  }
  // Security: a v0.1.0 index lists paths without digests: nothing to check the bytes against.
  throw new IndexRefused(
    `${shownUrl(indexUrl)} has neither $schema nor version: a v0.1.0 index, which publishes no digests; nothing to check its files against`,
  );
}

export const sha256 = (bytes: Uint8Array): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

/** The draft's skill-level digest: sha256 over `path\0hex\n` lines sorted by path (byte order). */
export function skillLevelDigest(files: readonly { path: string; digest: string }[]): string {
  const sorted = [...files].sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
  return sha256(Buffer.from(sorted.map((f) => `${f.path}\0${f.digest.slice('sha256:'.length)}\n`).join('')));
}

export interface FetchedSkill {
  name: string;
  files: Map<string, Buffer>;
  planned: PlannedFile[];
  /** Files of the artifact not written (dot-files), each with why. */
  skipped: { path: string; why: string }[];
}

function verified(bytes: Buffer, digest: string, what: string): void {
  const got = sha256(bytes);
  // Security: the index's digest is the only thing tying these bytes to what the publisher listed.
  if (got !== digest) throw new FetchRefused(`${what} does not match its digest in the index (published ${digest}, received ${got})`);
}

/** Archive entries as the skill's files: the same path rules as every source; dot-files reported, not written. */
function fromArchive(entries: readonly ArchiveEntry[], out: FetchedSkill): void {
  for (const entry of entries) {
    const plain = checkPathString(entry.path);
    if (plain.ok && isHiddenPath(plain.segments)) {
      if (entry.kind === 'file') out.skipped.push({ path: entry.path, why: 'a dot-file; hidden files are never pulled' });
      continue;
    }
    const path = checkFilePath(entry.path);
    if (!path.ok) throw new FetchRefused(`the archive's ${path.why}`);
    if (entry.kind === 'file') out.files.set(path.value, entry.bytes);
  }
}

/**
 * Which reader an archive gets, from its first bytes: gzip (`1f 8b`, then tar) or zip (`PK\3\4`,
 * or `PK\5\6` for an empty one). Not from its name or Content-Type, which the server chooses and
 * the digest does not cover; the zip reader refuses prepended data, so no file is both.
 */
function archiveKind(bytes: Buffer): 'tar.gz' | 'zip' | undefined {
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) return 'tar.gz';
  if (bytes.length >= 4 && bytes.readUInt16LE(0) === 0x4b50 && (bytes.readUInt16LE(2) === 0x0403 || bytes.readUInt16LE(2) === 0x0605))
    return 'zip';
  return undefined;
}

async function unpack(url: URL, digest: string, fromLoopback: boolean, out: FetchedSkill): Promise<void> {
  const got = await getChecked(url, PULL_MAX_SKILL_BYTES, fromLoopback);
  verified(got.bytes, digest, `the archive ${shownUrl(url)}`);
  const kind = archiveKind(got.bytes);
  if (!kind)
    throw new FetchRefused(
      `the archive ${shownUrl(url)} is neither a .tar.gz nor a .zip (it starts with neither the gzip nor the zip signature)`,
    );
  try {
    fromArchive(
      kind === 'zip'
        ? readZip(got.bytes, { maxBytes: MAX_TAR_BYTES, maxEntries: MAX_ZIP_ENTRIES })
        : readTar(gunzipCapped(got.bytes, MAX_TAR_BYTES)),
      out,
    );
  } catch (error) {
    if (error instanceof ArchiveRefused) throw new FetchRefused(`the ${kind} archive ${shownUrl(url)} is refused: ${error.message}`);
    throw error;
  }
}

/**
 * Fetches one skill and checks every digest: the artifact's, each file's, the skill-level one.
 * Throws FetchRefused with the first reason; nothing is kept from a skill that fails.
 */
export async function fetchIndexSkill(skill: IndexSkill, fromLoopback: boolean): Promise<FetchedSkill> {
  const name = checkSkillName(skill.name);
  if (!name.ok) throw new FetchRefused(name.why);
  const out: FetchedSkill = { name: name.value, files: new Map(), planned: [], skipped: [] };
  if (skill.form !== 'files') {
    if (skill.form === 'archive') await unpack(skill.url, skill.digest, fromLoopback, out);
    else {
      const got = await getChecked(skill.url, PULL_MAX_SKILL_BYTES, fromLoopback);
      verified(got.bytes, skill.digest, `SKILL.md (${shownUrl(skill.url)})`);
      out.files.set('SKILL.md', got.bytes);
    }
  } else {
    const listed = new Map<string, string>();
    for (const file of skill.files) {
      const path = checkFilePath(file.path);
      if (!path.ok) throw new FetchRefused(path.why);
      if (listed.has(path.value)) throw new FetchRefused(`"${file.path}" is listed twice`);
      listed.set(path.value, file.digest);
    }
    if (listed.size > PULL_MAX_FILES) throw new FetchRefused(`it lists ${listed.size} files, over the ${PULL_MAX_FILES} a pull accepts`);
    // The listed digests must add up to the skill's own before any byte is fetched.
    const level = skillLevelDigest(skill.files);
    if (level !== skill.digest)
      throw new FetchRefused(`its files' digests give the skill digest ${level}, not the ${skill.digest} the index publishes`);
    if (skill.package) {
      await unpack(skill.package.url, skill.package.digest, fromLoopback, out);
      const extra = [...out.files.keys()].find((p) => !listed.has(p));
      if (extra !== undefined) throw new FetchRefused(`the package holds "${extra}", which the index does not list`);
    } else {
      let total = 0;
      for (const path of listed.keys()) {
        const url = new URL(path.split('/').map(encodeURIComponent).join('/'), skill.base);
        const got = await getChecked(url, PULL_MAX_SKILL_BYTES - total, fromLoopback);
        total += got.bytes.length;
        out.files.set(path, got.bytes);
      }
    }
    for (const [path, digest] of listed) {
      const bytes = out.files.get(path);
      if (!bytes) throw new FetchRefused(`"${path}" is listed in the index but not in its package`);
      verified(bytes, digest, `"${path}"`);
    }
  }
  let total = 0;
  for (const [path, bytes] of out.files) {
    total += bytes.length;
    out.planned.push({ path, uri: path, size: bytes.length, digest: sha256(bytes) });
  }
  out.planned.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  if (total > PULL_MAX_SKILL_BYTES) throw new FetchRefused(`its files add up to more than ${PULL_MAX_SKILL_BYTES} bytes`);
  const why = checkFileList(out.planned);
  if (why) throw new FetchRefused(why);
  return out;
}
