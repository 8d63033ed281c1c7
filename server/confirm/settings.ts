/**
 * @module How a run gets confirmed (docs/architecture.md §7). A client that can show a prompt (it declares form
 * elicitation) is asked in the client, unless the owner turned that off; every other client takes
 * the two-call token path, which `MCP_CONFIRM_MODE` shapes. Unknown values never loosen anything:
 * an unknown mode is `refuse`, an unknown elicitation setting is `on` (with a warning).
 */

export type ConfirmMode = 'ask-user' | 'auto' | 'refuse';

export interface ConfirmSettings {
  mode: ConfirmMode;
  elicitation: boolean;
  ttlSeconds: number;
  /** Said once on stderr at start. */
  warnings: string[];
}

/**
 * The front-only confirmation settings. `ttlSeconds` is read by shared/settings.ts, because the
 * runner enforces the same lifetime on the tokens it mints.
 */
export function readConfirmSettings(env: NodeJS.ProcessEnv, ttlSeconds: number): ConfirmSettings {
  const warnings: string[] = [];
  const rawMode = env['MCP_CONFIRM_MODE'];
  let mode: ConfirmMode = 'ask-user';
  if (rawMode !== undefined && rawMode !== '') {
    if (rawMode === 'ask-user' || rawMode === 'auto' || rawMode === 'refuse') mode = rawMode;
    else {
      mode = 'refuse';
      warnings.push(`MCP_CONFIRM_MODE=${JSON.stringify(rawMode)} is not ask-user, auto or refuse; runs are refused for clients that cannot show a prompt`);
    }
  }
  const rawElicit = env['MCP_CONFIRM_ELICITATION'];
  let elicitation = true;
  if (rawElicit === 'off') elicitation = false;
  else if (rawElicit !== undefined && rawElicit !== '' && rawElicit !== 'on') {
    warnings.push(`MCP_CONFIRM_ELICITATION=${JSON.stringify(rawElicit)} is not on or off; treating it as on`);
  }
  return { mode, elicitation, ttlSeconds, warnings };
}

export type ConfirmPath = { kind: 'elicit' } | { kind: 'token'; mode: 'ask-user' | 'auto' } | { kind: 'refuse' };

/** Which confirmation this request gets, from the settings and what the client declared. */
export function confirmPath(settings: ConfirmSettings, clientCanElicitForm: boolean): ConfirmPath {
  if (settings.elicitation && clientCanElicitForm) return { kind: 'elicit' };
  if (settings.mode === 'refuse') return { kind: 'refuse' };
  return { kind: 'token', mode: settings.mode };
}

/** What the model is told to do with a token, per mode. */
export function tokenInstructions(mode: 'ask-user' | 'auto'): string {
  return mode === 'ask-user'
    ? 'Nothing has run. Show the person this preview (skill, interpreter, argv, cwd, timeout and the variable names the script will receive) and ask them to approve it. Only after they approve in the chat, call skill_run again with exactly the same name, script and args plus confirmToken. The token runs this exact command once.'
    : 'Nothing has run. Review the preview; to run it, call skill_run again with exactly the same name, script and args plus confirmToken. The token runs this exact command once.';
}
