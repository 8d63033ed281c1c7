/**
 * @module The stdio wire under `serveStdio`: newline-delimited JSON-RPC on stdin/stdout, with
 *
 * - a hard per-line cap ({@link MAX_STDIO_MESSAGE_BYTES}): a longer line is answered with an error
 *   under its own id instead of silence, and the session goes on;
 * - an answer for every line that is not JSON-RPC (`-32700` / `-32600`), never a silent skip;
 * - an orderly end of input: `cat session.jsonl | skill-mcp` gets every answer. At stdin EOF the
 *   requests already read are finished and answered first; requests the server itself had sent
 *   the client (an elicitation) are failed, since no answer can come any more.
 *
 * `onFinished` fires once, when the session is over: input ended and nothing is left to answer,
 * or stdout broke.
 */
import {
  parseJSONRPCMessage,
  PROTOCOL_VERSION_META_KEY,
  ProtocolErrorCode,
  UnsupportedProtocolVersionError,
} from '@modelcontextprotocol/server';
import { FIRST_MODERN_VERSION } from '../skills-list.js';
import { DEFAULT_RUN_INPUT_BYTES, messageCapFor } from '../../shared/run-io.js';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import { LineReader, type LineEvent } from './lines.js';
import { encodeAnswer } from '../pre-encoded.js';

/**
 * Largest JSON-RPC message read from stdin by default: the HTTP front's default request-body cap,
 * so the two transports accept the same messages. The largest request is a `skill_run` carrying
 * its input files as base64 (shared/run-io.ts `messageCapFor`): 23 MiB for the default 16 MiB of
 * input; the front passes the cap for its own SKILL_MCP_RUN_INPUT_BYTES. The cap bounds what one
 * line can make the front hold in memory.
 */
export const MAX_STDIO_MESSAGE_BYTES = messageCapFor(DEFAULT_RUN_INPUT_BYTES);

/** Backstop for the end-of-input drain: the longest a run may take (300 s) plus a minute. */
export const EOF_DRAIN_MAX_MS = 360_000;

/** The SDK's "connection closed" code, given to the server's own requests that can no longer be answered. */
const CONNECTION_CLOSED = -32000;

type Id = string | number;
export type FinishReason = 'end' | 'output-failed';

export interface LineTransportOptions {
  stdin?: NodeJS.ReadableStream;
  stdout?: NodeJS.WritableStream;
  maxMessageBytes?: number;
  warn: (message: string) => void;
  onFinished: (reason: FinishReason) => void;
}

/** The 2026-07-28 revisions this server speaks: what a -32022 answer lists as `supported`. */
const SUPPORTED_MODERN: readonly string[] = [FIRST_MODERN_VERSION];

/**
 * The protocol version a request's 2026-07-28 envelope names, when this server does not speak it;
 * else undefined. A request without the envelope (the 2025 era, its `initialize` included) is not
 * judged here: it keeps negotiating as it does.
 */
export function unsupportedVersion(message: JSONRPCMessage): string | undefined {
  const m = message as { id?: unknown; method?: unknown; params?: { _meta?: Record<string, unknown> } };
  if (typeof m.method !== 'string' || m.id === undefined) return undefined;
  const named = m.params?._meta?.[PROTOCOL_VERSION_META_KEY];
  return typeof named === 'string' && !SUPPORTED_MODERN.includes(named) ? named : undefined;
}

