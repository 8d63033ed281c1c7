/**
 * @module Prometheus metrics of the HTTP front (`--metrics-port`, prom-client), kept in a registry
 * of this server's own. Labels come from closed sets only — the JSON-RPC method (known names, else
 * `other`), an outcome word, a refusal code from the list below — never a skill name, a path, an
 * argument, a token or anything else a client chose. Runner, ledger and catalog figures are read
 * when scraped.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { FrontContext } from '../context.js';

/** The methods counted by name; anything else is `other`, a notification `notification`. */
const METHODS = new Set([
  'initialize', 'ping', 'server/discover', 'tools/list', 'tools/call', 'resources/list', 'resources/read', 'resources/templates/list',
  'resources/directory/read', 'prompts/list', 'prompts/get', 'skills/list', 'skills/get', 'completion/complete', 'logging/setLevel',
]);

/** skill_run outcomes: its statuses, and the refusal codes it can answer with. */
const RUN_OUTCOMES = new Set([
  'completed', 'confirmation-required', 'cancelled', 'draft-changed', 'input-required',
  'NOT_DECLARED', 'NOT_GRANTED', 'INTERPRETER_UNAVAILABLE', 'ENVIRON_UNSCRUBBED', 'RUNNER_UNAVAILABLE', 'BUSY', 'CANCELLED',
  'SANDBOX_UNAVAILABLE', 'CONFIRM_REFUSED', 'CONFIG_MISMATCH', 'AUTH_REQUIRED', 'LEDGER_UNAVAILABLE', 'TOKEN_INVALID', 'TOKEN_EXPIRED',
  'TOKEN_REUSED', 'DRAFT_CHANGED', 'UNKNOWN_SKILL', 'PEER_REFUSED', 'BAD_REQUEST', 'INTERNAL',
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

/** The outcome label of an HTTP status. */
export function outcomeOf(status: number): string {
  if (status < 400) return 'ok';
  const named: Record<number, string> = { 401: 'unauthorized', 403: 'forbidden', 404: 'not_found', 405: 'method_not_allowed', 408: 'timeout', 413: 'too_large' };
  return named[status] ?? (status < 500 ? 'client_error' : 'server_error');
}

function runOutcome(result: CallToolResult): string {
  const value = result.structuredContent as { status?: unknown; error?: { code?: unknown } } | undefined;
  // The 2026-07-28 elicitation round: a question for the person, not a tool result yet.
  if (value === undefined && 'inputRequests' in result) return 'input-required';
  const word = typeof value?.status === 'string' ? value.status : value?.error?.code;
  return typeof word === 'string' && RUN_OUTCOMES.has(word) ? word : 'other';
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  return Promise.race([work.catch(() => undefined), new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), ms).unref())]);
}

export class HttpMetrics {
  readonly registry = new Registry();
  readonly #requests: Counter<'method' | 'outcome'>;
  readonly #latency: Histogram<'method'>;
  readonly #runs: Counter<'outcome'>;
  readonly #ledgerErrors: Counter;

  constructor(front: FrontContext) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'skill_mcp_' });
    this.#requests = new Counter({ name: 'skill_mcp_http_requests_total', help: 'MCP HTTP requests by JSON-RPC method and outcome (unread: refused before the body was read)', labelNames: ['method', 'outcome'], registers });
    this.#latency = new Histogram({
      name: 'skill_mcp_http_request_duration_seconds', help: 'Time from request to the end of the response, by JSON-RPC method', labelNames: ['method'], registers,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    });
    this.#runs = new Counter({ name: 'skill_mcp_skill_run_total', help: 'skill_run calls by outcome: a status (completed, confirmation-required, ...) or the refusal code', labelNames: ['outcome'], registers });
    this.#ledgerErrors = new Counter({ name: 'skill_mcp_ledger_errors_total', help: 'skill_run calls refused because the spent-token ledger could not be reached (LEDGER_UNAVAILABLE)', registers });
    new Gauge({
      name: 'skill_mcp_runner_up', help: '1 when the runner answers describe, else 0', registers,
      async collect() {
        this.set((await withTimeout(front.runner.describe(), RUNNER_PROBE_MS)) ? 1 : 0);
      },
    });
    const ledger = () => withTimeout(front.runner.describe(), RUNNER_PROBE_MS).then((d) => d?.ledger);
    new Gauge({
      name: 'skill_mcp_ledger_available', help: "1 when the runner's spent-token ledger answers, by kind (file, redis)", labelNames: ['kind'], registers,
      async collect() {
        this.reset();
        const status = await ledger();
        if (status) this.set({ kind: status.kind }, status.available ? 1 : 0);
      },
    });
    new Gauge({
      name: 'skill_mcp_runner_ledger_errors', help: "Ledger operations that failed in the runner since it started (the runner's own count)", registers,
      async collect() {
        this.set((await ledger())?.errors ?? 0);
      },
    });
    new Gauge({
      name: 'skill_mcp_catalog_skills', help: 'Skills served, by whether they are published in skill:// (strict hosts)', labelNames: ['published'], registers,
      collect() {
        const skills = front.catalog.skills();
        const published = skills.filter((s) => s.published).length;
        this.set({ published: 'true' }, published);
        this.set({ published: 'false' }, skills.length - published);
      },
    });
    new Gauge({
      name: 'skill_mcp_catalog_problems', help: 'Problems found while scanning the skill folders', registers,
      collect() {
        this.set(front.catalog.problems.length);
      },
    });
  }

  request(method: string, status: number, seconds: number): void {
    this.#requests.inc({ method, outcome: outcomeOf(status) });
    this.#latency.observe({ method }, seconds);
  }

  /** Hears every tool result the factory hands out; counts skill_run's. */
  toolResult(tool: string, result: CallToolResult): void {
    if (tool !== 'skill_run') return;
    const outcome = runOutcome(result);
    this.#runs.inc({ outcome });
    if (outcome === 'LEDGER_UNAVAILABLE') this.#ledgerErrors.inc();
  }
}

/** Bodies larger than this are not parsed again just for a label (they are `other`). */
const MAX_LABEL_PARSE_BYTES = 256 * 1024;

/** The method label of a request the handler is about to serve: its `Mcp-Method` header (2026-07-28), else its body's. */
export async function methodOfRequest(request: Request): Promise<string> {
  const header = request.headers.get('mcp-method');
  if (header !== null) return methodLabel({ method: header });
  if (Number(request.headers.get('content-length') ?? Infinity) > MAX_LABEL_PARSE_BYTES) return 'other';
  try {
    return methodLabel(await request.clone().json());
  } catch {
    return 'other';
  }
}
