/**
 * @module What a run's egress becomes at this machine's isolation level (docs/isolation.md,
 * "Egress"), decided by the same function for the preview and the spawn:
 *
 * - `proxy` (namespace, namespace-uid): the run's own network namespace has only a loopback; a
 *   per-run proxy holds the allowlist and is the only way out.
 * - `unavailable` (uid-sandbox, or no node for the bridge): the run has a network namespace of its
 *   own and nothing in it — it reaches nothing, declared or not. Fails closed; the preview says so.
 * - `unenforced` (uid, same-uid): no network namespace; the script shares the host's network and can
 *   reach anything. Nothing enforces the list; the preview says so.
 * - `none`: no destination granted. Namespace levels: no network at all.
 */
import { PROXY_ENV } from '../../shared/env.js';
import type { EgressRuleSet } from '../../shared/egress-rules.js';
import type { IsolationLevel } from '../../shared/protocol.js';
import type { Platform } from '../sandbox/platform.js';
import { PROXY_URL } from './bridge.js';

export type EgressMode = 'none' | 'proxy' | 'unavailable' | 'unenforced';

export interface EgressPlan {
  mode: EgressMode;
  /** The granted destinations (canonical entries, sorted). */
  entries: string[];
  /** The request rules of the entries with rules (shared/egress-rules.ts); the helper terminates TLS for those hosts. */
  rules?: EgressRuleSet[];
  /** Proxy variables to set (a string, possibly empty) or to drop (null), over the host's. */
  env: Record<string, string | null>;
  /** For the preview when the list is not what limits the run. */
  note?: string;
}

/** Levels whose runs have a network namespace of their own. */
function hasNetns(level: IsolationLevel): boolean {
  return level === 'namespace' || level === 'namespace-uid' || level === 'uid-sandbox';
}

/**
 * `bwrap`: whether runs at this level go through bubblewrap (where the bridge can be bound in);
 * `bridgeNode`: whether a node the run can execute exists for the bridge.
 */
export function planEgress(level: IsolationLevel, bwrap: boolean, bridgeNode: boolean, entries: readonly string[]): EgressPlan {
  const sorted = [...entries].sort();
  const dropAll = Object.fromEntries(PROXY_ENV.map((name) => [name, null]));
  if (sorted.length > 0 && bwrap && bridgeNode) {
    const env: Record<string, string | null> = { ...dropAll };
    for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'all_proxy']) env[name] = PROXY_URL;
    // Empty: nothing bypasses the proxy (the run's only way out; a bypassed host would fail).
    env['NO_PROXY'] = '';
    env['no_proxy'] = '';
    // Node 22.21+ and 24.5+ then send fetch() and http/https through the proxy; older ones ignore it.
    env['NODE_USE_ENV_PROXY'] = '1';
    return { mode: 'proxy', entries: sorted, env };
  }
  // Security: in a namespace of its own the host's proxy is unreachable, so its variables (which
  // may carry the host proxy's credentials) would only leak; they are never passed.
  const env = hasNetns(level) ? dropAll : {};
  if (sorted.length === 0) return { mode: 'none', entries: [], env };
  if (hasNetns(level)) {
    const why = bwrap
      ? 'no node interpreter the sandbox can run for its proxy bridge'
      : 'declared egress needs the bubblewrap sandbox (install bubblewrap)';
    return {
      mode: 'unavailable',
      entries: sorted,
      env,
      note: `Not reachable at this isolation level (${level}): the run has a network namespace of its own with nothing in it (${why}), so it reaches none of these destinations.`,
    };
  }
  return {
    mode: 'unenforced',
    entries: sorted,
    env,
    note: `Not enforced at this isolation level (${level}): the script shares this machine's network and can reach any host, not only these.`,
  };
}

/** The node a proxied run's bridge runs on (the resolved `node` interpreter, visible inside the sandbox), if any. */
export function bridgeNode(platform: Platform): string | undefined {
  const node = platform.interpreters.get('node');
  return node && 'path' in node ? node.path : undefined;
}

/** The standalone self-grant warning for egress (like envWarning), or undefined. */
export function egressSelfGrantWarning(entries: readonly string[]): string | undefined {
  if (entries.length === 0) return undefined;
  return `No owner grant (standalone): this third-party script may connect to ${entries.join(', ')} because its own SKILL.md asks for ${entries.length > 1 ? 'them' : 'it'}.`;
}
