/**
 * @module What the front and its runner must agree on before anything runs: which folders hold
 * the skills (as real paths), hosted or standalone, the owner's grant, and the operator's
 * declarations (a digest of what the SKILL_MCP_DECLARATIONS folder holds). The front sends its
 * view in the connection's `hello`; the runner computes its own from its environment and refuses
 * prepare/run when they differ (`CONFIG_MISMATCH`), because a person approves the skill the front
 * shows and the runner would otherwise run whatever *it* finds under that name (see SECURITY.md,
 * "Running the hosted pair"). Digests only: no host path crosses the socket.
 */
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { skillRoots } from './config.js';
import { declarationsDigest } from './declaration-files.js';
import { readGrantSource } from './grant.js';
import { isHosted } from './mode.js';
import { declarationsDirOf } from './settings.js';

export interface ConfigView {
  /** sha256 of the skill roots' real paths, in order. */
  roots: string;
  mode: 'hosted' | 'standalone';
  /** sha256 of the parsed grant (its kind and rows), so JSON spacing does not matter. */
  grant: string;
  /**
   * sha256 of the operator's declarations folder's contents (shared/declaration-files.ts): names
   * and bytes, so the same declarations agree wherever each process has the folder mounted.
   */
  declarations: string;
}

export const VIEW_PARTS = ['roots', 'mode', 'grant', 'declarations'] as const;
export type ViewPart = (typeof VIEW_PARTS)[number];

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** The real path of a root, or its resolved path when it does not exist (yet). */
function realRoot(root: string): string {
  try {
    return realpathSync(root);
  } catch {
    return root;
  }
}

/** The roots as real paths: what both processes would actually read. For the operator's log only. */
export function realRoots(env: NodeJS.ProcessEnv, bundledSkills: string): string[] {
  return skillRoots(env, bundledSkills).map(realRoot);
}

export function configView(env: NodeJS.ProcessEnv, bundledSkills: string): ConfigView {
  return {
    // Security: real paths, so a root reached through a differently named link still matches,
    // and two roots that merely share a name do not.
    roots: sha256(JSON.stringify(realRoots(env, bundledSkills))),
    mode: isHosted(env) ? 'hosted' : 'standalone',
    grant: sha256(JSON.stringify(readGrantSource(env))),
    declarations: declarationsDigest(declarationsDirOf(env)),
  };
}

/** Which parts of two views differ (empty: they agree). */
export function viewDifferences(runner: ConfigView, front: ConfigView): ViewPart[] {
  return VIEW_PARTS.filter((part) => runner[part] !== front[part]);
}

const PART_NAMES: Record<ViewPart, string> = {
  roots: 'the skill folders (MCP_SKILLS_PATH / SKILLS_DIR)',
  mode: 'hosted or standalone (MCP_SKILLS_PATH and the other hosted markers)',
  grant: 'the grant (MCP_SKILL_RUN)',
  declarations: 'the operator declarations (what the SKILL_MCP_DECLARATIONS folder holds)',
};

/** The refusal the model reads: what differs and what to do; no host path. */
export function mismatchMessage(differs: readonly ViewPart[]): string {
  return (
    `the runner was started with another configuration than this server: ${differs.map((part) => PART_NAMES[part]).join('; ')} differ. ` +
    "It could run other files than the ones shown here, so nothing runs. The owner must give the runner the same MCP_SKILLS_PATH (or SKILLS_DIR), MCP_SKILL_RUN and SKILL_MCP_DECLARATIONS (with the same files) as this server and restart it; the runner's log names its skill folders. Reading skills still works."
  );
}
