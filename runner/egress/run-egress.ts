/**
 * @module One proxied run's network, as the runner keeps it: its helper given the run (its entries,
 * only its secrets, and the values to redact), each connection the helper reports (redacted by it)
 * written as an `egress` line (at most {@link MAX_EGRESS_AUDIT_LINES}; the rest counted), the refusals tallied for the
 * run's result (refusals.ts), and the helper's failure turned into the run's stop. The helper
 * itself, and everything it parses, is runner/helper/.
 *
 * Security: the helper redacts every text a record carries (the script's destination and method
 * could spell a value it holds) before it reports it — it holds those values anyway, and the runner
 * reads no text the script chose. The runner bounds each record (helper-protocol.ts) and counts the
 * refusals itself; a helper that lied could only misreport its own run's connections, or leak its
 * own run's values, which it could as well send on the network.
 */
import { readFileSync } from 'node:fs';
import type { EgressSummary } from '../../shared/protocol.js';
import type { AuditLog } from '../audit/log.js';
import type { RedactionValue, SecretBinding } from '../secrets/binding.js';
import type { RunHelper } from './helper-link.js';
import type { EgressRuleSet } from '../../shared/egress-rules.js';
import type { EgressRecord, RequestRecord } from './helper-protocol.js';
import { refusalTally } from './refusals.js';

/** Audit lines one run may write about its connections; past it they are only counted (in `run.exit`). */
export const MAX_EGRESS_AUDIT_LINES = 1000;

export interface RunProxyTotals {
  egress_allowed: number;
  egress_refused: number;
  /** Connections beyond {@link MAX_EGRESS_AUDIT_LINES}, counted but not written one by one. */
  egress_unlogged: number;
}

/** What a run's egress ended with: its totals (for `run.exit`), the helper's tally (for the result) and, if it failed, why. */
export interface RunEgressEnd {
  totals: RunProxyTotals;
  summary: EgressSummary;
  /** The redaction markers the helper wrote into its records, by name. */
  redacted: Record<string, number>;
  failed?: string;
}

export interface RunEgress {
  /** Why the helper failed, once it has (the run is then stopped). */
  readonly failed: string | undefined;
  /**
   * Ends the run's network and returns what it did. `returns`: the helper then waits to redact the
   * run's returns (helper-link.ts `RunHelper.redact`). Never rejects.
   */
  close(returns?: boolean): Promise<RunEgressEnd>;
}

/**
 * What the runner makes of a run's connection reports (each redacted by the helper, its markers
 * counted here): tallied for the result (refusals.ts), and counted for `run.exit`. Security: a script looping on refused connections cannot grow the log without bound —
 * past `maxLines` a connection is only counted (`egress_unlogged`).
 */
export class EgressBook {
  readonly totals: RunProxyTotals = { egress_allowed: 0, egress_refused: 0, egress_unlogged: 0 };
  readonly redacted: Record<string, number> = {};
  private readonly tally = refusalTally();
  private lines = 0;

  constructor(private readonly maxLines: number = MAX_EGRESS_AUDIT_LINES) {}

  /** The record's markers counted; the record without them, as its line says it. */
  private markers<T extends { redacted?: Record<string, number> | undefined }>(reported: T): Omit<T, 'redacted'> {
    const { redacted, ...record } = reported;
    for (const [name, n] of Object.entries(redacted ?? {})) this.redacted[name] = (this.redacted[name] ?? 0) + n;
    return record;
  }

  /** Takes one report; returns the record to write as an `egress` line, or undefined past the cap. */
  take(reported: EgressRecord): Omit<EgressRecord, 'redacted'> | undefined {
    const record = this.markers(reported);
    if (record.decision === 'allowed') {
      this.totals.egress_allowed += 1;
      this.tally.allowed();
    } else {
      this.totals.egress_refused += 1;
      // A refused record always carries a policy reason; `connect-failed` belongs to allowed ones.
      this.tally.refused(
        record.destination,
        record.reason === undefined || record.reason === 'connect-failed' ? 'run-ended' : record.reason,
      );
    }
    return this.line(record);
  }

  /** Takes one request to a host with rules: a refusal tallied, written under the same cap. */
  takeRequest(reported: RequestRecord): Omit<RequestRecord, 'redacted'> | undefined {
    const record = this.markers(reported);
    if (record.decision === 'refused') this.tally.refused(record.destination, 'request-refused');
    return this.line(record);
  }

  /** Security: past `maxLines` lines of either kind a record is only counted, so a script's loop cannot grow the log. */
  private line<T>(record: T): T | undefined {
    if (++this.lines <= this.maxLines) return record;
    this.totals.egress_unlogged += 1;
    return undefined;
  }

  /** What the run's result shows: every refusal counted, the first distinct ones listed. */
  summary(): EgressSummary {
    return this.tally.summary();
  }
}

/**
 * `SKILL_MCP_EGRESS_CA_FILE`'s text for the helper, or undefined (the system CAs). The runner
 * checked it at start (runner/secrets/trust.ts egressCaFileProblem); it is read again each run.
 */
export function upstreamCaFor(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const file = env['SKILL_MCP_EGRESS_CA_FILE'];
  if (file === undefined || file === '') return undefined;
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    // Named by its variable, never its path: the refusal reaches the model.
    throw new Error(`SKILL_MCP_EGRESS_CA_FILE could not be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/**
 * Gives `helper` its run and resolves once the run's socket listens. Rejects (the helper killed)
 * when it cannot. `onFailure` is called once if the helper fails later, while the run lasts.
 */
export async function startRunEgress(opts: {
  helper: RunHelper;
  audit: Pick<AuditLog, 'append'>;
  runId: string;
  entries: readonly string[];
  rules?: readonly EgressRuleSet[];
  secrets: readonly SecretBinding[];
  /** The run's values to redact (every bound secret's and legacy `env` secret's): the helper redacts its records and its words. */
  redact: readonly RedactionValue[];
  env: Readonly<Record<string, string | undefined>>;
  timeoutMs: number;
  requester?: string;
  maxAuditLines?: number;
  onFailure: (why: string) => void;
}): Promise<RunEgress> {
  const book = new EgressBook(opts.maxAuditLines);
  let failed: string | undefined;
  const upstreamCa = upstreamCaFor(opts.env);
  await opts.helper.start(
    {
      type: 'start',
      runId: opts.runId,
      entries: [...opts.entries],
      secrets: opts.secrets.map(({ name, hosts, header, format, placeholder, value }) => ({
        name,
        hosts,
        header,
        format,
        placeholder,
        value,
      })),
      redact: opts.redact.map(({ name, value }) => ({ name, value })),
      ...(opts.rules?.length ? { rules: [...opts.rules] } : {}),
      ...(upstreamCa !== undefined ? { upstreamCa } : {}),
      timeoutMs: opts.timeoutMs,
    },
    {
      onRecord(reported) {
        const record = book.take(reported);
        if (record === undefined) return;
        void opts.audit.append({
          event: 'egress',
          run_id: opts.runId,
          ...record,
          ...(opts.requester !== undefined ? { requester: opts.requester } : {}),
        });
      },
      onRequest(reported) {
        const record = book.takeRequest(reported);
        if (record !== undefined) void opts.audit.append({ event: 'egress.request', run_id: opts.runId, ...record });
      },
      onFailure(why) {
        failed = why;
        opts.onFailure(why);
      },
    },
  );
  return {
    get failed() {
      return failed;
    },
    async close(returns = false) {
      await opts.helper.close(returns);
      return { totals: book.totals, summary: book.summary(), redacted: book.redacted, ...(failed !== undefined ? { failed } : {}) };
    },
  };
}
