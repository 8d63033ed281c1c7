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
      warnings.push(
        `MCP_CONFIRM_MODE=${JSON.stringify(rawMode)} is not ask-user, auto or refuse; runs are refused for clients that cannot show a prompt`,
      );
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

export type ConfirmPath =
  | { kind: 'elicit-url' }
  | { kind: 'elicit' }
  | { kind: 'page' }
  | { kind: 'token'; mode: 'ask-user' | 'auto' }
  | { kind: 'refuse' };

/** The elicitation modes a client declared: form, and url (MCP 2025-11-25 and later). */
export interface ClientElicitation {
  form: boolean;
  url: boolean;
}

/**
 * Which confirmation this request gets, from the settings, what the client declared, and whether
 * this front serves the approval page (HTTP with SKILL_MCP_APPROVAL_URL). With the page, a client
 * that can open a URL is sent there (a person signed in at the issuer is a stronger yes than a
 * click inside the client), and a client that can show no prompt at all gets the token path with
 * the page's link: its token runs nothing until a person approves on the page — in `refuse` mode
 * too, since that yes comes from a person, not from the model. `auto` asks no one, page or not.
 */
export function confirmPath(settings: ConfirmSettings, client: ClientElicitation, page = false): ConfirmPath {
  if (settings.elicitation && page && client.url && settings.mode !== 'auto') return { kind: 'elicit-url' };
  if (settings.elicitation && client.form) return { kind: 'elicit' };
  if (settings.mode === 'auto') return { kind: 'token', mode: 'auto' };
  if (page) return { kind: 'page' };
  if (settings.mode === 'refuse') return { kind: 'refuse' };
  return { kind: 'token', mode: settings.mode };
}

/** Whether a confirm token must have been approved on the approval page before it runs. */
export function tokenNeedsPage(settings: ConfirmSettings, page: boolean): boolean {
  return page && settings.mode !== 'auto';
}

/** What the model is told to do with a token that the approval page must unlock. */
export const PAGE_INSTRUCTIONS =
  'Nothing has run. A person must approve this exact run in a browser: give them approvalUrl (the page shows this preview, signs them in and asks Approve or Deny). ' +
  'After they approve there, call skill_run again with exactly the same name, script and args (files and stdin included) plus confirmToken: it runs once. ' +
  'Until then the token runs nothing (APPROVAL_PENDING); if they deny, it never runs (APPROVAL_DENIED).';

/** What the model is told to do with a token, per mode. */
export function tokenInstructions(mode: 'ask-user' | 'auto'): string {
  return mode === 'ask-user'
    ? 'Nothing has run. Show the person this preview (skill, interpreter, argv, cwd, timeout and the variable names the script will receive) and ask them to approve it. Only after they approve in the chat, call skill_run again with exactly the same name, script and args plus confirmToken. The token runs this exact command once.'
    : 'Nothing has run. Review the preview; to run it, call skill_run again with exactly the same name, script and args plus confirmToken. The token runs this exact command once.';
}
