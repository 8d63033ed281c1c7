/**
 * @module The front's handle on the runner. One request per connection: connect to the socket, send
 * `hello` (the front secret, if any, and this front's configuration view) and the request, read
 * the two answers, close — so a restarted runner is simply reached by the next call, and a
 * `cancel` can always be sent while a `run` is pending on its own connection.
 * Every answer is validated against the shared schemas before the front believes it. Failures to
 * reach the runner are `RUNNER_UNAVAILABLE`; refusals come back as data (`{ok: false, error}`).
 */
import { randomBytes } from 'node:crypto';
import { createConnection } from 'node:net';
import type { ConfigView } from '../shared/config-view.js';
import { SkillMcpError } from '../shared/errors.js';
import { FrameCodec, MAX_REQUEST_FRAME_BYTES, MAX_RESPONSE_FRAME_BYTES } from '../shared/frame.js';
import { PROTOCOL_VERSION } from '../shared/protocol.js';
import { anyFailureSchema, responseSchemas } from '../shared/protocol-answers.js';
import type { Approval, Identity, Inputs, RequestType, Response, RunnerRequest } from '../shared/protocol.js';
import { MAX_RUN_QUEUE_MS, MAX_TIMEOUT_MS } from '../shared/limits.js';

export interface RunnerClientOptions {
  /** This front's configuration (skill roots, mode, grant), sent in every hello. */
  view: () => ConfigView;
  /** The secret this runner expects (standalone: the launcher's per-instance one). Kept in memory only. */
  frontSecret?: string | undefined;
  /** Answer deadline for describe/prepare/cancel. */
  requestTimeoutMs?: number;
  /** Extra wait past the run's own timeout (kill grace, drain, re-derivation). */
  runSlackMs?: number;
}

export interface RunCallOptions {
  /** Aborting kills the run: a `cancel` is sent and the run's connection closed. */
  signal?: AbortSignal;
  /** The approved `willRun.timeoutMs`; bounds how long the client waits. Default: the 300 s clamp. */
  timeoutMs?: number;
  /** The id a `cancel` of this run must name (32 hex digits). Default: 128 fresh random bits. */
  cancelId?: string;
  /** Who asked (32 hex digits): the runner's per-client share of its run slots counts by it. */
  client?: string;
}

type Args = { skill: string; script: string; args: string[]; identity?: Identity | undefined; traceparent?: string | undefined };
/** A prepare names the inputs by digest; the run carries their bytes (docs/architecture.md §8, "A run's workspace"). */
type PrepareArgs = Args & { inputs?: Inputs };
type RunArgs = Args & { confirmToken: string; files?: { path: string; bytes: Uint8Array }[]; stdin?: Uint8Array };

export class RunnerClient {
  private readonly requestTimeoutMs: number;
  private readonly runSlackMs: number;
  private readonly view: () => ConfigView;
  private readonly frontSecret: string | undefined;

  constructor(
    private readonly socketPath: string,
    options: RunnerClientOptions,
  ) {
    this.view = options.view;
    this.frontSecret = options.frontSecret;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 15_000;
    this.runSlackMs = options.runSlackMs ?? 30_000;
  }

  /** What the runner can run: isolation, interpreters, environ state, per-script grants and env names. */
  describe(skills?: string[], identity?: Identity): Promise<Response<'describe'>> {
    return this.call(
      'describe',
      { type: 'describe', ...(skills ? { skills } : {}), ...(identity ? { identity } : {}) },
      this.requestTimeoutMs,
    );
  }

  /** Re-derives a run and mints its token: `{willRun, confirmToken, expiresAt}` or a refusal. */
  prepare(req: PrepareArgs): Promise<Response<'prepare'>> {
    const { identity, traceparent, ...rest } = req;
    return this.call(
      'prepare',
      { type: 'prepare', ...rest, ...(identity ? { identity } : {}), ...(traceparent ? { traceparent } : {}) },
      this.requestTimeoutMs,
    );
  }

