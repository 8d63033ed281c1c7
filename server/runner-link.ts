/**
 * @module The front's view of its runner: where it is, how to wake it, and a short-lived cache of
 * its `describe` answer (which `skill_list` shows). The front never spawns anything: in standalone
 * mode the launcher hands it a `wake` function that asks the supervisor to start the runner; in
 * hosted mode the runner is someone else's and may simply be absent, which only `skill_run` feels.
 */
import { SkillMcpError } from '../shared/errors.js';
import type { ConfigView } from '../shared/config-view.js';
import type { DescribeResult, Identity } from '../shared/protocol.js';
import type { RunnerClient } from './runner-client.js';

export interface RunnerLinkOptions {
  /** Absent: no runner is configured (hosted without SKILL_MCP_RUNNER_SOCKET). */
  socketPath?: string;
  /** Why there is no runner, for refusals. */
  missingWhy?: string;
  /** Standalone: asks the supervisor to start the runner; resolves when it is listening. */
  wake?: () => Promise<void>;
  /** Standalone: how many times the runner died and was restarted (reported, never hidden). */
  restarts?: () => number;
  /** The secret the runner expects in each hello: the launcher's per-instance one, or the operator's file. */
  frontSecret?: string;
}

const DESCRIBE_TTL_MS = 2_000;

/** Connection failures where the request never reached a runner: safe to send again. */
const NEVER_REACHED = new Set(['ECONNREFUSED', 'ENOENT']);
/** Failures where a runner may have read the request and died: safe to resend only if idempotent. */
const LOST = new Set(['ECONNRESET', 'EPIPE']);

function unreached(error: unknown, idempotent: boolean): boolean {
  if (!(error instanceof SkillMcpError) || error.code !== 'RUNNER_UNAVAILABLE') return false;
  const code = (error.cause as NodeJS.ErrnoException | undefined)?.code ?? '';
  if (NEVER_REACHED.has(code)) return true;
  return idempotent && (LOST.has(code) || /closed the connection without answering/.test(error.message));
}

export class RunnerLink {
  #options: RunnerLinkOptions;
  #view: () => ConfigView;
  #client: Promise<RunnerClient> | undefined;
  #described: { at: number; key: string; value: Promise<DescribeResult> } | undefined;
  /**
   * Whether `wake` resolved since the last request that found no runner listening. Woken, a
   * request goes straight to the socket: `wake` proves the runner listens by connecting, and that
   * probe cost every prepare and run an extra connection to the runner (bench/run-floor.mjs).
   */
  #awake = false;

  constructor(options: RunnerLinkOptions, view: () => ConfigView) {
    this.#options = options;
    this.#view = view;
  }

  /** The client, after making sure the runner was asked to start; throws RUNNER_UNAVAILABLE. */
  async ready(): Promise<RunnerClient> {
    const { socketPath, frontSecret } = this.#options;
    if (!socketPath) {
      throw new SkillMcpError(
        'RUNNER_UNAVAILABLE',
        `no runner is configured, so no script can run: ${this.#options.missingWhy ?? 'set SKILL_MCP_RUNNER_SOCKET to the runner socket'}. Reading skills still works.`,
      );
    }
    if (!this.#awake) {
      await this.#options.wake?.();
      this.#awake = true;
    }
    // Loaded on first use: the runner protocol's schemas and the msgpack codec cost the first
    // answer ~15 ms of start-up (bench/RESULTS.md), and many sessions never reach the runner.
    this.#client ??= import('./runner-client.js').then(
      ({ RunnerClient }) => new RunnerClient(socketPath, { view: this.#view, frontSecret }),
    );
    return this.#client;
  }

  /**
   * Sends one request. In standalone mode a runner that just died is being restarted by the
   * guard, and the first request after its death can still race the dying socket (it connects,
   * then is reset): then this waits for the new runner and sends once more. Only a request that
   * never reached a runner, or an idempotent one (describe, prepare, cancel), is sent again — never
   * a `run` the old runner may have started.
   */
  async send<T>(request: (client: RunnerClient) => Promise<T>, options: { idempotent: boolean }): Promise<T> {
    // A request that changes the runner's state (a run, a data folder cleared) ends the cached
    // describe once it has answered: a skill_list after its answer shows what it left (the data
    // folder's usage), never the figures from before it.
    if (!options.idempotent) return this.#sendChanging(request);
    return this.#send(request, options);
  }

  async #sendChanging<T>(request: (client: RunnerClient) => Promise<T>): Promise<T> {
    try {
      return await this.#send(request, { idempotent: false });
    } finally {
      this.#described = undefined;
    }
  }

  async #send<T>(request: (client: RunnerClient) => Promise<T>, options: { idempotent: boolean }): Promise<T> {
    const client = await this.ready();
    try {
      return await request(client);
    } catch (error) {
      if (!this.#options.wake || !unreached(error, options.idempotent)) throw error;
      // The runner died (the guard restarts it): wait until it listens again, then send once more.
      this.#awake = false;
      return request(await this.ready());
    }
  }

  /** Whether a runner socket is configured at all (a front may serve reads only). */
  get configured(): boolean {
    return this.#options.socketPath !== undefined && this.#options.socketPath !== '';
  }

  /** Whether this front's own launcher starts the runner on first use (standalone), rather than an operator. */
  get selfStarted(): boolean {
    return this.#options.wake !== undefined;
  }

  restarts(): number {
    return this.#options.restarts?.() ?? 0;
  }

  /**
   * The runner's self-description (of `skills` only, when given), cached briefly for the same
   * question; rejects with RUNNER_UNAVAILABLE.
   */
  describe(skills?: string[], identity?: Identity): Promise<DescribeResult> {
    const now = Date.now();
    // One answer per asker: its data folders' usage is its own (a subject's is never shown to another).
    const key = `${identity?.subject ?? ''}\0\0${skills ? skills.join('\0') : '*'}`;
    if (this.#described && this.#described.key === key && now - this.#described.at < DESCRIBE_TTL_MS) return this.#described.value;
    const value = (async () => {
      const answer = await this.send((client) => client.describe(skills, identity), { idempotent: true });
      if (!answer.ok) throw new SkillMcpError('RUNNER_UNAVAILABLE', `the runner refused to describe itself: ${answer.error.message}`);
      return answer.result;
    })();
    this.#described = { at: now, key, value };
    value.catch(() => {
      if (this.#described?.value === value) this.#described = undefined;
    });
    return value;
  }
}
