/**
 * @module An error as an operator can act on it: its message and the chain of causes under it.
 * Node's fetch says only "fetch failed" and keeps why (a refused connection, a name that does not
 * resolve, a certificate) in `cause`; without the chain the pull's output hides the fix.
 */

const MAX_CAUSES = 4;

export function errorText(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth <= MAX_CAUSES; depth++) {
    const message = current instanceof Error ? current.message : String(current);
    if (message !== '' && !parts.some((part) => part.includes(message))) parts.push(message);
    current = current instanceof Error ? current.cause : undefined;
  }
  return parts.join(': ') || 'unknown error';
}
