/**
 * @module A proxied run's egress as its `skill_run` result shows it: the runner's summary
 * (shared/protocol.ts `egressSummarySchema`) as is in `structuredContent`, and one line in words,
 * so a model whose script saw only "connection refused" or a 403 can tell that the run's egress
 * policy refused it, and which destination the declaration (or the grant) would have to name.
 */
import type { EgressRefusalReason, EgressSummary } from '../../shared/protocol.js';

/** Destinations named in the line; the structured list has them all (up to the runner's bound). */
const MAX_IN_LINE = 5;

const WHY: Record<EgressRefusalReason, string> = {
  'not-allowed': 'not declared or not granted',
  'special-address': 'a name resolving to loopback, private, link-local or metadata addresses',
  unresolved: 'does not resolve',
  'bad-destination': 'not a valid destination',
  'too-many-open': "over the run's limit of connections open at once",
  'run-ended': 'still undecided when the run ended',
  'request-refused': "a request the host's egress rules do not allow (the script got a 403 naming them)",
};

function where(entry: EgressSummary['refused'][number]): string {
  if (entry.host === '' && entry.port === null) return 'a connection';
  return entry.port === null ? entry.host : `${entry.host}:${entry.port}`;
}

/** `egress refused: api.example.com:443 (not declared or not granted), ...`, or undefined when nothing was refused. */
export function egressLine(summary: EgressSummary): string | undefined {
  if (summary.refusedCount === 0) return undefined;
  const named = summary.refused
    .slice(0, MAX_IN_LINE)
    .map((e) => `${where(e)} (${WHY[e.reason]}${e.count > 1 ? `, ${e.count} times` : ''})`);
  const notNamed = summary.refused.length - named.length;
  const rest = [
    notNamed > 0 ? `${notNamed} more destinations listed in egress.refused` : undefined,
    summary.refusedUnlisted > 0 ? `${summary.refusedUnlisted} more connections to other destinations (not listed)` : undefined,
  ].filter((part) => part !== undefined);
  const total = summary.refusedCount === 1 ? '' : ` — ${summary.refusedCount} refused connections in all`;
  return `egress refused: ${named.join(', ')}${rest.length > 0 ? `; and ${rest.join('; ')}` : ''}${total}. The run's egress proxy refused ${summary.refusedCount === 1 ? 'it' : 'them'} (the script saw a failed connection or the proxy's 403); a run reaches only what its skill declares in mcp-host.egress and the owner grants.`;
}
