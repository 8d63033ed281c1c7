/**
 * @module Finds what a server publishes and plans each skill's files, before any file is read.
 * A server with the SEP-2640 skills extension is asked with `skills/list` (and `skills/get` for a
 * named skill it does not list); any other server by its `skill://<name>/SKILL.md` resources and
 * FastMCP's `skill://<name>/_manifest`. Either way every name, path, size and digest passes
 * checks.ts; a skill with nothing to check its bytes against is refused, not fetched unchecked.
 */
import type { Client } from '@modelcontextprotocol/client';
import { SkillsClient, type Skill } from '@modelcontextprotocol/client/ext/skills';
import { z } from 'zod';
import { checkFileList, checkFilePath, checkSkillName, pathUnderBase, type PlannedFile } from './checks.js';

export type Via = 'skills-extension' | 'fastmcp-manifest' | 'git' | 'well-known-index';

export interface RemoteSkill {
  name: string;
  /** The URI of its SKILL.md, as the server names it. */
  uri: string;
  via: Via;
  files: PlannedFile[];
}

export interface Refusal {
  /** The skill's name or, when the name itself is refused, how the server spelled it. */
  name: string;
  why: string;
}

export interface Discovery {
  via: Via;
  skills: RemoteSkill[];
  refused: Refusal[];
  /**
   * Skills the server publishes from inside another published skill's folder (the SDK's
   * `loadSkills` does): not pulled as folders of their own, since a skills folder holds skills at
   * its top only; their files come with the outer skill when the server lists them there
   * (docs/nested-skills.md).
   */
  nested?: { name: string; uri: string; outer: string }[];
}

/** A skill's own name from its SKILL.md URI: the last folder of the path, decoded once. */
function nameOf(uri: string): { base: string; raw: string } | undefined {
  if (!uri.endsWith('/SKILL.md')) return undefined;
  const base = uri.slice(0, -'SKILL.md'.length);
  const rest = base.slice(0, -1);
  return { base, raw: rest.slice(rest.lastIndexOf('/') + 1) };
}

function decodedName(raw: string): ReturnType<typeof checkSkillName> {
  try {
    return checkSkillName(decodeURIComponent(raw));
  } catch {
    return { ok: false, why: `the skill name ${JSON.stringify(raw)} holds a malformed %-escape` };
  }
}

/** One SEP-2640 entry as a plan, or why it is refused. */
function planEntry(entry: Skill): RemoteSkill | Refusal {
  const at = nameOf(entry.uri);
  if (!at) return { name: entry.uri, why: `its URI ${JSON.stringify(entry.uri)} does not end in /SKILL.md` };
  const name = decodedName(at.raw);
  if (!name.ok) return { name: at.raw, why: name.why };
  if (entry.resources === 'dynamic')
    return { name: name.value, why: 'it publishes no file list or digests ("dynamic"); nothing to check its files against' };
  const files: PlannedFile[] = [];
  for (const resource of entry.resources) {
    const path = pathUnderBase(resource.uri, at.base);
    if (!path.ok) return { name: name.value, why: path.why };
    files.push({ path: path.value, uri: resource.uri, size: resource.size, digest: resource.digest });
  }
  const why = checkFileList(files);
  return why ? { name: name.value, why } : { name: name.value, uri: entry.uri, via: 'skills-extension', files };
}

/** Files a plan or a refusal where it belongs. */
function record(out: Discovery, plan: RemoteSkill | Refusal): void {
  if ('files' in plan) out.skills.push(plan);
  else out.refused.push(plan);
}

async function viaExtension(client: Client, wanted: ReadonlySet<string>): Promise<Discovery> {
  const skills = new SkillsClient(client, { skipInvalid: true });
  const listing = await skills.list();
  const out: Discovery = { via: 'skills-extension', skills: [], refused: [] };
  for (const bad of listing.invalid)
    out.refused.push({ name: bad.uri ?? `entry ${bad.index}`, why: `the server's skills/list entry is invalid: ${bad.reason}` });
  for (const entry of listing.skills) {
    record(out, planEntry(entry));
  }
  // A named skill the server serves without listing it (skills/get takes any SKILL.md URI).
  for (const name of wanted) {
    if (out.skills.some((s) => s.name === name) || out.refused.some((r) => r.name === name)) continue;
    try {
      record(out, planEntry((await skills.get(`skill://${encodeURIComponent(name)}/SKILL.md`)).skill));
    } catch {
      // Not served: reported by the caller as not found.
    }
  }
  return out;
}

const FastmcpManifestSchema = z.object({
  skill: z.string(),
  files: z.array(z.object({ path: z.string(), size: z.number(), hash: z.string() })),
});

