/**
 * @module The programs a runner starts under other uids besides scripts — a run's network helper
 * (dist/skill-mcp-helper.cjs), its outputs walker (dist/skill-mcp-walk.cjs) and the Redis link
 * (dist/skill-mcp-redis.cjs) — copied at start
 * into a folder of the scratch directory that every uid may read (0755 and 0644, owned by the
 * runner). The package may sit where those uids cannot reach (root's 0700 home), and a runner runs
 * the programs it started with even if the package is replaced under it. The folder is named like
 * this runner's run folders (runner/workspace/scratch.ts), so the next start's sweep removes a dead
 * runner's.
 */
import { chmodSync, copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export const BUNDLE_NAMES = ['skill-mcp-helper.cjs', 'skill-mcp-walk.cjs', 'skill-mcp-redis.cjs'] as const;
export type BundleName = (typeof BUNDLE_NAMES)[number];

/** Each bundle's copy, or why it could not be made (a build without it: `npm run build`). */
export type Installed = Record<BundleName, { path: string } | { why: string }>;

/** The folder of this runner's copies. */
export function bundleFolder(scratchDir: string): string {
  return join(scratchDir, `run-${process.pid}-${'0'.repeat(16)}-helper`);
}

/** Copies the bundles found beside the runner's own (`distDir`) into {@link bundleFolder}. */
export function installBundles(distDir: string, scratchDir: string): Installed {
  const dir = bundleFolder(scratchDir);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { mode: 0o755 });
  chmodSync(dir, 0o755);
  const installed = {} as Installed;
  for (const name of BUNDLE_NAMES) {
    const copy = join(dir, name);
    try {
      copyFileSync(join(distDir, name), copy);
      chmodSync(copy, 0o644);
      installed[name] = { path: copy };
    } catch (error) {
      installed[name] = {
        why: `${name} could not be installed (${(error as NodeJS.ErrnoException).code ?? 'error'}; npm run build makes it)`,
      };
    }
  }
  return installed;
}

/** Removes the copies (the runner is stopping). Never throws. */
export function removeBundles(scratchDir: string): void {
  rmSync(bundleFolder(scratchDir), { recursive: true, force: true });
}