  /**
   * Runs with a token. A refusal with code DRAFT_CHANGED carries `error.fresh` (new preview + token).
   * `approval`: how the person's yes arrived (the runner records it); a caller that names none
   * holds a token and nothing more, so it is the `token` channel.
   */
  async run(req: RunArgs & { approval?: Approval }, options: RunCallOptions = {}): Promise<Response<'run'>> {
    // A run may first wait for a slot (at most MAX_RUN_QUEUE_MS, then BUSY).
    const wait = (options.timeoutMs ?? MAX_TIMEOUT_MS) + MAX_RUN_QUEUE_MS + this.runSlackMs;
    // Only this front knows the id, so only it can cancel the run (other fronts may share the runner).
    const cancelId = options.cancelId ?? randomBytes(16).toString('hex');
    const local = new AbortController();
    const onAbort = (): void => {
      // Best effort: the runner also kills a run whose connection closes.
      void this.cancel(cancelId).catch(() => undefined);
      local.abort();
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      if (options.signal?.aborted) onAbort();
      const { identity, traceparent, ...rest } = req;
      return await this.call(
        'run',
        {
          type: 'run',
          ...rest,
          ...(identity ? { identity } : {}),
          ...(traceparent ? { traceparent } : {}),
          approval: rest.approval ?? { channel: 'token' },
          cancelId,
          ...(options.client !== undefined ? { client: options.client } : {}),
        },
        wait,
        local.signal,
      );
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** A data folder's clear: without `confirmToken` a preview and a token, with one the clear (runner/requests/data-clear.ts). */
  dataClear(req: {
    skill: string;
    confirmToken?: string | undefined;
    approval?: Approval | undefined;
    identity?: Identity | undefined;
    traceparent?: string | undefined;
  }): Promise<Response<'data-clear'>> {
    const { confirmToken, approval, identity, traceparent, skill } = req;
    return this.call(
      'data-clear',
      {
        type: 'data-clear',
        skill,
        ...(confirmToken !== undefined ? { confirmToken, approval: approval ?? { channel: 'token' } } : {}),
        ...(identity ? { identity } : {}),
        ...(traceparent ? { traceparent } : {}),
      },
      this.requestTimeoutMs,
    );
  }

  /** Kills the run this front started with `cancelId`; any other run is left alone. */
  cancel(cancelId: string): Promise<Response<'cancel'>> {
    return this.call('cancel', { type: 'cancel', cancelId }, this.requestTimeoutMs);
  }

  private call<T extends RequestType>(type: T, request: RunnerRequest, timeoutMs: number, signal?: AbortSignal): Promise<Response<T>> {
    return new Promise((resolve, reject) => {
      const codec = new FrameCodec(MAX_RESPONSE_FRAME_BYTES);
      const encoder = new FrameCodec(MAX_REQUEST_FRAME_BYTES);
      const hello: RunnerRequest = {
        type: 'hello',
        view: this.view(),
        ...(this.frontSecret !== undefined ? { frontSecret: this.frontSecret } : {}),
      };
      // Pipelined: the runner answers the hello first and serves the request only if it accepted it.
      const frame = Buffer.concat([encoder.encode(hello), encoder.encode(request)]);
      let greeted = false;
      const socket = createConnection(this.socketPath);
      let done = false;
      const finish = (error: SkillMcpError | undefined, value?: Response<T>): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        socket.destroy();
        if (error) reject(error);
        else resolve(value!);
      };
      const onAbort = (): void => finish(new SkillMcpError('CANCELLED', 'the run was cancelled'));
      signal?.addEventListener('abort', onAbort, { once: true });
      if (signal?.aborted) onAbort();
      const timer = setTimeout(
        () =>
          finish(
            new SkillMcpError(
              'RUNNER_UNAVAILABLE',
              `the runner did not answer within ${Math.round(timeoutMs / 1000)} s; it may be overloaded or stuck`,
            ),
          ),
        timeoutMs,
      );
      socket.on('connect', () => socket.write(frame));
      socket.on('error', (error: NodeJS.ErrnoException) => {
        finish(
          new SkillMcpError(
            'RUNNER_UNAVAILABLE',
            `the runner cannot be reached (${error.code ?? 'error'}); is it running, and may this process use its socket?`,
            { cause: error },
          ),
        );
      });
      socket.on('close', () => finish(new SkillMcpError('RUNNER_UNAVAILABLE', 'the runner closed the connection without answering')));
      socket.on('data', (chunk: Buffer) => {
        for (const event of codec.push(chunk)) {
          if (!event.ok)
            return finish(
              new SkillMcpError('RUNNER_UNAVAILABLE', `the runner sent an unreadable answer (${event.error.code})`, { cause: event.error }),
            );
          if (!greeted) {
            const hi = responseSchemas.hello.safeParse(event.value);
            if (!hi.success)
              return finish(new SkillMcpError('RUNNER_UNAVAILABLE', 'the runner answered outside the protocol', { cause: hi.error }));
            // A refused hello (PEER_REFUSED: another instance's runner) is the answer to the request too.
            if (!hi.data.ok) return finish(undefined, hi.data as Response<T>);
            if (hi.data.result.protocol !== PROTOCOL_VERSION)
              return finish(
                new SkillMcpError(
                  'RUNNER_UNAVAILABLE',
                  `the runner speaks protocol ${hi.data.result.protocol}, this server ${PROTOCOL_VERSION}; run one version of skill-mcp for both`,
                ),
              );
            greeted = true;
            continue;
          }
          const parsed = responseSchemas[type].safeParse(event.value);
          if (parsed.success) return finish(undefined, parsed.data as Response<T>);
          // A refusal of the frame itself (BAD_FRAME, PEER_REFUSED, ...) fits the generic failure shape.
          const failure = anyFailureSchema.safeParse(event.value);
          if (failure.success) return finish(undefined, failure.data as Response<T>);
          return finish(new SkillMcpError('RUNNER_UNAVAILABLE', 'the runner answered outside the protocol', { cause: parsed.error }));
        }
      });
    });
  }
}
