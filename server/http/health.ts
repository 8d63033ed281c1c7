/**
 * @module `/healthz` and `/readyz` (docs/http.md, "Health"): alive, and ready to serve what this
 * front is configured for — the catalog loaded; the runner, when one is configured, reachable and
 * agreeing on the configuration (roots, mode, grant); its token ledger (Redis, when configured)
 * available. JSON bodies; 200 when ready, 503 when not. Nothing in them is secret or a host path.
 * Each change of readiness is told to stderr once, with what differs on a configuration mismatch.
 */
import type { FrontContext } from '../context.js';

export interface Check {
  ok: boolean;
  [detail: string]: unknown;
}

export interface Readiness {
  ready: boolean;
  checks: { catalog: Check; runner: Check; ledger?: Check };
}

/** How long /readyz waits for the runner before calling it unreachable. */
const RUNNER_PROBE_MS = 3_000;
/** The same for a runner this front's launcher starts on demand (its start-up is part of the wait). */
const SELF_STARTED_PROBE_MS = 20_000;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the runner did not answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

export async function readiness(front: FrontContext): Promise<Readiness> {
  const catalog: Check = { ok: true, skills: front.catalog.skills().length, problems: front.catalog.problems.length };
  if (!front.runner.configured)
    return {
      ready: true,
      checks: {
        catalog,
        runner: { ok: true, configured: false, detail: 'no runner is configured: skills are served, skill_run is refused' },
      },
    };
  try {
    // Asked afresh every time (not the link's briefly cached description): a runner that just stopped is not ready.
    // A runner this front starts itself may be starting now: give it the link's own deadline.
    const answer = await withTimeout(
      front.runner.send((client) => client.describe([]), { idempotent: true }),
      front.runner.selfStarted ? SELF_STARTED_PROBE_MS : RUNNER_PROBE_MS,
    );
    if (!answer.ok)
      return { ready: false, checks: { catalog, runner: { ok: false, configured: true, reachable: true, detail: answer.error.message } } };
    const described = answer.result;
    const mismatch = described.configMismatch;
    const runner: Check = mismatch
      ? { ok: false, configured: true, reachable: true, configMismatch: mismatch.differs, detail: mismatch.message }
      : { ok: true, configured: true, reachable: true, isolation: described.isolation.level };
    const ledger: Check | undefined = described.ledger
      ? { ok: described.ledger.available, kind: described.ledger.kind, errors: described.ledger.errors }
      : undefined;
    return { ready: runner.ok && (ledger?.ok ?? true), checks: { catalog, runner, ...(ledger ? { ledger } : {}) } };
  } catch (error) {
    return {
      ready: false,
      checks: {
        catalog,
        runner: { ok: false, configured: true, reachable: false, detail: error instanceof Error ? error.message : String(error) },
      },
    };
  }
}

/** One line for stderr saying what is not ready (or that it is ready again). */
export function describeReadiness(state: Readiness): string {
  if (state.ready)
    return `ready: catalog loaded${state.checks.runner['configured'] === false ? '; no runner configured (reads only)' : '; runner reachable with the same configuration'}`;
  const { runner, ledger } = state.checks;
  if (runner['configMismatch'])
    return `not ready: CONFIG_MISMATCH with the runner (differs: ${(runner['configMismatch'] as string[]).join(', ')}): ${String(runner['detail'])}`;
  if (!runner.ok) return `not ready: the runner is not reachable: ${String(runner['detail'])}`;
  return `not ready: the runner's token ledger (${String(ledger?.['kind'])}) is not available`;
}

/** The two routes; readiness changes are reported through `warn` (the first check included). */
export function healthRoutes(front: FrontContext, warn: (message: string) => void) {
  let last: string | undefined;
  const report = (state: Readiness): void => {
    const line = describeReadiness(state);
    if (line !== last) warn(line);
    last = line;
  };
  return {
    paths: new Set(['/healthz', '/readyz']),
    async answer(pathname: string, method: string): Promise<Response> {
      if (method !== 'GET' && method !== 'HEAD') return new Response(null, { status: 405, headers: { allow: 'GET, HEAD' } });
      if (pathname === '/healthz') return Response.json({ status: 'alive' }, { headers: { 'cache-control': 'no-store' } });
      const state = await readiness(front);
      report(state);
      return Response.json(state, { status: state.ready ? 200 : 503, headers: { 'cache-control': 'no-store' } });
    },
    /**
     * The check at start: a front whose operator-run runner is missing or disagrees says so on
     * stderr at once. A runner this front's launcher starts on first use is not woken for it.
     */
    async atStart(): Promise<void> {
      if (front.runner.selfStarted) return;
      report(await readiness(front));
    },
  };
}
