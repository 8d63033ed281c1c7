/**
 * @module What a script holds instead of a secret (docs/secrets.md, "Placeholders"): one fixed
 * shape, `skill-mcp-placeholder-` and 32 lowercase hex digits (128 random bits), made per run and
 * per secret when the run starts — never at prepare, so an approval binds the binding (name,
 * hosts, header, format), never a placeholder or a value.
 *
 * Security: the placeholder is worthless outside its run — the run's proxy swaps it for the value
 * only in the declared header of requests to the bound hosts, and a fresh one is drawn for every run.
 */
import { randomBytes } from 'node:crypto';

export const PLACEHOLDER_PREFIX = 'skill-mcp-placeholder-';
/** The whole shape, anchored: what the proxy looks for and what tests check. */
export const PLACEHOLDER_PATTERN = /^skill-mcp-placeholder-[0-9a-f]{32}$/;

/** A fresh placeholder: 128 bits from the CSPRNG. */
export function makePlaceholder(): string {
  return `${PLACEHOLDER_PREFIX}${randomBytes(16).toString('hex')}`;
}