function isId(value: unknown): value is Id {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

export class LineTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private readonly stdin: NodeJS.ReadableStream;
  private readonly stdout: NodeJS.WritableStream;
  private readonly reader: LineReader;
  private readonly maxBytes: number;
  /** Client requests read and not yet answered (a `subscriptions/listen` is answered at teardown, so not counted). */
  private readonly inbound = new Set<Id>();
  /** The server's own requests to the client, not yet answered. */
  private readonly outbound = new Set<Id>();
  private ended = false;
  private closed = false;
  private finished = false;
  private backstop: NodeJS.Timeout | undefined;

  constructor(private readonly options: LineTransportOptions) {
    this.stdin = options.stdin ?? process.stdin;
    this.stdout = options.stdout ?? process.stdout;
    this.maxBytes = options.maxMessageBytes ?? MAX_STDIO_MESSAGE_BYTES;
    this.reader = new LineReader(this.maxBytes);
  }

  async start(): Promise<void> {
    this.stdin.on('data', this.onData);
    this.stdin.on('end', this.onEnd);
    this.stdin.on('close', this.onEnd);
    this.stdin.on('error', this.onInputError);
    this.stdout.on('error', this.onOutputError);
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) return Promise.reject(new Error('stdio transport is closed'));
    const m = message as { id?: unknown; method?: unknown };
    if ('method' in message && isId(m.id)) {
      this.outbound.add(m.id);
      if (this.ended) queueMicrotask(() => this.failOutbound());
    } else if (!('method' in message) && isId(m.id)) {
      this.inbound.delete(m.id);
    }
    // A result whose JSON the server already holds (a skills/list page) goes out as those bytes.
    const encoded = encodeAnswer(message, '\n');
    const sent = new Promise<void>((resolve, reject) => {
      const done = (error?: Error | null): void => (error ? reject(error) : resolve());
      if (encoded === undefined) {
        this.stdout.write(`${JSON.stringify(message)}\n`, done);
        return;
      }
      // The pieces (the page's entries, shared, never copied) go out together in one writev.
      const out = this.stdout as NodeJS.WritableStream & { cork?: () => void; uncork?: () => void };
      out.cork?.();
      for (const piece of encoded.slice(0, -1)) this.stdout.write(piece);
      this.stdout.write(encoded.at(-1)!, done);
      out.uncork?.();
    });
    void sent.then(
      () => this.maybeFinish(),
      () => undefined,
    );
    return sent;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stdin.off('data', this.onData);
    this.stdin.off('end', this.onEnd);
    this.stdin.off('close', this.onEnd);
    this.stdin.off('error', this.onInputError);
    this.stdin.pause();
    if (this.backstop) clearTimeout(this.backstop);
    this.onclose?.();
  }

  private readonly onData = (chunk: Buffer | string): void => {
    for (const event of this.reader.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk)) this.handle(event);
  };

  private readonly onEnd = (): void => {
    if (this.ended) return;
    for (const event of this.reader.end()) this.handle(event);
    this.ended = true;
    this.failOutbound();
    this.backstop = setTimeout(() => {
      this.options.warn(
        `input ended; ${this.inbound.size} request(s) still unanswered after ${EOF_DRAIN_MAX_MS / 1000} s, exiting without them`,
      );
      this.finish('end');
    }, EOF_DRAIN_MAX_MS);
    this.maybeFinish();
  };

  private readonly onInputError = (error: Error): void => {
    this.onerror?.(error);
    this.onEnd();
  };

  private readonly onOutputError = (error: Error): void => {
    if (this.closed) return;
    this.options.warn(`stdout failed (${error.message}); the client is gone`);
    this.finish('output-failed');
  };

  private handle(event: LineEvent): void {
    if ('oversized' in event) {
      const { bytes, id } = event.oversized;
      const why = `message too large: ${bytes} bytes in one line; this server reads at most ${this.maxBytes} bytes per JSON-RPC message`;
      this.options.warn(
        `${why}${id === undefined ? ' (dropped; no id to answer)' : ` (answered with an error, id ${JSON.stringify(id)})`}`,
      );
      // Security: the oversized line was never buffered, only scanned for its id.
      if (id !== undefined) void this.answerError(id, ProtocolErrorCode.InvalidRequest, `${why}. Send smaller requests.`);
      return;
    }
    if (event.line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(event.line);
    } catch {
      this.options.warn('a line on stdin is not JSON; answered with a parse error');
      void this.answerError(null, ProtocolErrorCode.ParseError, 'Parse error: each line on stdin must be one JSON-RPC message');
      return;
    }
    let message: JSONRPCMessage;
    try {
      message = parseJSONRPCMessage(value);
    } catch {
      const id = (value as { id?: unknown } | null)?.id;
      this.options.warn('a line on stdin is not a JSON-RPC message; answered with an invalid-request error');
      if (id !== undefined)
        void this.answerError(isId(id) ? id : null, ProtocolErrorCode.InvalidRequest, 'Invalid Request: not a JSON-RPC 2.0 message');
      return;
    }
    const m = message as { id?: unknown; method?: unknown; params?: { requestId?: unknown } };
    const unsupported = unsupportedVersion(message);
    if (unsupported !== undefined && isId(m.id)) {
      // As the HTTP front answers it (and whatever era this connection was pinned to by its first message).
      const error = new UnsupportedProtocolVersionError({ supported: [...SUPPORTED_MODERN], requested: unsupported });
      void this.send({
        jsonrpc: '2.0',
        id: m.id,
        error: { code: error.code, message: error.message, data: error.data },
      } as JSONRPCMessage).catch(() => undefined);
      return;
    }
    if (typeof m.method === 'string' && isId(m.id)) {
      if (m.method !== 'subscriptions/listen') this.inbound.add(m.id);
    } else if (m.method === 'notifications/cancelled' && isId(m.params?.requestId)) {
      // A cancelled request is not answered (the SDK aborts it): stop waiting for it.
      this.inbound.delete(m.params.requestId);
      queueMicrotask(() => this.maybeFinish());
    } else if (m.method === undefined && isId(m.id)) {
      this.outbound.delete(m.id);
    }
    this.onmessage?.(message);
  }

  private answerError(id: Id | null, code: number, message: string): Promise<void> {
    return this.send({ jsonrpc: '2.0', id, error: { code, message } } as JSONRPCMessage).catch(() => undefined);
  }

  /** After EOF, the server's questions to the client fail at once instead of waiting forever. */
  private failOutbound(): void {
    for (const id of [...this.outbound]) {
      this.outbound.delete(id);
      this.onmessage?.({
        jsonrpc: '2.0',
        id,
        error: { code: CONNECTION_CLOSED, message: 'the client closed its input; it cannot answer any more' },
      } as JSONRPCMessage);
    }
  }

  private maybeFinish(): void {
    if (this.ended && this.inbound.size === 0) this.finish('end');
  }

  private finish(reason: FinishReason): void {
    if (this.finished) return;
    this.finished = true;
    if (this.backstop) clearTimeout(this.backstop);
    this.options.onFinished(reason);
  }
}
