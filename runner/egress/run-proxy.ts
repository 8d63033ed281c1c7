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
import { upstreamCaPem, upstreamContext, writeCaBundle } from '../secrets/trust.js';
import { makeInterceptor, placeholderNeedles } from './intercept.js';
import type { Interceptor } from './intercept.js';
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

/** Where a run with secret bindings keeps what its proxy needs to intercept (issue 30, docs/secrets-proxy.md). */
export interface RunProxyIntercept {
  /** Where the bundle (system CAs + the run CA) is written; the sandbox gets it read-only (runner/secrets/trust.ts). */
  bundlePath: string;
  /** The run's timeout: the run CA is valid for it plus a margin. */
  timeoutMs: number;
  /** The runner's own environment (for `SKILL_MCP_EGRESS_CA_FILE`). */
  env: Readonly<Record<string, string | undefined>>;
}

/** The host part of each bound entry (`api.example.com:443` → `api.example.com`, `[::1]:8443` → `::1`), for the run CA. */
function boundHosts(bindings: readonly SecretBinding[]): string[] {
  return [...new Set(parseEgressList(bindings.flatMap((b) => b.hosts)).map((e) => `${e.wildcard ? '*.' : ''}${e.host}`))];
}

/**
 * The interceptor of a run with bindings: its CA (the X.509 code is loaded only now, for such a
 * run), its bundle written for the sandbox, and what the proxy verifies bound hosts against.
 */
async function interceptorFor(
  bindings: readonly SecretBinding[],
  intercept: RunProxyIntercept,
  connectTimeoutMs: number | undefined,
): Promise<Interceptor> {
  const { makeRunCa, CA_MARGIN_MS } = await import('../secrets/ca.js');
  const upstreamCa = upstreamCaPem(intercept.env);
  const context = upstreamContext(intercept.env);
  const hosts = boundHosts(bindings);
  const ca = await makeRunCa(hosts, intercept.timeoutMs + CA_MARGIN_MS);
  // Each named host's leaf is started now (cached by the CA), so it is made while the sandbox starts, not on the script's first request.
  for (const host of hosts.filter((h) => !h.startsWith('*.'))) ca.contextFor(host).catch(() => undefined);
  writeCaBundle(intercept.bundlePath, ca.certPem);
  return makeInterceptor({ bindings, ca, upstreamCa, upstreamContext: context, connectTimeoutMs: connectTimeoutMs ?? 10_000 });
}

export async function openRunProxy(opts: {
  socketPath: string;
  uid: number | undefined;
  entries: readonly string[];
  audit: AuditLog;
  runId: string;
  lookup?: Lookup;
  maxAuditLines?: number;
  /** Issue 30: the run's secrets, injected for their hosts; absent or empty, the proxy intercepts nothing and no bundle is written. */
  secrets?: readonly SecretBinding[];
  /** Issue 30: the run's redaction of text it chose (runner/secrets/redact.ts), for what its records carry. */
  redact?: (text: string) => string;
  /** Issue 30: required with secrets — where the bundle goes, and what the CA and the upstream check need. */
  intercept?: RunProxyIntercept;
  connectTimeoutMs?: number;
  /**
   * The run's requester (the verified subject when hosted, the OS user standalone), written on every
   * `egress` line like every other line about the run: an auditor reading whose credential a
   * connection carried needs no join with `run.accept`.
   */
  requester?: string;
}): Promise<RunProxy> {
  const maxLines = opts.maxAuditLines ?? MAX_EGRESS_AUDIT_LINES;
  const bindings = opts.secrets ?? [];
  // Never a run whose secrets silently go uninjected.
  if (bindings.length > 0 && !opts.intercept)
    throw new Error("openRunProxy: a run with secrets needs `intercept` (its bundle path, timeout and the runner's env)");
  const interceptor = bindings.length > 0 ? await interceptorFor(bindings, opts.intercept!, opts.connectTimeoutMs) : undefined;
  const totals: RunProxyTotals = { egress_allowed: 0, egress_refused: 0, egress_unlogged: 0 };
  let lines = 0;
  const tally = refusalTally();
  const proxy = await startEgressProxy({
    socketPath: opts.socketPath,
    entries: parseEgressList(opts.entries),
    ...(opts.lookup ? { lookup: opts.lookup } : {}),
    ...(opts.connectTimeoutMs !== undefined ? { connectTimeoutMs: opts.connectTimeoutMs } : {}),
    ...(interceptor ? { interceptor, placeholders: placeholderNeedles(bindings) } : {}),
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
      void opts.audit.append({
        event: 'egress',
        run_id: opts.runId,
        ...record,
        ...(opts.requester !== undefined ? { requester: opts.requester } : {}),
      });
    },
  });
  try {
    // Security: only the run's own uid may connect (root runner: the folder and socket are the run uid's, 0700/0600).
    chmodSync(opts.socketPath, 0o600);
    if (opts.uid !== undefined) chownSync(opts.socketPath, opts.uid, opts.uid);
  } catch (error) {
    await proxy.close();
    interceptor?.close();
    throw error;
  }
  return {
    async close() {
      await proxy.close();
      interceptor?.close();
      return { totals, summary: tally.summary() };
    },
  };
}
