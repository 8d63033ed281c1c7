/**
 * @module Prometheus metrics of the HTTP front (`--metrics-port`, prom-client), kept in a registry
 * of this server's own. Labels come from closed sets only — the JSON-RPC method (known names, else
 * `other`), the HTTP status code, a run result word, a refusal code from the list below — never a skill name, a path, an
 * argument, a token or anything else a client chose. Runner, ledger and catalog figures are read
 * when scraped.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { FrontContext } from '../context.js';
import { SERVER_INFO } from '../front.js';

/** The methods counted by name; anything else is `other`, a notification `notification`. */
const METHODS = new Set([
  'initialize',
  'ping',
  'server/discover',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/read',
  'resources/templates/list',
  'resources/directory/read',
  'prompts/list',
  'prompts/get',
  'skills/list',
  'skills/get',
  'completion/complete',
  'logging/setLevel',
]);

/** skill_run results (one kind of word: what the call came to); a refusal is `refused`, its code counted apart. */
const RUN_RESULTS = new Set(['completed', 'confirmation-required', 'cancelled', 'draft-changed', 'input-required']);

/** The refusal codes skill_run can answer with (the `code` label of skill_mcp_skill_run_refusals_total). */
const REFUSAL_CODES = new Set([
  'NOT_DECLARED',
  'NOT_GRANTED',
  'INTERPRETER_UNAVAILABLE',
  'ENVIRON_UNSCRUBBED',
  'RUNNER_UNAVAILABLE',
  'BUSY',
  'CANCELLED',
  'SANDBOX_UNAVAILABLE',
  'SANDBOX_FAILED',
  'CONFIRM_REFUSED',
  'CONFIG_MISMATCH',
  'AUTH_REQUIRED',
  'LEDGER_UNAVAILABLE',
  'TOKEN_INVALID',
  'TOKEN_EXPIRED',
  'TOKEN_REUSED',
  'DRAFT_CHANGED',
  'UNKNOWN_SKILL',
  'PEER_REFUSED',
  'BAD_REQUEST',
  'INTERNAL',
]);

/** How long a scrape waits for the runner's describe before calling it down. */
const RUNNER_PROBE_MS = 2000;

/** The method label for a request body (already read and capped by the adapter). */
export function methodLabel(body: unknown): string {
  if (Array.isArray(body)) return 'batch';
  const method = (body as { method?: unknown } | null)?.method;
  if (typeof method !== 'string') return 'other';
  if (method.startsWith('notifications/')) return 'notification';
  return METHODS.has(method) ? method : 'other';
}

/** The status label: the HTTP status code the server answered (a closed set: the server picks it). */
export function statusLabel(status: number): string {
  return Number.isInteger(status) && status >= 100 && status <= 599 ? String(status) : 'other';
}

/** What a skill_run call came to, and the refusal code when it was refused. */
function runResult(result: CallToolResult): { result: string; code?: string } {
  const value = result.structuredContent as { status?: unknown; error?: { code?: unknown } } | undefined;
  // The 2026-07-28 elicitation round: a question for the person, not a tool result yet.
  if (value === undefined && 'inputRequests' in result) return { result: 'input-required' };
  if (typeof value?.status === 'string' && RUN_RESULTS.has(value.status)) return { result: value.status };
  const code = value?.error?.code;
  if (typeof code === 'string') return { result: 'refused', code: REFUSAL_CODES.has(code) ? code : 'other' };
  return { result: 'other' };
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  return Promise.race([work.catch(() => undefined), new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), ms).unref())]);
}

export class HttpMetrics {
  readonly registry = new Registry();
  readonly #requests: Counter<'method' | 'status'>;
  readonly #latency: Histogram<'method'>;
  readonly #runs: Counter<'result'>;
  readonly #refusals: Counter<'code'>;
  readonly #ledgerErrors: Counter;
  readonly #fastPath: Counter<'method'>;

