/**
 * @module A run's redaction as its `skill_run` result shows it (issue 30; docs/secrets-redaction.md):
 * the runner's summary (shared/protocol.ts `redactionSummarySchema`) as is in `structuredContent`,
 * and one line in words, so the model reads `[secret:NAME]` as the runner's doing, not the script's.
 */
import type { RedactionSummaryView } from '../../shared/protocol.js';

/** `redacted: 3 occurrences of secret values (API_KEY ×2, TOKEN ×1) ...`, or undefined when there is nothing to say. */
export function redactionLine(summary: RedactionSummaryView): string | undefined {
  const parts: string[] = [];
  if (summary.count > 0) {
    const names = summary.names.map((n) => `${n.name} ×${n.count}`).join(', ');
    parts.push(
      `redacted: ${summary.count} ${summary.count === 1 ? 'occurrence' : 'occurrences'} of secret values (${names}) in what the run returned, each replaced by [secret:NAME].`,
    );
  }
  if (summary.heldBack) {
    const held = (['stdout', 'stderr'] as const)
      .filter((s) => summary.heldBack![s] > 0)
      .map((s) => `${summary.heldBack![s]} bytes of ${s}`);
    parts.push(`At the output cap, ${held.join(' and ')} just before the cut were dropped (a secret value could have begun there).`);
  }
  if (summary.notSearched) parts.push(`Not searched for (shorter than 8 bytes): ${summary.notSearched.join(', ')}.`);
  return parts.length > 0 ? parts.join(' ') : undefined;
}
