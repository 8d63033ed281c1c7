/**
 * @module The script environment allowlist (docs/architecture.md §6). A script gets the fixed set, the host's data
 * directory when set, the proxy variables (the host's, or its run's own proxy), and the variables
 * granted to it — never the server's own environment. The same function computes the preview's `envNames` and the run's
 * real environment, so what a person approves is what the script receives.
 */

/**
 * Always passed when set (HOME and TMPDIR are replaced by the sandbox's private ones; SKILL_DIR is
 * always the run's read-only copy of its skill, never a value from the host).
 */
export const FIXED_ENV = ['PATH', 'HOME', 'LANG', 'TZ', 'TMPDIR', 'SKILL_DIR'] as const;
/** The proxy variables: the host's, or a run's own egress proxy (runner/egress/plan.ts) in their place. */
export const PROXY_ENV = [
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'ALL_PROXY',
  'http_proxy',
  'https_proxy',
  'all_proxy',
  'NO_PROXY',
  'no_proxy',
  'NODE_USE_ENV_PROXY',
] as const;
/** Passed when the host set them (unless the sandbox replaces or drops them). */
export const HOST_ENV = ['MCP_DATA_DIR', ...PROXY_ENV] as const;

export interface ScriptEnv {
  env: Record<string, string>;
  /** Sorted names of `env`: exactly what the script receives. */
  names: string[];
  /** Granted variables not set in the source environment (so the script will not get them). */
  notSet: string[];
  /** Sorted granted variables that are set, so the script really receives their values. */
  passed: string[];
}

/**
 * Builds a script's environment from `source` (the runner's own, pre-scrub copy).
 * `overrides` supplies the sandbox's private HOME/TMPDIR and a run's proxy variables; they win
 * over `source`. An override of `null` means the name is never passed; an empty string is passed
 * as set-but-empty (an empty NO_PROXY: nothing bypasses the run's proxy).
 */
export function buildScriptEnv(
  source: Readonly<Record<string, string | undefined>>,
  granted: readonly string[],
  overrides: Readonly<Record<string, string | null>> = {},
): ScriptEnv {
  const env: Record<string, string> = {};
  for (const name of [...FIXED_ENV, ...HOST_ENV]) {
    if (name in overrides) {
      const value = overrides[name];
      if (value !== null && value !== undefined) env[name] = value;
      continue;
    }
    const value = source[name];
    if (value !== undefined && value !== '') env[name] = value;
  }
  const notSet: string[] = [];
  const passed: string[] = [];
  for (const name of granted) {
    // Security: a grant can never reach a name of the fixed part (e.g. a granted "PATH").
    if (name in env || (FIXED_ENV as readonly string[]).includes(name) || (HOST_ENV as readonly string[]).includes(name)) continue;
    const value = source[name];
    if (value === undefined) notSet.push(name);
    else {
      env[name] = value;
      passed.push(name);
    }
  }
  return { env, names: Object.keys(env).sort(), notSet: notSet.sort(), passed: passed.sort() };
}

/**
 * The standalone self-grant warning of a preview, or undefined when no granted value is passed.
 * Names only the variables whose values the script will really receive (`ScriptEnv.passed`):
 * an unset one is in `envNotSet` instead, and naming it here would overstate what leaves.
 */
export function selfGrantWarning(passed: readonly string[]): string | undefined {
  if (passed.length === 0) return undefined;
  return `No owner grant (standalone): this third-party script asks for and will receive your values of ${passed.join(', ')}.`;
}
