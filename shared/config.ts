/**
 * @module Where the skills are (docs/architecture.md §2): `MCP_SKILLS_PATH` (host-injected) wins, then
 * `SKILLS_DIR`, then the package's bundled `skills/`. Both processes read it the same way.
 */
import { homedir } from 'node:os';
import { resolve } from 'node:path';

/**
 * `~` and `~/x` name the home folder, as a shell would have expanded them: a client's JSON
 * configuration (Claude Desktop, Inspector) passes the value to us unexpanded. `~user` is left as
 * it is (it would need the password database) and so names a folder that does not exist.
 */
function expandHome(root: string, env: Readonly<Record<string, string | undefined>>): string {
  if (root !== '~' && !root.startsWith('~/')) return root;
  const home = env['HOME'] || homedir();
  return home + root.slice(1);
}

export function skillRoots(env: Readonly<Record<string, string | undefined>>, bundledDir: string): string[] {
  const raw = (env['MCP_SKILLS_PATH'] ?? '') !== '' ? env['MCP_SKILLS_PATH']! : (env['SKILLS_DIR'] ?? '');
  const roots = raw.split(':').filter((part) => part !== '');
  return roots.length > 0 ? roots.map((root) => resolve(expandHome(root, env))) : [bundledDir];
}
