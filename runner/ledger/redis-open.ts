/**
 * @module The Redis ledger, its data-folder turns and its audit-stream mirror, seen from the
 * runner: all three live in the Redis link process (runner/redis/link-main.ts, started here; as
 * root under a uid of its own), so the Redis client and what it parses from the network never run
 * in the privileged process. Here: starting it (and again if it ends), asking it, and checking
 * every line it says (runner/redis/link-protocol.ts). Losses and returns of Redis are said in the
 * audit log and on stderr, each once; an unsure spend given back is recorded as `token.released`;
 * the mirror's lines are read from the runner's own log (audit/mirror-source.ts).
 *
 * Security: the link is trusted with what Redis is trusted with — whether a token was spent, whose
 * turn a folder is — and nothing more. A link that says anything outside the protocol is ended;
 * one that dies or stops answering makes every run LEDGER_UNAVAILABLE until a new one is up.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { SkillMcpError } from '../../shared/errors.js';
import { jtiLogId } from '../../shared/token.js';
import { MirrorSource } from '../audit/mirror-source.js';
import { FrameCodec } from '../../shared/frame-codec.js';
import { MAX_LINK_FRAME_BYTES, readFromLink, spendOutcome, takeAnswer, type FromLink, type ToLink } from '../redis/link-protocol.js';
import type { RedisSettings } from '../redis/options.js';
import type { LedgerContext, LedgerStatus, OpenedLedger, SharedTake, SpendOutcome, TokenLedger, TurnTaker } from './types.js';
import { ledgerUnavailable } from './unavailable.js';

/** How long an orderly stop waits for the mirror's last round and the QUIT. */
const CLOSE_WAIT_MS = 2000;
/** A link that ended is started again after this long. */
const RESTART_MS = 1000;
/** What the link may take to start (load its bundle, connect) beyond the command timeout. */
const START_SLACK_MS = 10_000;

/** How the runner starts the link process (main.ts): as root through setpriv, under the uid it holds. */
export interface LinkCommand {
  command: string;
  args: string[];
}

type Answer = Extract<FromLink, { id: number; ok: boolean }>;

class RedisLinkClient implements TokenLedger, TurnTaker {
  #child: ChildProcessWithoutNullStreams | undefined;
  /** What the link last said of the ledger; its failures to answer are counted here besides. */
  #status: LedgerStatus = { kind: 'redis', available: false, errors: 0 };
  #linkErrors = 0;
  #next = 0;
  readonly #pending = new Map<number, { done: (answer: Answer) => void; timer: NodeJS.Timeout }>();
  #closing = false;
  /** A loss the runner said (the link's own, or its process's end): its return is said once too. */
  #saidDown = false;
  #downSince = 0;
  #ready: ((ready: Extract<FromLink, { event: 'ready' }> | undefined) => void) | undefined;
  readonly #source: MirrorSource;
  readonly #writer = new FrameCodec(MAX_LINK_FRAME_BYTES);

  constructor(
    private readonly settings: RedisSettings,
    private readonly command: LinkCommand,
    private readonly ctx: LedgerContext,
  ) {
    this.#source = new MirrorSource(ctx.auditPath);
  }

