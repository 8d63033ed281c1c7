/**
 * @module `skill-mcp audit query [FILE] [--skill S] [--script S] [--subject WHO] [--outcome O]
 * [--since T] [--until T] [--run ID] [--json]`: the lines of a log and its rotated segments that
 * match every filter given, streamed a line at a time (bounded memory on a log of any size). A
 * run's lines that do not name its skill (egress, exit) follow its accept: a run matched by
 * skill, script or subject brings them along. `--outcome` matches a line's outcome (docs/audit.md):
 * `accepted`, `ok`, `failed`, `timeout`, `cancelled`, `error`, `rejected` or a reject reason,
 * `prepared`, `refused`. `--json` (`--format json`) prints the lines as they are (JSON lines),
 * `--format ocsf` as OCSF 1.3.0 events, one JSON object a line (./ocsf.ts); otherwise as `tail` does.
 */
import { hostname } from 'node:os';
import { eachLine, openLog } from '../../runner/audit/lines.js';
import { outcomesOf } from './outcomes.js';
import { renderAuditLine } from './render.js';
import { allSegments } from '../../runner/audit/segments.js';

export interface QueryFilter {
  skill?: string | undefined;
  script?: string | undefined;
  subject?: string | undefined;
  outcome?: string | undefined;
  since?: number | undefined;
  until?: number | undefined;
  run?: string | undefined;
}

export { outcomesOf };

/** A query over lines, fed in order; `write` gets each matching line. */
export class AuditQuery {
  /** Runs matched by skill, script or subject whose later lines (egress, exit) come along. */
  readonly #runs = new Set<string>();
  matched = 0;
  readonly #byRun: boolean;

  constructor(
    private readonly filter: QueryFilter,
    private readonly write: (line: string, parsed: Record<string, unknown>) => void,
  ) {
    this.#byRun = filter.skill !== undefined || filter.script !== undefined || filter.subject !== undefined;
  }

  line(bytes: Buffer): void {
    const text = bytes.toString('utf8');
    let l: Record<string, unknown>;
    try {
      l = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return; // verify names a broken line; a query shows decisions
    }
    if (l === null || typeof l !== 'object') return;
    const f = this.filter;
    const ts = Date.parse(String(l['ts']));
    if (f.since !== undefined && !(ts >= f.since)) return;
    if (f.until !== undefined && !(ts <= f.until)) return;
    const runId = typeof l['run_id'] === 'string' ? l['run_id'] : undefined;
    if (f.run !== undefined && runId !== f.run) return;
    if (this.#byRun) {
      const named = l['skill'] !== undefined;
      if (named) {
        if (f.skill !== undefined && l['skill'] !== f.skill) return;
        if (f.script !== undefined && l['script'] !== f.script) return;
        if (f.subject !== undefined && l['requester'] !== f.subject) return;
        if (runId !== undefined && l['event'] === 'run.accept') this.#runs.add(runId);
      } else if (runId === undefined || !this.#runs.has(runId)) {
        return;
      }
    }
    if (runId !== undefined && (l['event'] === 'run.exit' || l['event'] === 'run.reject')) this.#runs.delete(runId);
    if (f.outcome !== undefined && !outcomesOf(l).includes(f.outcome)) return;
    this.matched += 1;
    this.write(text, l);
  }
}

/** How `query` prints a matching line: as `tail` does, as it is (JSON lines), or as OCSF events (./ocsf.ts). */
export type QueryFormat = 'text' | 'json' | 'ocsf';

export async function queryMain(file: string, filter: QueryFilter, format: QueryFormat): Promise<void> {
  const files = file === '-' ? ['-'] : allSegments(file);
  if (files.length === 0) {
    process.stderr.write(`skill-mcp audit: cannot read ${file} (ENOENT)\n`);
    process.exitCode = 1;
    return;
  }
  let pending: string[] = [];
  const ocsf = format === 'ocsf' ? await import('./ocsf.js') : undefined;
  const source = { hostname: hostname() };
  /** Matching lines with no OCSF class, by event: said at the end, never dropped silently. */
  const unmapped = new Map<string, number>();
  const query = new AuditQuery(filter, (line, parsed) => {
    if (ocsf) {
      const events = ocsf.toOcsf(parsed, source);
      if (events.length === 0) unmapped.set(String(parsed['event']), (unmapped.get(String(parsed['event'])) ?? 0) + 1);
      for (const event of events) pending.push(`${JSON.stringify(event)}\n`);
    } else pending.push(`${format === 'json' ? line : renderAuditLine(line)}\n`);
  });
  // Written once per chunk read, waiting for stdout to drain: memory stays bounded when the reader is slow.
  const flush = async (): Promise<void> => {
    if (pending.length === 0) return;
    const text = pending.join('');
    pending = [];
    if (!process.stdout.write(text)) await new Promise((resolve) => process.stdout.once('drain', resolve));
  };
  for (const path of files) {
    await eachLine(
      openLog(path),
      (line, torn) => {
        if (!torn) query.line(line);
      },
      flush,
    );
  }
  await flush();
  if (unmapped.size > 0)
    process.stderr.write(
      `skill-mcp audit: lines with no OCSF event class here were not written: ${[...unmapped].map(([event, n]) => `${event} ×${n}`).join(', ')}\n`,
    );
}