  constructor(front: FrontContext) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'skill_mcp_' });
    new Gauge({
      name: 'skill_mcp_build_info',
      help: 'Always 1: the version of skill-mcp and of Node.js serving',
      labelNames: ['version', 'node_version'],
      registers,
    }).set({ version: SERVER_INFO.version, node_version: process.version }, 1);
    this.#requests = new Counter({
      name: 'skill_mcp_http_requests_total',
      help: 'HTTP requests to /mcp by JSON-RPC method (unread: refused before the body was read) and HTTP status code',
      labelNames: ['method', 'status'],
      registers,
    });
    this.#latency = new Histogram({
      name: 'skill_mcp_http_request_duration_seconds',
      help: 'Time from request to the end of the response, by JSON-RPC method',
      labelNames: ['method'],
      registers,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    });
    this.#runs = new Counter({
      name: 'skill_mcp_skill_run_total',
      help: 'skill_run calls by what they came to: completed, confirmation-required, cancelled, draft-changed, input-required or refused',
      labelNames: ['result'],
      registers,
    });
    this.#refusals = new Counter({
      name: 'skill_mcp_skill_run_refusals_total',
      help: 'Refused skill_run calls by refusal code (NOT_GRANTED, TOKEN_REUSED, BUSY, ...)',
      labelNames: ['code'],
      registers,
    });
    this.#ledgerErrors = new Counter({
      name: 'skill_mcp_ledger_errors_total',
      help: 'skill_run calls refused because the spent-token ledger could not be reached (LEDGER_UNAVAILABLE)',
      registers,
    });
    this.#fastPath = new Counter({
      name: 'skill_mcp_http_fast_path_total',
      help: 'Requests to /mcp answered by the fast path (http/fast-path.ts) instead of the SDK handler, by JSON-RPC method',
      labelNames: ['method'],
      registers,
    });
    new Gauge({
      name: 'skill_mcp_runner_up',
      help: '1 when the runner answers describe, else 0',
      registers,
      async collect() {
        this.set((await withTimeout(front.runner.describe(), RUNNER_PROBE_MS)) ? 1 : 0);
      },
    });
    const ledger = () => withTimeout(front.runner.describe(), RUNNER_PROBE_MS).then((d) => d?.ledger);
    new Gauge({
      name: 'skill_mcp_ledger_available',
      help: "1 when the runner's spent-token ledger answers, by kind (file, redis)",
      labelNames: ['kind'],
      registers,
      async collect() {
        this.reset();
        const status = await ledger();
        if (status) this.set({ kind: status.kind }, status.available ? 1 : 0);
      },
    });
    new Counter({
      name: 'skill_mcp_runner_ledger_errors_total',
      help: "Ledger operations that failed in the runner since it started (the runner's own count; resets when the runner restarts)",
      registers,
      async collect() {
        this.reset();
        this.inc((await ledger())?.errors ?? 0);
      },
    });
    new Gauge({
      name: 'skill_mcp_runner_isolation_info',
      help: 'Always 1 while the runner answers: the isolation level its runs get (namespace-uid, namespace, uid-sandbox, uid, same-uid)',
      labelNames: ['level'],
      registers,
      async collect() {
        this.reset();
        const described = await withTimeout(front.runner.describe(), RUNNER_PROBE_MS);
        if (described) this.set({ level: described.isolation.level }, 1);
      },
    });
    // The runner's own counts (runner/requests/stats.ts), read through describe at each scrape.
    const runs = () => withTimeout(front.runner.describe(), RUNNER_PROBE_MS).then((d) => d?.runs);
    new Counter({
      name: 'skill_mcp_runner_runs_total',
      help: "Accepted runs that ended, by how: exit, timeout, cancelled, spawn-failed, error (the runner's own count; resets when the runner restarts)",
      labelNames: ['ending'],
      registers,
      async collect() {
        this.reset();
        for (const [ending, n] of Object.entries((await runs())?.ended ?? {})) this.inc({ ending }, n);
      },
    });
    new Counter({
      name: 'skill_mcp_runner_refusals_total',
      help: "Run requests the runner refused before anything ran, by reason (the audit's run.reject reason)",
      labelNames: ['reason'],
      registers,
      async collect() {
        this.reset();
        for (const [reason, n] of Object.entries((await runs())?.refused ?? {})) this.inc({ reason }, n);
      },
    });
    new Counter({
      name: 'skill_mcp_runner_reaps_total',
      help: "Reaps of a run's leftover processes after it ended",
      registers,
      async collect() {
        this.reset();
        this.inc((await runs())?.reaps ?? 0);
      },
    });
    new Counter({
      name: 'skill_mcp_runner_reap_seconds_total',
      help: "Time spent reaping runs' leftover processes (divide by skill_mcp_runner_reaps_total for the mean)",
      registers,
      async collect() {
        this.reset();
        this.inc((await runs())?.reapSeconds ?? 0);
      },
    });
    new Gauge({
      name: 'skill_mcp_runner_runs_active',
      help: 'Runs the runner holds now, by state: running, or queued waiting for a slot',
      labelNames: ['state'],
      registers,
      async collect() {
        this.reset();
        const now = await runs();
        if (now) {
          this.set({ state: 'running' }, now.running);
          this.set({ state: 'queued' }, now.queued);
        }
      },
    });
    new Gauge({
      name: 'skill_mcp_catalog_skills',
      help: 'Skills served, by whether they are published in skill:// (strict hosts)',
      labelNames: ['published'],
      registers,
      collect() {
        const skills = front.catalog.skills();
        const published = skills.filter((s) => s.published).length;
        this.set({ published: 'true' }, published);
        this.set({ published: 'false' }, skills.length - published);
      },
    });
    new Gauge({
      name: 'skill_mcp_catalog_problems',
      help: 'Problems found while scanning the skill folders',
      registers,
      collect() {
        this.set(front.catalog.problems.length);
      },
    });
  }

  request(method: string, status: number, seconds: number): void {
    this.#requests.inc({ method, status: statusLabel(status) });
    this.#latency.observe({ method }, seconds);
  }

  /** A request the fast path answered (`method`: resources/read or skills/list, a closed set). */
  fastPath(method: string): void {
    this.#fastPath.inc({ method: methodLabel({ method }) });
  }

  /** Hears every tool result the factory hands out; counts skill_run's. */
  toolResult(tool: string, result: CallToolResult): void {
    if (tool !== 'skill_run') return;
    const { result: word, code } = runResult(result);
    this.#runs.inc({ result: word });
    if (code !== undefined) this.#refusals.inc({ code });
    if (code === 'LEDGER_UNAVAILABLE') this.#ledgerErrors.inc();
  }
}

/**
 * The method label of a request the handler is about to serve: its `Mcp-Method` header
 * (2026-07-28), else its body's (`body`: the parsed JSON body, or undefined when it is not JSON).
 */
export function methodOfRequest(headers: Headers, body: unknown): string {
  const header = headers.get('mcp-method');
  return methodLabel(header !== null ? { method: header } : body);
}