  /** Starts the link; resolves with its first word (undefined when it said none in time). */
  start(): Promise<Extract<FromLink, { event: 'ready' }> | undefined> {
    const child = spawn(this.command.command, this.command.args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      cwd: '/',
      // Nothing of the runner's environment: the settings (with the password) come on stdin.
      env: { PATH: '/usr/bin:/bin' },
    });
    this.#child = child;
    child.stdin.on('error', () => undefined);
    this.send({ settings: this.settings });
    const reader = new FrameCodec(MAX_LINK_FRAME_BYTES);
    child.stdout.on('data', (chunk: Buffer) => {
      for (const event of reader.push(chunk)) {
        if (child !== this.#child) return;
        if (!event.ok) {
          this.outOfProtocol(child, `a frame it sent was refused (${event.error.code})`);
          return;
        }
        this.heard(child, event.value);
      }
    });
    // Its stderr is said on the runner's, a chunk at a time (never buffered into lines), printable and cut.
    child.stderr.on('data', (chunk: Buffer) =>
      this.ctx.log(
        `redis link: ${chunk
          .toString('latin1')
          .replace(/[^\x20-\x7e]/g, '?')
          .slice(0, 300)}`,
      ),
    );
    child.on('exit', (code, signal) => this.ended(child, code ?? signal ?? 'unknown'));
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(undefined), this.settings.timeoutMs + START_SLACK_MS);
      this.#ready = (ready) => {
        clearTimeout(timer);
        resolve(ready);
      };
    });
  }

  private send(message: ToLink | { settings: RedisSettings }): void {
    if (this.#child?.stdin.writable) this.#child.stdin.write(this.#writer.encode(message));
  }

  private outOfProtocol(child: ChildProcessWithoutNullStreams, what: string): void {
    this.ctx.log(`warning: the Redis link said something outside its protocol (${what}); it is ended and started again`);
    child.kill('SIGKILL');
  }

  private heard(child: ChildProcessWithoutNullStreams, value: unknown): void {
    if (child !== this.#child) return;
    const message = readFromLink(value);
    if (message === undefined) {
      this.outOfProtocol(child, 'not a message of its table');
      return;
    }
    if ('status' in message) this.#status = message.status;
    if ('id' in message && 'ok' in message) {
      const waiting = this.#pending.get(message.id);
      this.#pending.delete(message.id);
      if (waiting) {
        clearTimeout(waiting.timer);
        waiting.done(message);
      }
      return;
    }
    if ('ask' in message) {
      this.send({ op: 'lines', id: message.id, lines: this.#source.after(message.after) });
      return;
    }
    switch (message.event) {
      case 'ready':
        if (message.connected) this.restored();
        this.#ready?.(message);
        this.#ready = undefined;
        return;
      case 'down':
        this.lost(message.why);
        return;
      case 'up':
        this.restored();
        return;
      case 'released':
        // The id as every other audit line gives it: a hash of the token's id, never the token.
        void this.ctx.audit.append({ event: 'token.released', token_id: jtiLogId(message.jti) });
        return;
      case 'warning':
        this.ctx.log(`warning: ${message.message}`);
        return;
    }
  }

  private lost(why: string): void {
    if (this.#saidDown) return;
    this.#saidDown = true;
    this.#downSince = Date.now();
    const redis = this.settings.target.display;
    this.ctx.log(
      `the spent-token ledger at ${redis} cannot be reached (${why}): every run is refused LEDGER_UNAVAILABLE until it is back (reconnecting by itself)`,
    );
    void this.ctx.audit.append({ event: 'ledger.unavailable', ledger: 'redis', redis, why });
  }

  private restored(): void {
    if (!this.#saidDown) return;
    this.#saidDown = false;
    const redis = this.settings.target.display;
    const downMs = Date.now() - this.#downSince;
    this.ctx.log(`the spent-token ledger at ${redis} is reachable again (after ${downMs} ms); runs go on`);
    void this.ctx.audit.append({ event: 'ledger.restored', ledger: 'redis', redis, down_ms: downMs });
  }

  private ended(child: ChildProcessWithoutNullStreams, how: string | number): void {
    if (child !== this.#child) return;
    this.#child = undefined;
    this.#status = { ...this.#status, available: false };
    for (const [id, waiting] of this.#pending) {
      clearTimeout(waiting.timer);
      waiting.done({ id, ok: false, why: 'link-ended', unavailable: true, status: this.#status });
    }
    this.#pending.clear();
    this.#ready?.(undefined);
    this.#ready = undefined;
    if (this.#closing) return;
    this.lost(`the Redis link process ended: ${how}`);
    setTimeout(() => {
      if (!this.#closing) void this.start();
    }, RESTART_MS).unref();
  }

  /** Asks the link; an answer that never comes within `waitMs` is the link's failure. */
  private ask(message: (id: number) => ToLink, waitMs: number): Promise<Answer> {
    const id = ++this.#next;
    return new Promise((resolve) => {
      if (this.#child === undefined) {
        resolve({ id, ok: false, why: 'link-down', unavailable: true, status: this.#status });
        return;
      }
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        resolve({ id, ok: false, why: 'link-timeout', unavailable: true, status: this.#status });
      }, waitMs);
      this.#pending.set(id, { done: resolve, timer });
      this.send(message(id));
    });
  }

  private failed(answer: Answer & { ok: false }): SkillMcpError {
    if (answer.why.startsWith('link-')) this.#linkErrors += 1;
    return answer.unavailable ? ledgerUnavailable(answer.why) : new SkillMcpError('INTERNAL', 'the Redis link refused the request');
  }

  private get waitMs(): number {
    return this.settings.timeoutMs + 1000;
  }

  async has(jti: string): Promise<boolean> {
    const answer = await this.ask((id) => ({ op: 'has', id, jti }), this.waitMs);
    if (!answer.ok) throw this.failed(answer);
    if (typeof answer.value !== 'boolean') throw ledgerUnavailable('bad answer');
    return answer.value;
  }

  async spend(jti: string, exp: number, nowMs: number): Promise<SpendOutcome> {
    const answer = await this.ask((id) => ({ op: 'spend', id, jti, exp, now: nowMs }), this.waitMs);
    if (!answer.ok) throw this.failed(answer);
    const outcome = spendOutcome(answer.value);
    if (outcome === undefined) throw ledgerUnavailable('bad answer');
    return outcome;
  }

  async take(folder: string, leave: AbortSignal, waitMs: number): Promise<SharedTake> {
    let takeId = 0;
    const onLeave = (): void => this.send({ op: 'leave', take: takeId });
    const answer = await this.ask((id) => {
      takeId = id;
      leave.addEventListener('abort', onLeave, { once: true });
      // Left before it was asked: the link hears it right after the take.
      if (leave.aborted) queueMicrotask(onLeave);
      return { op: 'take', id, folder, waitMs };
    }, waitMs + this.waitMs);
    leave.removeEventListener('abort', onLeave);
    if (!answer.ok) return { ok: false, why: 'down', detail: answer.why };
    const took = takeAnswer(answer.value);
    if (took === undefined) return { ok: false, why: 'down', detail: 'bad answer' };
    if (!took.ok) return took;
    return { ok: true, give: async () => this.send({ op: 'give', take: takeId }) };
  }

  poke(): void {
    this.send({ op: 'poke' });
  }

  status(): LedgerStatus {
    return {
      kind: 'redis',
      available: this.#status.available && this.#child !== undefined,
      errors: this.#status.errors + this.#linkErrors,
    };
  }

  async close(): Promise<void> {
    this.#closing = true;
    const child = this.#child;
    if (child === undefined) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    this.send({ op: 'close', waitMs: CLOSE_WAIT_MS });
    const timer = setTimeout(() => child.kill('SIGKILL'), CLOSE_WAIT_MS + 1000);
    await exited;
    clearTimeout(timer);
  }
}

export async function openRedisLedger(settings: RedisSettings, ctx: LedgerContext, command: LinkCommand): Promise<OpenedLedger> {
  const redis = settings.target.display;
  const link = new RedisLinkClient(settings, command, ctx);
  const ready = await link.start();
  // The link's calls are not awaited: AuditLog.append never rejects (a line it cannot write now
  // waits in its queue, and the log reports its own outage).
  ctx.audit.afterAppend = () => link.poke();
  const connected = ready?.connected ?? false;
  const aof = ready?.aof ?? 'unknown';
  if (aof === false)
    ctx.log(
      `warning: ${redis} keeps no append-only file (appendonly no): if Redis restarts, the tokens it recorded as spent could run again until they expire; run it with appendonly yes (docs/hosting.md)`,
    );
  return {
    ledger: link,
    dataTurns: link,
    startFields: { ledger: 'redis', redis, redis_connected: connected, redis_aof: aof, audit_host_id: settings.hostId },
    close: () => link.close(),
  };
}
