/**
 * @module What a run's result says about its connections (shared/protocol.ts `egressSummarySchema`):
 * every refusal counted, the first {@link MAX_EGRESS_REFUSALS_LISTED} distinct destinations
 * (host:port and reason) listed with their counts, the rest counted as unlisted. The audit log
 * keeps its own lines (run-proxy.ts); this is only the part the model and the person are shown.
 */
import { MAX_EGRESS_HOST_CHARS, MAX_EGRESS_REFUSALS_LISTED } from '../../shared/protocol.js';
import type { EgressRefusalReason, EgressSummary } from '../../shared/protocol.js';

type Listed = EgressSummary['refused'][number];

/**
 * Host and port of a destination as the proxy recorded it (`host:port`, `[v6]:port`, or whatever
 * a malformed request sent). Security: the text is the script's own; characters outside printable
 * ASCII are shown as `\xHH` (no line breaks or terminal escapes reach the human line) and it is cut
 * at {@link MAX_EGRESS_HOST_CHARS}, visibly (`…`).
 */
export function splitDestination(destination: string): { host: string; port: number | null } {
  const match = /^(.*):(\d{1,5})$/s.exec(destination);
  const port = match ? Number(match[2]) : NaN;
  const [raw, portOrNull] = match && port <= 65535 ? [match[1]!, port] : [destination, null];
  const shown = raw.replace(/[^\x21-\x7e]/gu, (c) =>
    c.charCodeAt(0) < 0x100 ? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}` : `\\u{${c.codePointAt(0)!.toString(16)}}`,
  );
  return { host: shown.length > MAX_EGRESS_HOST_CHARS ? `${shown.slice(0, MAX_EGRESS_HOST_CHARS - 1)}…` : shown, port: portOrNull };
}

export interface RefusalTally {
  allowed(): void;
  refused(destination: string, reason: EgressRefusalReason): void;
  summary(): EgressSummary;
}

export function refusalTally(maxListed = MAX_EGRESS_REFUSALS_LISTED): RefusalTally {
  // Security: at most maxListed entries are ever held, however many connections the run makes.
  const listed = new Map<string, Listed>();
  let refusedCount = 0;
  let refusedUnlisted = 0;
  let allowedCount = 0;
  return {
    allowed() {
      allowedCount += 1;
    },
    refused(destination, reason) {
      refusedCount += 1;
      const { host, port } = splitDestination(destination);
      const key = `${reason} ${host} ${port ?? ''}`;
      const known = listed.get(key);
      if (known) known.count += 1;
      else if (listed.size < maxListed) listed.set(key, { host, port, reason, count: 1 });
      else refusedUnlisted += 1;
    },
    summary() {
      return { refused: [...listed.values()].map((entry) => ({ ...entry })), refusedCount, refusedUnlisted, allowedCount };
    },
  };
}
