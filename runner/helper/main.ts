/**
 * @module A run's helper (docs/architecture.md §8, "The run's helper"): the unprivileged process that
 * owns one run's network — its egress proxy, the TLS it terminates with the run's own CA, and the
 * secrets it injects. Started by the runner (runner/egress/helper-link.ts) under a uid of its own as
 * root, or in namespaces of its own as an ordinary user; always without capabilities, with
 * no_new_privs and the syscall filter; it sees only /usr, the /etc files programs need, and its own
 * folder (where it listens and writes the run's CA bundle). Everything a script sends over the
 * network is parsed here, never in the runner.
 *
 * It talks to the runner in frames (runner/egress/helper-protocol.ts): it reads `start` (its run's
 * entries, secrets and values to redact, and only its run's), answers `ready`, reports each
 * connection as `egress` (every text the script chose in it redacted here, runner/secrets/redact.ts),
 * and on `close` (or when its stdin ends) cuts every connection, answers `closed` and exits — or,
 * when `close` said `returns`, waits for the run's returns (`redact`: its walk, made without a
 * value, and its stdout and stderr), answers them redacted (`returns`, runner/secrets/returns.ts)
 * and exits. It may be started ahead of its run (a spare): until `start` it only warms what every
 * run needs.
 *
 * Built as its own bundle (dist/skill-mcp-helper.cjs): nothing of it is in the runner's bundle.
 */
import { rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FrameCodec } from '../../shared/frame.js';
import type { EgressRecord, HelperStart, HelperToRunner, RequestRecord } from '../egress/helper-protocol.js';
import { HELPER_BUNDLE_NAME, HELPER_MAX_FRAME_BYTES, HELPER_SOCKET_NAME, runnerToHelperSchema } from '../egress/helper-protocol.js';
import type { RunProxy } from './run-proxy.js';
import { openRunProxy } from './run-proxy.js';
import { warmUpstreamContext } from './trust.js';
import { RunRedaction } from '../secrets/redact.js';
import { redactReturns } from '../secrets/returns.js';

const codec = new FrameCodec(HELPER_MAX_FRAME_BYTES);
/** A start message of the shape runs send (a secret, a rule), only ever checked: the warm-up's. */
const WARM_START: HelperStart = {
  type: 'start',
  runId: 'warm-up',
  entries: ['warm-up.invalid:443'],
  secrets: [
    {
      name: 'WARM',
      hosts: ['warm-up.invalid'],
      header: 'Authorization',
      format: 'Bearer {value}',
      placeholder: 'warm',
      value: 'warm-up value',
    },
  ],
  redact: [{ name: 'WARM', value: 'warm-up value' }],
  rules: [{ entry: 'warm-up.invalid:443', allow: [{ methods: ['GET'], path: '/warm/*' }] }],
  timeoutMs: 1000,
};
/** The run's values, once `start` named them: its records, its own words and its returns are searched for them. */
let redaction: RunRedaction | undefined;

/**
 * The texts of a record the script chose or the network did, redacted (the script's destination,
 * method or path could spell a value it holds), with the markers written counted by name.
 */
function redactRecord<T extends EgressRecord | RequestRecord>(record: T, keys: readonly (keyof T & string)[]): T {
  if (redaction === undefined || !redaction.reported) return record;
  const out = { ...record };
  const markers: Record<string, number> = {};
  const marked = (name: string): void => {
    markers[name] = (markers[name] ?? 0) + 1;
  };
  for (const key of keys) if (typeof out[key] === 'string') (out[key] as string) = redaction.text(out[key] as string, marked);
  return Object.keys(markers).length > 0 ? { ...out, redacted: markers } : out;
}

function send(message: HelperToRunner): void {
  process.stdout.write(codec.encode(message));
}

/** Ends the helper: its run cannot go on. The runner reads `failed`, or the exit alone. */
function fail(said: string): never {
  // Its words may quote what the script sent: redacted like its records.
  const why = redaction?.text(said) ?? said;
  try {
    send({ type: 'failed', why: why.slice(0, 1000) });
  } catch {
    // The runner is gone or the pipe is: the exit says it.
  }
  process.stderr.write(`skill-mcp helper: ${why}\n`);
  process.exit(1);
}

async function start(dir: string, orders: HelperStart): Promise<RunProxy> {
  return openRunProxy({
    socketPath: join(dir, HELPER_SOCKET_NAME),
    entries: orders.entries,
    secrets: orders.secrets,
    ...(orders.rules ? { rules: orders.rules } : {}),
    onRequest: (record) => send({ type: 'request', record: redactRecord(record, ['destination', 'method', 'path', 'rule']) }),
    ...(orders.secrets.length > 0 || (orders.rules?.length ?? 0) > 0
      ? {
          intercept: {
            bundlePath: join(dir, HELPER_BUNDLE_NAME),
            timeoutMs: orders.timeoutMs,
            ...(orders.upstreamCa !== undefined ? { upstreamCa: orders.upstreamCa } : {}),
          },
        }
      : {}),
    ...(orders.connectTimeoutMs !== undefined ? { connectTimeoutMs: orders.connectTimeoutMs } : {}),
    onRecord: (record) => send({ type: 'egress', record: redactRecord(record, ['destination', 'method', 'upstream_error']) }),
  });
}

