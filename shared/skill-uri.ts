/**
 * @module The canonical `skill://` URI of a file. Shared because it also decides which names are
 * served at all (a name with no exact URI form is left out of the manifest by the walk), and the
 * runner must copy exactly the files the front serves.
 */

const KEEP = /[^\w!$&'()*+,.:;=@[\]|~-]/gu;

/** One path segment in the canonical percent-encoded form (also used by `skill-run://` output URIs). */
export function encodeSegment(segment: string): string {
  return segment.replace(KEEP, (char) => encodeURIComponent(char));
}

/**
 * Names the URL parser provably leaves alone: a lowercase host label (letters, digits, inner
 * hyphens) and path segments of unreserved characters only, none of them `.` or `..` (the only
 * segments it rewrites once nothing needs percent-encoding). Nearly every real skill file is
 * such a name; checking them here spares a `new URL` per file (~7 µs: ~30 ms of a 4,000-file
 * start, bench/RESULTS.md). Anything else takes the parser's word for it.
 */
const PLAIN_NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const PLAIN_PATH = /^(?!\.\.?(?:\/|$))[A-Za-z0-9_~-][A-Za-z0-9._~-]*(?:\/(?!\.\.?(?:\/|$))[A-Za-z0-9._~-]+)*$/;

/** The URI of `path` in skill `name`, or undefined when no exact canonical form exists. */
export function uriFor(name: string, path?: string): string | undefined {
  if (PLAIN_NAME.test(name) && (path === undefined || PLAIN_PATH.test(path)))
    return path === undefined ? `skill://${name}` : `skill://${name}/${path}`;
  try {
    const uri = path === undefined ? `skill://${name}` : `skill://${name}/${path.split('/').map(encodeSegment).join('/')}`;
    return new URL(uri).href === uri ? uri : undefined;
  } catch {
    return undefined;
  }
}
