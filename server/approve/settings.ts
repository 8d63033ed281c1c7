/**
 * @module The approval page's settings (docs/hosting.md, "The approval page"): where browsers reach
 * this front, and — with OAuth — the OAuth client the page signs people in as. Read with the other
 * HTTP settings, before a root launcher drops its rights; every bad value stops the front, since
 * each one decides who may approve a run.
 */
import { readFileSync } from 'node:fs';
import { readVariable, secureUrl, type SettingIssue, type VariableSpec } from '../../shared/settings-schema.js';

export interface ApprovalSettings {
  /** The origin browsers use for this front (`https://mcp.example.com`); links are `<origin>/approve/<id>`. */
  origin: string;
  /** With OAuth: the client the page signs approvers in as (authorization code + PKCE). */
  client?: { id: string; secret?: string | undefined } | undefined;
}

export const APPROVAL_URL: VariableSpec<string | undefined> = {
  name: 'SKILL_MCP_APPROVAL_URL',
  schema: secureUrl(),
  expected: 'the https origin browsers reach this front at, e.g. https://mcp.example.com (plain http only on loopback), with no path',
  fallback: undefined,
  policy: 'stop',
};

export const APPROVAL_VARIABLES = {
  SKILL_MCP_APPROVAL_URL:
    'serve the approval page at this origin (https://mcp.example.com): a person approves each run in a browser at <origin>/approve/<id> (docs/hosting.md)',
  SKILL_MCP_APPROVAL_CLIENT_ID:
    'with OAuth: the OAuth client id the approval page signs people in as (redirect URI <origin>/approve/callback)',
  SKILL_MCP_APPROVAL_CLIENT_SECRET:
    "with OAuth: that client's secret (a confidential client, client_secret_basic); unset = a public client (PKCE only)",
  SKILL_MCP_APPROVAL_CLIENT_SECRET_FILE: 'a file holding that secret (one line), instead of SKILL_MCP_APPROVAL_CLIENT_SECRET',
} as const;

const CLIENT_ID = /^[\x21-\x7e]{1,256}$/;

function readSecret(env: Readonly<Record<string, string | undefined>>, issues: SettingIssue[]): string | undefined {
  const inline = env['SKILL_MCP_APPROVAL_CLIENT_SECRET'] || undefined;
  const file = env['SKILL_MCP_APPROVAL_CLIENT_SECRET_FILE'] || undefined;
  if (inline !== undefined && file !== undefined) {
    issues.push({
      variable: 'SKILL_MCP_APPROVAL_CLIENT_SECRET',
      policy: 'stop',
      message: 'both SKILL_MCP_APPROVAL_CLIENT_SECRET and SKILL_MCP_APPROVAL_CLIENT_SECRET_FILE are set; set one',
    });
    return undefined;
  }
  if (file === undefined) return inline;
  try {
    return readFileSync(file, 'utf8').replace(/\r?\n$/, '');
  } catch (error) {
    // Security: the message names the variable, never the file's content.
    issues.push({
      variable: 'SKILL_MCP_APPROVAL_CLIENT_SECRET_FILE',
      policy: 'stop',
      message: `SKILL_MCP_APPROVAL_CLIENT_SECRET_FILE cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    });
    return undefined;
  }
}

/**
 * The page's settings, or undefined when SKILL_MCP_APPROVAL_URL is unset (no page). `auth` is how
 * this front authenticates: the page signs people in the same way, so without either there is no page.
 */
export function readApprovalSettings(
  env: Readonly<Record<string, string | undefined>>,
  auth: 'oauth' | 'token' | 'none',
  issues: SettingIssue[],
): ApprovalSettings | undefined {
  const raw = readVariable(env, APPROVAL_URL, issues);
  const clientId = env['SKILL_MCP_APPROVAL_CLIENT_ID'] || undefined;
  const secret = readSecret(env, issues);
  if (raw === undefined) {
    if (clientId !== undefined)
      issues.push({
        variable: 'SKILL_MCP_APPROVAL_CLIENT_ID',
        policy: 'stop',
        message:
          'SKILL_MCP_APPROVAL_CLIENT_ID is set without SKILL_MCP_APPROVAL_URL; set the URL browsers reach this front at, or unset the client id',
      });
    return undefined;
  }
  const url = new URL(raw);
  if (url.pathname !== '/') {
    issues.push({
      variable: 'SKILL_MCP_APPROVAL_URL',
      policy: 'stop',
      message: `SKILL_MCP_APPROVAL_URL must be an origin with no path (the page is served at /approve/ of this front), not ${JSON.stringify(raw)}`,
    });
    return undefined;
  }
  if (auth === 'none') {
    issues.push({
      variable: 'SKILL_MCP_APPROVAL_URL',
      policy: 'stop',
      message:
        'SKILL_MCP_APPROVAL_URL needs a way to sign approvers in: set SKILL_MCP_HTTP_TOKEN_FILE (or SKILL_MCP_HTTP_TOKEN), or SKILL_MCP_OAUTH_ISSUER with SKILL_MCP_APPROVAL_CLIENT_ID',
    });
    return undefined;
  }
  if (auth === 'token') {
    if (clientId !== undefined)
      issues.push({
        variable: 'SKILL_MCP_APPROVAL_CLIENT_ID',
        policy: 'stop',
        message: 'SKILL_MCP_APPROVAL_CLIENT_ID is for OAuth; with the static bearer token the page asks for that token instead. Unset it',
      });
    return { origin: url.origin };
  }
  if (clientId === undefined || !CLIENT_ID.test(clientId)) {
    issues.push({
      variable: 'SKILL_MCP_APPROVAL_CLIENT_ID',
      policy: 'stop',
      message: `with OAuth the approval page signs people in at the issuer: set SKILL_MCP_APPROVAL_CLIENT_ID to an OAuth client registered there with the redirect URI ${url.origin}/approve/callback`,
    });
    return undefined;
  }
  return { origin: url.origin, client: { id: clientId, secret } };
}
