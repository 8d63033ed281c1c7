/**
 * @module Hosted or standalone (docs/architecture.md §2). Hosted when any host-injected marker is present and not
 * empty. This check may only ever push the default toward granting less: a missing marker can
 * never be forged into "hosted" by a skill, and "hosted" only removes grants.
 */

export const HOSTED_MARKERS = ['MCP_SKILLS_PATH', 'MCP_HOST_METER_FILE', 'MCP_DATA_DIR', 'MCP_BLOB_BASE_URL'] as const;

export function isHosted(env: Readonly<Record<string, string | undefined>>): boolean {
  return HOSTED_MARKERS.some((name) => (env[name] ?? '') !== '');
}
