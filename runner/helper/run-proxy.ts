/**
 * @module One run's egress proxy inside its helper (docs/isolation.md, "Egress"): listening on the
 * socket the run's sandbox binds in, with the run's CA for its secrets' hosts, every connection
 * handed to `onRecord` (the helper sends it to the runner, which redacts it, writes its `egress`
 * line and tallies it for the run's result: runner/egress/run-egress.ts).
 */
import { chmodSync } from 'node:fs';
import { parseEgressList } from '../../shared/egress.js';
import type { EgressRuleSet } from '../../shared/egress-rules.js';
import type { EgressRecord, RequestRecord } from '../egress/helper-protocol.js';
import type { SecretBinding } from '../secrets/binding.js';
import { makeInterceptor, placeholderNeedles } from './intercept.js';
import type { Interceptor } from './intercept.js';
import type { Lookup } from './policy.js';
import { startEgressProxy } from './proxy.js';
import { upstreamContext, writeCaBundle } from './trust.js';

export interface RunProxy {
  /** Cuts every connection (each reported through `onRecord`). */
  close(): Promise<void>;
}

/** What a run with secret bindings needs to intercept (docs/secrets-proxy.md). */
export interface RunProxyIntercept {
  /** Where the bundle (system CAs + the run CA) is written; the sandbox gets it read-only. */
  bundlePath: string;
  /** The run's timeout: the run CA is valid for it plus a margin. */
  timeoutMs: number;
  /** The operator's upstream CAs (`SKILL_MCP_EGRESS_CA_FILE`, read by the runner); absent: the system CAs. */
  upstreamCa?: string;
}

/** The host part of each intercepted entry (`api.example.com:443` → `api.example.com`, `[::1]:8443` → `::1`), for the run CA. */
function interceptedHosts(entries: readonly string[]): string[] {
  return [...new Set(parseEgressList(entries).map((e) => `${e.wildcard ? '*.' : ''}${e.host}`))];
}

/**
 * The interceptor of a run with bindings: its CA (the X.509 code is loaded only now, for such a
 * run), its bundle written for the sandbox, and what the proxy verifies bound hosts against.
 */
async function interceptorFor(
  bindings: readonly SecretBinding[],
  rules: readonly EgressRuleSet[],
  intercept: RunProxyIntercept,
  connectTimeoutMs: number | undefined,
  onRequest: (record: RequestRecord) => void,
): Promise<Interceptor> {
  const { makeRunCa, CA_MARGIN_MS } = await import('./ca.js');
  const context = upstreamContext(intercept.upstreamCa);
  const hosts = interceptedHosts([...bindings.flatMap((b) => b.hosts), ...rules.map((r) => r.entry)]);
  const ca = await makeRunCa(hosts, intercept.timeoutMs + CA_MARGIN_MS);
  // Each named host's leaf is started now (cached by the CA), so it is made while the sandbox starts, not on the script's first request.
  for (const host of hosts.filter((h) => !h.startsWith('*.'))) ca.contextFor(host).catch(() => undefined);
  writeCaBundle(intercept.bundlePath, ca.certPem);
  return makeInterceptor({
    bindings,
    rules,
    onRequest,
    ca,
    ...(intercept.upstreamCa !== undefined ? { upstreamCa: intercept.upstreamCa } : {}),
    upstreamContext: context,
    connectTimeoutMs: connectTimeoutMs ?? 10_000,
  });
}

export async function openRunProxy(opts: {
  socketPath: string;
  entries: readonly string[];
  /** Every connection, once, when it ends (or when the proxy closes). */
  onRecord: (record: EgressRecord) => void;
  /** Every request to a host with rules, once decided and done. */
  onRequest?: (record: RequestRecord) => void;
  /** The request rules of the run's entries that have them: those hosts are intercepted like bound ones. */
  rules?: readonly EgressRuleSet[];
  lookup?: Lookup;
  /** The run's secrets, injected for their hosts; absent or empty, the proxy intercepts nothing and no bundle is written. */
  secrets?: readonly SecretBinding[];
  /** Required with secrets. */
  intercept?: RunProxyIntercept;
  connectTimeoutMs?: number;
}): Promise<RunProxy> {
  const bindings = opts.secrets ?? [];
  const rules = opts.rules ?? [];
  const onRequest = opts.onRequest ?? (() => undefined);
  // Never a run whose secrets silently go uninjected, nor one whose rules go unchecked.
  if (bindings.length + rules.length > 0 && !opts.intercept)
    throw new Error('openRunProxy: a run with secrets or request rules needs `intercept` (its bundle path and timeout)');
  const interceptor =
    bindings.length + rules.length > 0
      ? await interceptorFor(bindings, rules, opts.intercept!, opts.connectTimeoutMs, onRequest)
      : undefined;
  const proxy = await startEgressProxy({
    socketPath: opts.socketPath,
    entries: parseEgressList(opts.entries),
    ...(opts.lookup ? { lookup: opts.lookup } : {}),
    ...(opts.connectTimeoutMs !== undefined ? { connectTimeoutMs: opts.connectTimeoutMs } : {}),
    ...(interceptor ? { interceptor, placeholders: placeholderNeedles(bindings) } : {}),
    rules,
    onRequest,
    onRecord: opts.onRecord,
  });
  try {
    // Security: the run's own uid reaches it through the group of the helper's folder (root) or the
    // folder's owner (an ordinary user): no one else can enter that folder (runner/egress/helper-link.ts).
    chmodSync(opts.socketPath, 0o660);
  } catch (error) {
    await proxy.close();
    interceptor?.close();
    throw error;
  }
  return {
    async close() {
      await proxy.close();
      interceptor?.close();
    },
  };
}
