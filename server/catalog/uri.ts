/**
 * @module `skill://` URIs. One canonical string per file (verifiers compare exact strings): each
 * path segment percent-encoded where a WHATWG URL would, and the result must round-trip through
 * `new URL(...)` unchanged. Parsing decodes segments once and hands them to the path rules.
 */

export { uriFor } from '../../shared/skill-uri.js';

/** Splits a `skill://name/a/b` URI into the skill name and the decoded relative path ('' = root). */
export function parseSkillUri(uri: string): { name: string; path: string } | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'skill:' || url.search !== '' || url.hash !== '' || url.username !== '' || url.port !== '') return undefined;
  const raw = url.pathname.replace(/^\//, '');
  try {
    const path =
      raw === ''
        ? ''
        : raw
            .split('/')
            .map((s) => decodeURIComponent(s))
            .join('/');
    return { name: url.hostname, path };
  } catch {
    return undefined;
  }
}
