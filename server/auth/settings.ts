/**
 * @module The OAuth resource-server settings of the HTTP front (docs/http.md, "OAuth"): which
 * issuer's tokens are accepted, for which audience, and where groups are read from. Read once at
 * start through the shared settings machinery; every bad value stops the front, since each one
 * decides who may connect.
 */
import { z } from 'zod';
import { readVariable, secureUrl, wholeNumber, type SettingIssue, type VariableSpec } from '../../shared/settings-schema.js';

/** What each scope allows (docs/http.md). */
export const SCOPES = {
  read: 'skills:read',
  run: 'skills:run',
  approve: 'skills:approve',
} as const;

export const SCOPES_SUPPORTED: string[] = [SCOPES.read, SCOPES.run, SCOPES.approve];

export interface OAuthSettings {
  /** The issuer identifier, exactly as tokens carry it in `iss`. */
  issuer: string;
  /** This server's canonical MCP URL: what tokens must carry in `aud`. */
  audience: string;
  /** The claim holding the token's groups (an array of strings, or one string). */
  groupsClaim: string;
  /** After an unknown `kid` made the front fetch the issuer's keys, how long before it may fetch again. */
  jwksCooldownMs: number;
}

export const OAUTH_ISSUER: VariableSpec<string | undefined> = {
  name: 'SKILL_MCP_OAUTH_ISSUER',
  schema: secureUrl(),
  expected: 'an https URL (plain http only for a loopback issuer) with no query or fragment',
  fallback: undefined,
  policy: 'stop',
};

export const OAUTH_AUDIENCE: VariableSpec<string | undefined> = {
  name: 'SKILL_MCP_OAUTH_AUDIENCE',
  schema: secureUrl(),
  expected: "this server's canonical MCP URL, e.g. https://mcp.example.com/mcp (plain http only on loopback)",
  fallback: undefined,
  policy: 'stop',
};

export const OAUTH_GROUPS_CLAIM: VariableSpec<string> = {
  name: 'SKILL_MCP_OAUTH_GROUPS_CLAIM',
  schema: z.string().regex(/^[A-Za-z0-9_:./-]{1,128}$/),
  expected: 'a claim name (letters, digits, _ : . / -)',
  fallback: 'groups',
  policy: 'stop',
};

export const OAUTH_JWKS_COOLDOWN: VariableSpec<number> = {
  name: 'SKILL_MCP_OAUTH_JWKS_COOLDOWN_SECONDS',
  schema: wholeNumber(0, 3600),
  expected: 'a whole number of seconds from 0 to 3600 (default 30)',
  fallback: 30,
  policy: 'stop',
};

/** Every OAuth variable with its meaning (the HTTP usage text and docs/http.md list them). */
export const OAUTH_VARIABLES = {
  SKILL_MCP_OAUTH_ISSUER: 'accept OAuth access tokens (JWT) from this issuer; its metadata is found by RFC 8414 or OpenID discovery',
  SKILL_MCP_OAUTH_AUDIENCE: "this server's canonical MCP URL: tokens must name it in aud (required with the issuer)",
  SKILL_MCP_OAUTH_GROUPS_CLAIM: 'the token claim holding the groups grant rows name as group:<g> (default groups)',
  SKILL_MCP_OAUTH_JWKS_COOLDOWN_SECONDS:
    "after an unknown key id made the front fetch the issuer's keys, the wait before the next fetch (default 30)",
} as const;

/** The OAuth settings, or undefined when no issuer is set. Issues are pushed (all `stop`). */
export function readOAuthSettings(env: Readonly<Record<string, string | undefined>>, issues: SettingIssue[]): OAuthSettings | undefined {
  const issuer = readVariable(env, OAUTH_ISSUER, issues);
  const audience = readVariable(env, OAUTH_AUDIENCE, issues);
  const groupsClaim = readVariable(env, OAUTH_GROUPS_CLAIM, issues);
  const cooldown = readVariable(env, OAUTH_JWKS_COOLDOWN, issues);
  if (issuer === undefined) {
    if (audience !== undefined)
      issues.push({
        variable: 'SKILL_MCP_OAUTH_AUDIENCE',
        policy: 'stop',
        message: 'SKILL_MCP_OAUTH_AUDIENCE is set without SKILL_MCP_OAUTH_ISSUER; set the issuer too, or unset the audience',
      });
    return undefined;
  }
  if (audience === undefined) {
    issues.push({
      variable: 'SKILL_MCP_OAUTH_AUDIENCE',
      policy: 'stop',
      message:
        "SKILL_MCP_OAUTH_ISSUER is set but SKILL_MCP_OAUTH_AUDIENCE is not: set it to this server's canonical MCP URL (what the issuer puts in aud), e.g. https://mcp.example.com/mcp",
    });
    return undefined;
  }
  return { issuer, audience, groupsClaim, jwksCooldownMs: cooldown * 1000 };
}
