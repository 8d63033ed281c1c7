/**
 * @module Reads every file of one planned skill with `resources/read` and checks each against
 * the plan before it is kept: the answer is the resource asked for (not a redirect to another
 * one), its bytes are as many as published, within the caps, and hash to the published digest.
 * One failure refuses the whole skill, so a half-checked copy is never written.
 */
import { createHash } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/client';
import { PULL_MAX_SKILL_BYTES, type PlannedFile } from './checks.js';
import type { RemoteSkill } from './remote.js';
import { errorText } from './error-text.js';

export class DownloadRefused extends Error {}

/** A URI in its WHATWG-normalized spelling, so `%7E` and `~` compare equal; unparseable stays as is. */
function canonical(uri: string): string {
  try {
    return new URL(uri).href;
  } catch {
    return uri;
  }
}

async function readOne(client: Client, file: PlannedFile): Promise<Buffer> {
  let result: Awaited<ReturnType<Client['readResource']>>;
  try {
    result = await client.readResource({ uri: file.uri }, { cacheMode: 'bypass' });
  } catch (error) {
    throw new DownloadRefused(`"${file.path}" could not be read: ${errorText(error)}`);
  }
  if (result.contents.length !== 1) throw new DownloadRefused(`"${file.path}" came back as ${result.contents.length} contents, not one`);
  const content = result.contents[0]!;
  // Security: an answer naming another resource (file:///etc/passwd, a neighbour skill) is a link the server wants us to follow; we do not.
  if (canonical(content.uri) !== canonical(file.uri))
    throw new DownloadRefused(
      `"${file.path}" was answered with another resource, ${JSON.stringify(content.uri)}; a read must return the file asked for`,
    );
  const bytes =
    'text' in content && typeof content.text === 'string'
      ? Buffer.from(content.text, 'utf8')
      : 'blob' in content && typeof content.blob === 'string'
        ? Buffer.from(content.blob, 'base64')
        : undefined;
  if (!bytes) throw new DownloadRefused(`"${file.path}" came back with neither text nor a blob`);
  if (bytes.length !== file.size) throw new DownloadRefused(`"${file.path}" is ${bytes.length} bytes; the server published ${file.size}`);
  const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
  // Security: the published digest is the only thing that ties these bytes to what the server listed.
  if (digest !== file.digest)
    throw new DownloadRefused(`"${file.path}" does not match its published digest (published ${file.digest}, received ${digest})`);
  return bytes;
}

export type Progress = (done: number, total: number, bytes: number) => void;

/** Every file's bytes, checked, in plan order; throws DownloadRefused with the first reason. */
export async function downloadSkill(client: Client, skill: RemoteSkill, progress?: Progress): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  let bytes = 0;
  for (const file of skill.files) {
    const data = await readOne(client, file);
    bytes += data.length;
    // Security: the declared sizes were capped before reading; this holds even if a size lied and the digest matched it.
    if (bytes > PULL_MAX_SKILL_BYTES) throw new DownloadRefused(`its files add up to more than ${PULL_MAX_SKILL_BYTES} bytes`);
    out.set(file.path, data);
    progress?.(out.size, skill.files.length, bytes);
  }
  return out;
}
