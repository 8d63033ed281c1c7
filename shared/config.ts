/**
 * @module Where the skills are (docs/architecture.md §2): `MCP_SKILLS_PATH` (host-injected) wins, then
 * `SKILLS_DIR`, then the package's bundled `skills/`. Both processes read it the same way.
 */
import { resolve } from 'node:path';

export function skillRoots(env: Readonly<Record<string, string | undefined>>, bundledDir: string): string[] {
  const raw = (env['MCP_SKILLS_PATH'] ?? '') !== '' ? env['MCP_SKILLS_PATH']! : (env['SKILLS_DIR'] ?? '');
  const roots = raw.split(':').filter((part) => part !== '');
  return roots.length > 0 ? roots.map((root) => resolve(root)) : [bundledDir];
}
