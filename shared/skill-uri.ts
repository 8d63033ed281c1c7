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

/** The URI of `path` in skill `name`, or undefined when no exact canonical form exists. */
export function uriFor(name: string, path?: string): string | undefined {
  try {
    const uri = path === undefined ? `skill://${name}` : `skill://${name}/${path.split('/').map(encodeSegment).join('/')}`;
    return new URL(uri).href === uri ? uri : undefined;
  } catch {
    return undefined;
  }
}