/**
 * Runs the proxy's code once while a spare waits: a throwaway proxy on a socket in its own /tmp
 * (never in its folder, which the run's sandbox binds whole, its run maybe given meanwhile),
 * asked once for a destination it refuses (nothing leaves the helper), then closed — so the run's
 * proxy starts and answers its first request without compiling each step then. Never rejects.
 */
async function warmProxy(): Promise<void> {
  const socketPath = join(tmpdir(), 'skill-mcp-helper-warm-up.sock');
  try {
    const warm = await openRunProxy({ socketPath, entries: ['127.0.0.1:1'], onRecord: () => undefined });
    await new Promise<void>((resolve) => {
      const socket = connect(socketPath, () => socket.end('CONNECT 127.0.0.2:9 HTTP/1.1\r\nHost: 127.0.0.2:9\r\n\r\n'));
      socket.on('data', () => undefined);
      socket.once('close', () => resolve());
      socket.once('error', () => resolve());
    });
    await warm.close();
  } catch {
    // A warm-up only: the run's proxy does the same work, and says what fails.
  } finally {
    rmSync(socketPath, { force: true });
  }
}

export function helperMain(argv: readonly string[]): void {
  const at = argv.indexOf('--dir');
  const dir = at >= 0 ? argv[at + 1] : undefined;
  if (dir === undefined || !dir.startsWith('/')) fail('usage: skill-mcp-helper --dir ABSOLUTE-FOLDER');
  let proxy: Promise<RunProxy> | undefined;
  let closing = false;
  /** `close` said `returns`: after `closed`, the helper waits for `redact`. */
  let keep = false;
  let closedSent = false;
  let redacting = false;
  const close = (returns: boolean): void => {
    if (closing) return;
    closing = true;
    keep = returns;
    const done = proxy ?? Promise.resolve(undefined);
    done
      .then(async (p) => {
        await p?.close();
        closedSent = true;
        process.stdout.write(codec.encode({ type: 'closed' } satisfies HelperToRunner), () => {
          if (!keep) process.exit(0);
        });
      })
      .catch((error: unknown) => fail(`closing its proxy failed (${error instanceof Error ? error.message : String(error)})`));
  };
  const reader = new FrameCodec(HELPER_MAX_FRAME_BYTES);
  process.stdin.on('data', (chunk: Buffer) => {
    for (const event of reader.push(chunk)) {
      if (!event.ok) fail(`the runner sent a frame it cannot read (${event.error.message})`);
      const message = runnerToHelperSchema.safeParse(event.value);
      if (!message.success) fail('the runner sent a message outside the helper protocol');
      if (message.data.type === 'start') {
        if (proxy !== undefined || closing) fail('the runner sent a second start');
        redaction = new RunRedaction(message.data.redact);
        proxy = start(dir, message.data);
        proxy.then(
          () => send({ type: 'ready' }),
          (error: unknown) => fail(`its proxy could not start (${error instanceof Error ? error.message : String(error)})`),
        );
      } else if (message.data.type === 'close') close(message.data.returns === true);
      else {
        if (!keep || !closedSent || redacting) fail('the runner sent redact out of turn');
        redacting = true;
        const { walked, budgetBytes, streams } = message.data;
        // The run's values as `start` compiled them; its returns' markers counted on their own.
        const returns = redactReturns((redaction ?? new RunRedaction([])).fresh(), walked, budgetBytes, streams);
        process.stdout.write(codec.encode({ type: 'returns', returns } satisfies HelperToRunner), () => process.exit(0));
      }
    }
  });
  // The runner is gone (or ended the run without a word): cut everything and go.
  process.stdin.on('end', () => {
    if (!closing) close(false);
    else if (!redacting) {
      keep = false;
      if (closedSent) process.exit(0);
    }
  });
  process.stdout.on('error', () => process.exit(1));
  // Idle until its run comes: the system CAs' context is what every secrets run needs first, then
  // its run CA's key and the X.509 code (ca.ts, loaded only here and for such a run).
  setImmediate(() => {
    warmUpstreamContext();
    if (proxy !== undefined) return;
    // Redaction's code too (its records and its run's returns are redacted with it), on a value of
    // its own, and the check of a start and a redact message (each schema's parser is compiled at
    // its first use: ~10 ms a redact paid at its run's end otherwise).
    const warm = Buffer.from('a warm-up value');
    const streams = { cap: 1024, stdout: warm, stderr: warm, stdoutCut: false, stderrCut: true };
    const walked = { files: [{ path: 'warm-up value.txt', size: warm.length, bytes: warm }], bytes: warm.length, redacted: {} };
    runnerToHelperSchema.safeParse({ type: 'redact', walked, budgetBytes: 1024, streams });
    redactReturns(new RunRedaction(WARM_START.redact).fresh(), walked, 1024, streams);
    runnerToHelperSchema.safeParse(WARM_START);
    void warmProxy()
      .then(() => import('./ca.js'))
      .then((ca) => ca.prepareCa())
      .catch(() => undefined);
  });
}

if (process.argv[1]?.endsWith('skill-mcp-helper.cjs')) helperMain(process.argv.slice(2));
