/**
 * @module Every setting both processes read, read by one function (docs/architecture.md §2): the
 * front and the runner call {@link readSharedSettings} on their environment and get the same
 * values, the same reports and the same refusal. Before this, each read its own copy: with
 * `MCP_CONFIRM_TTL_SECONDS=abc` the front said "using 600" while the runner exited, and `skill_run`
 * failed RUNNER_UNAVAILABLE 15 s later.
 *
 * Policies (settings-schema.ts): the confirmation TTL and secret `stop` both processes at start; the
 * catalog limits and MCP_SKILL_ALLOW_UNSCRUBBED keep their default (the safer one) and are
 * reported; a malformed grant grants nothing and is reported (shared/grant.ts). Roots and the
 * hosted markers cannot be malformed, but a root that is missing or not a folder is reported at start.
 */
import { statSync } from 'node:fs';
import { basename, dirname, isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { skillRoots } from './config.js';
import { readGrantSource, type GrantSource } from './grant.js';
import { readLimitSettings, type CatalogLimits } from './limits.js';
import { isHosted } from './mode.js';
import { readVariable, wholeNumber, type SettingIssue, type VariableSpec } from './settings-schema.js';
import { stateDirOf } from './state-dir.js';
import { explainUnreadableRoot } from './unreadable-root.js';

type Env = Readonly<Record<string, string | undefined>>;

export const MAX_CONFIRM_TTL_SECONDS = 7 * 24 * 3600;

/** Security: how long an approval stays valid; "60s" must not become 600 on a guess. */
export const CONFIRM_TTL: VariableSpec<number> = {
  name: 'MCP_CONFIRM_TTL_SECONDS',
  schema: wholeNumber(1, MAX_CONFIRM_TTL_SECONDS),
  expected: `a whole number of seconds from 1 to ${MAX_CONFIRM_TTL_SECONDS} (default 600)`,
  fallback: 600,
  policy: 'stop',
};

/** Security: the token key; a short one could be guessed offline from a single token. */
export const CONFIRM_SECRET: VariableSpec<string | undefined> = {
  name: 'MCP_CONFIRM_SECRET',
  schema: z.string().min(32),
  expected: 'at least 32 characters (make one with: openssl rand -hex 32)',
  fallback: undefined,
  policy: 'stop',
  secret: true,
};

/** Only `1` relaxes; anything unreadable keeps runs refused, which is the safe side. */
export const ALLOW_UNSCRUBBED: VariableSpec<boolean> = {
  name: 'MCP_SKILL_ALLOW_UNSCRUBBED',
  schema: z.enum(['1', '0']).transform((value) => value === '1'),
  expected: '1 or 0',
  fallback: false,
  fallbackText: '0 (a hosted runner that cannot clear its environ runs nothing)',
  policy: 'default',
};

/**
 * Security: the operator's declarations (shared/declaration-source.ts) decide what may run; a
 * relative path would name another folder for each process's working directory, so it stops both.
 */
export const DECLARATIONS_DIR: VariableSpec<string | undefined> = {
  name: 'SKILL_MCP_DECLARATIONS',
  schema: z
    .string()
    .refine((path) => isAbsolute(path) && !path.includes('\0'))
    .transform((path) => resolve(path)),
  expected: 'an absolute path to a folder of <skill-name>.yaml declarations',
  fallback: undefined,
  policy: 'stop',
};

/** `SKILL_MCP_DECLARATIONS` as both processes read it (undefined: no operator declarations); refused values are pushed to `issues`. */
export function declarationsDirOf(env: Env, issues: SettingIssue[] = []): string | undefined {
  return readVariable(env, DECLARATIONS_DIR, issues);
}

export interface SharedSettings {
  /** Absolute skill roots, in order (the bundled folder when none is configured). */
  roots: string[];
  /** The variable that named the roots, or undefined for the bundled skills. */
  rootsFrom: 'MCP_SKILLS_PATH' | 'SKILLS_DIR' | undefined;
  hosted: boolean;
  grant: GrantSource;
  confirmTtlSeconds: number;
  confirmSecret: string | undefined;
  allowUnscrubbed: boolean;
  limits: CatalogLimits;
  /** `SKILL_MCP_DECLARATIONS`: the operator's declarations folder, absolute; undefined when unset. */
  declarations: string | undefined;
  /** `SKILL_MCP_STATE_DIR`, else the standalone default. */
  stateDir: string;
  /** Every value refused, with its policy. */
  issues: SettingIssue[];
}

export function readSharedSettings(env: Env, bundledSkills: string): SharedSettings {
  const issues: SettingIssue[] = [];
  const rootsFrom =
    (env['MCP_SKILLS_PATH'] ?? '') !== ''
      ? 'MCP_SKILLS_PATH'
      : (env['SKILLS_DIR'] ?? '').split(':').some((p) => p !== '')
        ? 'SKILLS_DIR'
        : undefined;
  return {
    roots: skillRoots(env, bundledSkills),
    rootsFrom,
    hosted: isHosted(env),
    grant: readGrantSource(env),
    confirmTtlSeconds: readVariable(env, CONFIRM_TTL, issues),
    confirmSecret: readVariable(env, CONFIRM_SECRET, issues),
    allowUnscrubbed: readVariable(env, ALLOW_UNSCRUBBED, issues),
    limits: readLimitSettings(env, issues),
    declarations: declarationsDirOf(env, issues),
    stateDir: stateDirOf(env as NodeJS.ProcessEnv),
    issues,
  };
}

/** The refused values alone: what a launcher checks before it starts anything. */
export function sharedSettingIssues(env: Env): SettingIssue[] {
  return readSharedSettings(env, '').issues;
}

/** Why a configured root cannot be served, for the operator's log (absolute paths are fine there). */
export function rootProblems(settings: Pick<SharedSettings, 'roots' | 'rootsFrom'>): string[] {
  if (settings.rootsFrom === undefined) return [];
  const problems: string[] = [];
  for (const root of settings.roots) {
    let why: string | undefined;
    try {
      if (!statSync(root).isDirectory()) {
        why =
          basename(root) === 'SKILL.md'
            ? `is a file, not a folder: name the folder that holds it (${settings.rootsFrom}=${dirname(root)})`
            : `is a file, not a folder: ${settings.rootsFrom} names a folder of skills, or one skill's folder (the one holding SKILL.md)`;
      }
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EACCES') {
        // Which folder on the way stops this uid, and how to let it through.
        const unreadable = explainUnreadableRoot(root);
        if (unreadable) {
          problems.push(`${settings.rootsFrom}: ${unreadable.forHost}`);
          continue;
        }
      }
      why = code === 'ENOENT' ? 'does not exist' : `cannot be read (${code ?? 'error'})`;
    }
    if (why) problems.push(`${settings.rootsFrom}: the skill folder ${root} ${why}; no skill is served from it`);
  }
  return problems;
}

/** Why the operator's declarations folder cannot be read, for the operator's log. */
export function declarationsDirProblems(dir: string | undefined): string[] {
  if (dir === undefined) return [];
  try {
    if (statSync(dir).isDirectory()) return [];
    return [`SKILL_MCP_DECLARATIONS: ${dir} is not a folder; no skill's scripts run until it is one or the variable is unset`];
  } catch (error) {
    return [
      `SKILL_MCP_DECLARATIONS: the folder ${dir} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}); no skill's scripts run until it can or the variable is unset`,
    ];
  }
}

/**
 * What a process says on stderr at start: every refused value it carries on without, a grant
 * that could not be read, and every root it cannot serve. The same lines from both processes.
 */
export function startupReport(settings: SharedSettings): string[] {
  return [
    ...settings.issues.filter((issue) => issue.policy !== 'stop').map((issue) => issue.message),
    ...(settings.grant.kind === 'owner' && settings.grant.error ? [settings.grant.error] : []),
    ...rootProblems(settings),
    ...declarationsDirProblems(settings.declarations),
  ];
}
