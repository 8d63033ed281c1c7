/**
 * @module Which package index an environment comes from: the operator's, always. Explicit:
 * `SKILL_MCP_PIP_INDEX_URL` (plus `SKILL_MCP_PIP_FIND_LINKS`, space-separated) and
 * `SKILL_MCP_NPM_REGISTRY` — http(s)://, file:// or (find-links) an absolute folder. Unset: pip's
 * and npm's own configuration as the installing user has it (cli/deps/tool-config.ts), never
 * an empty one. A skill never chooses: requirement lines cannot carry index options
 * (shared/requirements.ts). Both the runner and `skill-mcp deps install` read these from their
 * environment; the explicit settings are part of every environment's address.
 */
import { createHash } from 'node:crypto';
import { isAbsolute } from 'node:path';
import type { DepsKind } from './spec.js';

type Env = Readonly<Record<string, string | undefined>>;

export interface ExplicitIndex {
  /** pip: the index URL and the find-links locations; npm: the registry URL. Absent: the tool's own configuration. */
  pip?: { indexUrl: string; findLinks: string[] };
  npm?: { registry: string };
  /** Malformed values (the install refuses to start with any; the runner reports them). */
  problems: string[];
}

/** A URL pip or npm may fetch from: http(s) or file, no credentials in a form we would print. */
function checkUrl(name: string, value: string, allowFolder: boolean): string | undefined {
  if (allowFolder && isAbsolute(value)) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `${name}: ${JSON.stringify(value)} is not a URL${allowFolder ? ' or an absolute folder' : ''}`;
  }
  if (!['http:', 'https:', 'file:'].includes(url.protocol)) return `${name}: ${url.protocol} URLs are not supported (http, https or file)`;
  return undefined;
}

export function readExplicitIndex(env: Env): ExplicitIndex {
  const problems: string[] = [];
  const result: ExplicitIndex = { problems };
  const indexUrl = env['SKILL_MCP_PIP_INDEX_URL'] ?? '';
  const findLinks = (env['SKILL_MCP_PIP_FIND_LINKS'] ?? '').split(/\s+/).filter(Boolean);
  if (indexUrl !== '' || findLinks.length > 0) {
    if (indexUrl !== '') {
      const why = checkUrl('SKILL_MCP_PIP_INDEX_URL', indexUrl, false);
      if (why) problems.push(why);
    }
    for (const link of findLinks) {
      const why = checkUrl('SKILL_MCP_PIP_FIND_LINKS', link, true);
      if (why) problems.push(why);
    }
    result.pip = { indexUrl, findLinks };
  }
  const registry = env['SKILL_MCP_NPM_REGISTRY'] ?? '';
  if (registry !== '') {
    const why = checkUrl('SKILL_MCP_NPM_REGISTRY', registry, false);
    if (why) problems.push(why);
    result.npm = { registry };
  }
  return result;
}

/** The part of an environment's address that names its index: the explicit settings, or "the tool's own configuration". */
export function indexDigest(kind: DepsKind, index: ExplicitIndex): string {
  const value = kind === 'python' ? (index.pip ?? 'own-configuration') : (index.npm ?? 'own-configuration');
  return createHash('sha256')
    .update(JSON.stringify([kind, value]))
    .digest('hex');
}

/** A URL as it may be printed or recorded: user and password replaced. Security: index URLs often carry a token. */
export function redactUrl(value: string): string {
  try {
    const url = new URL(value);
    if (url.username === '' && url.password === '') return value;
    url.username = '***';
    url.password = '';
    return url.toString();
  } catch {
    return value;
  }
}
