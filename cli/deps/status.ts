/**
 * @module Which environments the served skills need and what state each is in, read the way the
 * runner reads them (the same declaration, the same digests): for `skill-mcp deps list`,
 * `skill-mcp deps install` and `skill-mcp doctor`.
 */
import { UsageError } from '../../shared/cli-args.js';
import { discoverSkills } from '../../shared/discover.js';
import { readSharedSettings } from '../../shared/settings.js';
import type { DeriveContext } from '../../runner/requests/derive.js';
import { declaredScripts } from '../../runner/requests/derive.js';
import type { Platform } from '../../runner/sandbox/platform.js';
import type { Identities } from '../../runner/deps/identity.js';
import { readExplicitIndex } from '../../runner/deps/index-settings.js';
import { resolveEnvironments } from '../../runner/deps/resolve.js';
import type { InterpreterPaths } from '../../runner/deps/resolve.js';
import { envInfo, envsDirOf } from '../../runner/deps/store.js';
import type { EnvVerifier } from '../../runner/deps/verify.js';

type Env = Readonly<Record<string, string | undefined>>;

export function interpreterPaths(platform: Platform): InterpreterPaths {
  const get = (name: string): string | undefined => {
    const r = platform.interpreters.get(name);
    return r && 'path' in r ? r.path : undefined;
  };
  const python3 = get('python3');
  const node = get('node');
  return { ...(python3 ? { python3 } : {}), ...(node ? { node } : {}) };
}

/** The skills with requirements, as the runner would read them, and what each needs. */
export async function collect(
  env: Env,
  bundledSkills: string,
  only: string[],
  platform: Platform,
  ids: Identities,
  out: (line: string) => void,
  usage = '',
) {
  const settings = readSharedSettings(env, bundledSkills);
  const ctx = { env, bundledSkills, limits: settings.limits, platform } as unknown as DeriveContext;
  const { skills } = await discoverSkills(settings.roots, settings.limits.maxSkills);
  const unknown = only.filter((name) => !skills.some((s) => s.name === name));
  if (unknown.length > 0)
    throw new UsageError(
      `no served skill is named ${unknown.map((n) => JSON.stringify(n)).join(', ')} (the skill folders are ${settings.rootsFrom ?? 'the bundled skills'})`,
      usage,
    );
  const index = readExplicitIndex(env);
  const rows = [];
  for (const skill of skills) {
    if (only.length > 0 && !only.includes(skill.name)) continue;
    const { requirements, problems } = await declaredScripts(ctx, skill);
    if (!requirements) {
      if (only.length > 0) out(`${skill.name}: declares no requirements${problems.length > 0 ? ` (${problems.join('; ')})` : ''}`);
      continue;
    }
    const resolved = resolveEnvironments(skill.realDir, requirements, interpreterPaths(platform), ids, index);
    rows.push({ skill, requirements, resolved });
  }
  return { rows, index, settings };
}

export type StatusRow =
  | { skill: string; problem: string }
  | { skill: string; kind: 'python' | 'node'; digest: string; state: 'ready' | 'missing' | 'tampered'; why?: string };

/** Every served skill's environments and their states (`only`: these skills). */
export async function environmentStatus(
  env: Env,
  bundledSkills: string,
  platform: Platform,
  ids: Identities,
  verifier: EnvVerifier,
  stateDir: string | undefined,
  only: string[] = [],
): Promise<StatusRow[]> {
  const { rows, settings } = await collect(env, bundledSkills, only, platform, ids, () => {});
  const envsDir = envsDirOf(stateDir ?? settings.stateDir);
  const list: StatusRow[] = [];
  for (const row of rows) {
    if (!row.resolved.ok) list.push({ skill: row.skill.name, problem: row.resolved.why });
    else for (const e of row.resolved.envs) list.push({ skill: row.skill.name, ...(await envInfo(verifier, envsDir, row.skill.name, e)) });
  }
  return list;
}
