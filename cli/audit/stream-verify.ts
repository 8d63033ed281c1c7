/**
 * @module `audit verify --redis`: every host's hash chain checked from the shared stream alone, and
 * its end against the host's head (the stream's anchor). Pure: it gets the entries and heads read
 * from Redis and says, per host, intact or where it breaks.
 */
import { lineHash } from '../../runner/audit/chain.js';
import { verifyAuditText } from '../../runner/audit/verify.js';

export interface StreamEntry {
  id: string;
  host: string;
  seq: number;
  line: string;
}

export interface HostVerdict {
  host: string;
  ok: boolean;
  message: string;
}

/** Checks each host's lines, in stream order; hosts sorted by id. */
export function verifyStream(entries: StreamEntry[], heads: Map<string, { seq: number; sha256: string }>): HostVerdict[] {
  const byHost = new Map<string, StreamEntry[]>();
  for (const entry of entries) byHost.set(entry.host, [...(byHost.get(entry.host) ?? []), entry]);
  for (const host of heads.keys()) if (!byHost.has(host)) byHost.set(host, []);
  const verdicts: HostVerdict[] = [];
  for (const [host, list] of [...byHost].sort(([a], [b]) => a.localeCompare(b))) {
    const fail = (message: string): void => void verdicts.push({ host, ok: false, message });
    const head = heads.get(host);
    if (list.length === 0) {
      fail(`TRUNCATED: the head says seq ${head?.seq ?? '?'}, but the stream holds no line of this host`);
      continue;
    }
    // The field is what the mirror checked; the line is what the hash covers: they must agree.
    const disagreeing = list.find((e) => {
      try {
        return (JSON.parse(e.line) as { seq?: unknown }).seq !== e.seq;
      } catch {
        return false; // verifyAuditText names an unreadable line
      }
    });
    if (disagreeing) {
      fail(`BROKEN at stream entry ${disagreeing.id}: its seq field (${disagreeing.seq}) is not its line's seq`);
      continue;
    }
    const outcome = verifyAuditText(`${list.map((e) => e.line).join('\n')}\n`);
    if (!outcome.ok) {
      const at = list[outcome.line - 1]!;
      fail(`BROKEN at seq ${at.seq} (stream entry ${at.id}): ${outcome.why}`);
      continue;
    }
    const last = list[list.length - 1]!;
    if (head === undefined) {
      verdicts.push({
        host,
        ok: true,
        message: `intact: ${list.length} lines (seq 1-${last.seq}); no head for this host, so lines deleted from the end cannot be detected`,
      });
    } else if (head.seq > last.seq) {
      fail(`TRUNCATED: the stream ends at seq ${last.seq}, the head says seq ${head.seq} was mirrored`);
    } else if (head.seq < last.seq || head.sha256 !== lineHash(last.line)) {
      fail(`ROLLED BACK or rewritten: the last line (seq ${last.seq}) is not the one the head records (seq ${head.seq})`);
    } else {
      verdicts.push({ host, ok: true, message: `intact: ${list.length} lines (seq 1-${last.seq}), head matches` });
    }
  }
  return verdicts;
}