/** Encodes each segment of a checked path for a `skill://` URI, as our own server spells them. */
function encodePath(path: string): string {
  return path
    .split('/')
    .map((s) => s.replace(/[^\w!$&'()*+,.:;=@[\]|~-]/gu, (c) => encodeURIComponent(c)))
    .join('/');
}

async function planFromManifest(client: Client, base: string, name: string): Promise<RemoteSkill | Refusal> {
  const uri = `${base}_manifest`;
  let text: string | undefined;
  try {
    const result = await client.readResource({ uri }, { cacheMode: 'bypass' });
    const content = result.contents.length === 1 ? result.contents[0] : undefined;
    text = content && 'text' in content && typeof content.text === 'string' ? content.text : undefined;
  } catch (error) {
    return {
      name,
      why: `the server has no skills extension and no FastMCP manifest at ${uri} (${error instanceof Error ? error.message : String(error)}); nothing to check its files against`,
    };
  }
  let manifest: z.infer<typeof FastmcpManifestSchema>;
  try {
    manifest = FastmcpManifestSchema.parse(JSON.parse(text ?? ''));
  } catch {
    return { name, why: `its manifest ${uri} is not FastMCP's {skill, files: [{path, size, hash}]} JSON text` };
  }
  if (manifest.skill !== name) return { name, why: `its manifest names another skill, ${JSON.stringify(manifest.skill)}` };
  const files: PlannedFile[] = [];
  for (const f of manifest.files) {
    const path = checkFilePath(f.path);
    if (!path.ok) return { name, why: path.why };
    files.push({ path: path.value, uri: `${base}${encodePath(path.value)}`, size: f.size, digest: f.hash });
  }
  const why = checkFileList(files);
  return why ? { name, why } : { name, uri: `${base}SKILL.md`, via: 'fastmcp-manifest', files };
}

async function viaResources(client: Client): Promise<Discovery> {
  const out: Discovery = { via: 'fastmcp-manifest', skills: [], refused: [] };
  const { resources } = await client.listResources(undefined, { cacheMode: 'bypass' });
  const seen = new Set<string>();
  for (const resource of resources) {
    if (!resource.uri.startsWith('skill://') || seen.has(resource.uri)) continue;
    seen.add(resource.uri);
    const at = nameOf(resource.uri);
    if (!at) continue;
    // FastMCP's own skills sit at skill://<name>/SKILL.md: one folder, which is the name.
    const name = decodedName(at.raw);
    if (!name.ok) {
      out.refused.push({ name: at.raw, why: name.why });
      continue;
    }
    if (at.base !== `skill://${at.raw}/`) {
      out.refused.push({ name: name.value, why: `its URI ${JSON.stringify(resource.uri)} is not skill://<name>/SKILL.md` });
      continue;
    }
    record(out, await planFromManifest(client, at.base, name.value));
  }
  return out;
}

/**
 * Every skill the server publishes (or only the `wanted` ones), planned. Two skills that would
 * land in one folder are both refused, never first-wins.
 */
export async function discover(client: Client, wanted: ReadonlySet<string>): Promise<Discovery> {
  const found = new SkillsClient(client).supported ? await viaExtension(client, wanted) : await viaResources(client);
  const nested = nestedIn(found.skills);
  found.skills = found.skills.filter((s) => !nested.some((n) => n.uri === s.uri));
  const count = new Map<string, number>();
  for (const s of found.skills) count.set(s.name.toLowerCase(), (count.get(s.name.toLowerCase()) ?? 0) + 1);
  const clashing = found.skills.filter((s) => count.get(s.name.toLowerCase())! > 1);
  const result: Discovery = {
    via: found.via,
    skills: found.skills.filter((s) => count.get(s.name.toLowerCase()) === 1),
    refused: [
      ...found.refused,
      ...clashing.map((s) => ({
        name: s.name,
        why: `more than one skill the server publishes would be the folder "${s.name}" (${s.uri}); none of them is pulled`,
      })),
    ],
    nested,
  };
  if (wanted.size === 0) return result;
  return {
    via: result.via,
    skills: result.skills.filter((s) => wanted.has(s.name)),
    refused: result.refused.filter((r) => wanted.has(r.name)),
    nested: nested.filter((n) => wanted.has(n.name)),
  };
}

/** The skills whose folder lies inside another listed skill's folder, each with the outermost one. */
export function nestedIn(skills: readonly RemoteSkill[]): { name: string; uri: string; outer: string }[] {
  const baseOf = (s: RemoteSkill): string => s.uri.slice(0, -'SKILL.md'.length);
  const out: { name: string; uri: string; outer: string }[] = [];
  for (const skill of skills) {
    const outer = skills
      .filter((o) => o !== skill && baseOf(skill).startsWith(baseOf(o)))
      .sort((a, b) => baseOf(a).length - baseOf(b).length)[0];
    if (outer) out.push({ name: skill.name, uri: skill.uri, outer: outer.name });
  }
  return out;
}
