/**
 * @module One run's egress proxy, from its socket to its audit lines: made in the run's own folder
 * (0700, owned by the run's uid), reachable by that uid only, closed when the run ends — and every
 * connection written to the audit log as an `egress` line before the run's `run.exit`, and counted
 * for the run's result (refusals.ts), which tells the model what was refused and why.
 */
import { chmodSync, chownSync } from 'node:fs';
import { parseEgressList } from '../../shared/egress.js';
import type { EgressSummary } from '../../shared/protocol.js';
import type { AuditLog } from '../audit/log.js';
import type { SecretBinding } from '../secrets/binding.js';
import type { Lookup } from './policy.js';
import { startEgressProxy } from './proxy.js';
import { refusalTally } from './refusals.js';

/** Longest unix socket path Linux accepts (sun_path is 108 bytes with its NUL). */
export const MAX_SOCKET_PATH_BYTES = 107;
/** Audit lines one run may write about its connections; past it they are only counted (in `run.exit`). */
export const MAX_EGRESS_AUDIT_LINES = 1000;

export interface RunProxyTotals {
  egress_allowed: number;
  egress_refused: number;
  /** Connections beyond {@link MAX_EGRESS_AUDIT_LINES}, counted but not written one by one. */
  egress_unlogged: number;
}

export interface RunProxy {
  /** Cuts every connection, writes their lines, and returns the run's totals (for `run.exit`) and its summary (for the result). */
  close(): Promise<{ totals: RunProxyTotals; summary: EgressSummary }>;
}

/** Why a socket path cannot be used, or undefined. */
export function socketPathProblem(path: string): string | undefined {
  if (Buffer.byteLength(path) <= MAX_SOCKET_PATH_BYTES) return undefined;
  return `the run's egress socket path would be ${Buffer.byteLength(path)} bytes, over the ${MAX_SOCKET_PATH_BYTES} a unix socket allows; set a shorter SKILL_MCP_SCRATCH_DIR`;
}

export async function openRunProxy(opts: {
  socketPath: string; uid: number | undefined; entries: readonly string[]; audit: AuditLog; runId: string; lookup?: Lookup; maxAuditLines?: number;
  /** Issue 30: the run's secrets, injected for their hosts (not yet used). */
  secrets?: readonly SecretBinding[];
  /** Issue 30: the run's redaction of text it chose (runner/secrets/redact.ts), for what its records carry. */
  redact?: (text: string) => string;
}): Promise<RunProxy> {
  const maxLines = opts.maxAuditLines ?? MAX_EGRESS_AUDIT_LINES;
  const totals: RunProxyTotals = { egress_allowed: 0, egress_refused: 0, egress_unlogged: 0 };
  let lines = 0;
  const tally = refusalTally();
  const proxy = await startEgressProxy({
    socketPath: opts.socketPath,
    entries: parseEgressList(opts.entries),
    ...(opts.lookup ? { lookup: opts.lookup } : {}),
    onRecord(seen) {
      // Security: the destination and method are the script's own text: a value it holds (say, as a
      // host name's first label) must reach neither the audit log nor the result.
      const redact = opts.redact;
      const record = redact ? { ...seen, destination: redact(seen.destination), method: redact(seen.method) } : seen;
      if (record.decision === 'allowed') {
        totals.egress_allowed += 1;
        tally.allowed();
      } else {
        totals.egress_refused += 1;
        // A refused record always carries a policy reason; `connect-failed` belongs to allowed ones.
        tally.refused(record.destination, record.reason === undefined || record.reason === 'connect-failed' ? 'run-ended' : record.reason);
      }
      // Security: a script looping on refused connections cannot grow the log without bound.
      if (lines >= maxLines) {
        totals.egress_unlogged += 1;
        return;
      }
      lines += 1;
      void opts.audit.append({ event: 'egress', run_id: opts.runId, ...record });
    },
  });
  try {
    // Security: only the run's own uid may connect (root runner: the folder and socket are the run uid's, 0700/0600).
    chmodSync(opts.socketPath, 0o600);
    if (opts.uid !== undefined) chownSync(opts.socketPath, opts.uid, opts.uid);
  } catch (error) {
    await proxy.close();
    throw error;
  }
  return {
    async close() {
      await proxy.close();
      return { totals, summary: tally.summary() };
    },
  };
}
