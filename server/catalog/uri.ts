/**
 * @module `skill://` URIs. One canonical string per file (verifiers compare exact strings): each
 * path segment percent-encoded where a WHATWG URL would, and the result must round-trip through
 * `new URL(...)` unchanged. Parsing decodes segments once and hands them to the path rules.
 */

const KEEP = /[^\w!$&'()*+,.:;=@[\]|~-]/gu;

function encodeSegment(segment: string): string {
  return segment.replace(KEEP, (char) => encodeURIComponent(char));
}

/** The URI of `path` in skill `name`, or undefined when no exact canonical form exists. */
export function uriFor(name: string, path?: string): string | undefined {
  try {
    const uri = path === undefined ? `skill://${name}` : `skill://${name}/${path.split('/').map(encodeSegment).join('/')}`;
    return new URL(uri).href === uri ? uri : undefined;
  } catch {
    return undefined;
  }
}

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
    const path = raw === '' ? '' : raw.split('/').map((s) => decodeURIComponent(s)).join('/');
    return { name: url.hostname, path };
  } catch {
    return undefined;
  }
}
