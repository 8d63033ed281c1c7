/**
 * @module `SKILL_MCP_PULL_ALLOW`: the sources a pull may use, comma-separated. An entry with
 * `://` is a URL prefix (`https://github.com/anthropics/`, `file:///srv/repos/`), matched on the
 * URL without credentials and only at a `/` boundary; any other entry is a host name, matched
 * exactly (case-insensitive) against the URL's host. Unset or empty: any source. It applies to
 * `--url` and `--git`; a command after `--` is the person's own command line and is not checked.
 * Pure.
 */

/** Why `url` (already stripped of credentials) is not allowed by `allow`, or undefined if it is. */
export function notAllowed(url: string, allow: string | undefined): string | undefined {
  const entries = (allow ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (entries.length === 0) return undefined;
  const parsed = new URL(url);
  for (const entry of entries) {
    if (entry.includes('://')) {
      const prefix = entry.endsWith('/') ? entry : `${entry}/`;
      // Security: a prefix matches at a "/" only, so https://host/org does not allow https://host/org-evil.
      if (url === entry || `${url}/` === prefix || url.startsWith(prefix)) return undefined;
    } else if (parsed.hostname.toLowerCase() === entry.toLowerCase()) {
      return undefined;
    }
  }
  return `${url} is not allowed by SKILL_MCP_PULL_ALLOW (${entries.join(', ')}); add its host or a URL prefix there to pull from it`;
}
