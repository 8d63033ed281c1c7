/**
 * @module One connection to the runner's Redis (ioredis), and whether it is usable right now.
 * Commands are never queued while the link is down and never retried after a reconnect: a spend
 * whose answer is late or lost must be reported as unknown (LEDGER_UNAVAILABLE) at once, not sent
 * again behind the caller's back. The link reconnects by itself (backoff up to RECONNECT_MAX_MS);
 * `onChange` hears every loss and every return, once each, so the runner can say so in its audit log.
 */
import type { Redis } from 'ioredis';
import type { RedisSettings, RedisTarget } from './options.js';

const RECONNECT_STEP_MS = 100;
const RECONNECT_MAX_MS = 1000;

export type LinkChange = { up: false; why: string } | { up: true; downMs: number };

/** Connection options for a target: explicit fields, never a URL the library would read options from. */
export function clientOptions(target: RedisTarget, timeoutMs: number, ca?: string) {
  return {
    host: target.host,
    port: target.port,
    db: target.db,
    ...(target.username !== undefined ? { username: target.username } : {}),
    ...(target.password !== undefined ? { password: target.password } : {}),
    // Security: rediss:// verifies the server's certificate and name (Node's default), against
    // SKILL_MCP_REDIS_CA_FILE when given; there is no switch to turn the check off.
    ...(target.tls ? { tls: { servername: target.host, ...(ca !== undefined ? { ca } : {}) } } : {}),
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: timeoutMs,
    connectTimeout: timeoutMs,
    retryStrategy: (times: number) => Math.min(RECONNECT_STEP_MS * times, RECONNECT_MAX_MS),
  };
}

/** The short reason a Redis error gives (an errno code or the server's error word), never a secret. */
export function reasonOf(error: unknown): string {
  const err = error as { code?: unknown; message?: unknown } | undefined;
  if (typeof err?.code === 'string') return err.code;
  const message = typeof err?.message === 'string' ? err.message : String(error);
  if (/timed out/i.test(message)) return 'timeout';
  if (/enableOfflineQueue|Stream isn't writeable|Connection is closed/i.test(message)) return 'not connected';
  const word = /^([A-Z][A-Z_]{2,})\b/.exec(message)?.[1];
  return word ?? 'error';
}

export class RedisLink {
  #up = false;
  #downSince = Date.now();
  #lastWhy = 'not connected yet';
  #announcedDown = false;
  #probe: NodeJS.Timeout | undefined;
  /** An orderly stop closes the link on purpose: that is no outage to record. */
  #closing = false;

  /**
   * Loads ioredis and makes the link. Only a runner configured with Redis loads it: it costs a
   * runner ~85 ms of CPU at every start, and the runner's bundle has no code cache.
   */
  static async open(settings: RedisSettings, onChange: (change: LinkChange) => void): Promise<RedisLink> {
    const { Redis } = await import('ioredis');
    return new RedisLink(settings, onChange, new Redis(clientOptions(settings.target, settings.timeoutMs, settings.ca)));
  }

  private constructor(
    readonly settings: RedisSettings,
    private readonly onChange: (change: LinkChange) => void,
    readonly client: Redis,
  ) {
    this.client.on('ready', () => {
      const wasDown = !this.#up;
      this.#up = true;
      clearInterval(this.#probe);
      this.#probe = undefined;
      // Security: a return is announced only after a loss was, so the audit log pairs them.
      if (wasDown && this.#announcedDown) this.onChange({ up: true, downMs: Date.now() - this.#downSince });
      this.#announcedDown = false;
    });
    this.client.on('error', (error: unknown) => {
      this.#lastWhy = reasonOf(error);
    });
    this.client.on(
      'close',
      () => this.#closing || this.markDown(this.#lastWhy === 'not connected yet' ? 'connection closed' : this.#lastWhy),
    );
  }

  /** Connects, waiting at most the command timeout; the runner starts either way (runs wait for Redis). */
  async start(): Promise<boolean> {
    this.client.connect().catch((error: unknown) => {
      this.#lastWhy = reasonOf(error);
    });
    if (await this.whenReady(this.settings.timeoutMs)) return true;
    this.markDown(this.#lastWhy);
    return false;
  }

  get up(): boolean {
    return this.#up && this.client.status === 'ready';
  }

  get lastWhy(): string {
    return this.#lastWhy;
  }

  /** Records a loss seen by a command (a timeout leaves the socket open, so no `close` comes). */
  markDown(why: string): void {
    this.#lastWhy = why;
    if (this.#up) {
      this.#up = false;
      this.#downSince = Date.now();
    }
    if (!this.#announcedDown) {
      this.#announcedDown = true;
      this.onChange({ up: false, why });
    }
    // A stalled server leaves the socket open: no reconnect will say it is back, so ask it.
    this.#probe ??= setInterval(() => {
      if (this.client.status !== 'ready') return;
      this.client.ping().then(
        () => this.markUp(),
        () => undefined,
      );
    }, RECONNECT_MAX_MS).unref();
  }

  /** Marks the link usable again after a command got through while it was marked down. */
  markUp(): void {
    if (this.#up || this.client.status !== 'ready') return;
    this.#up = true;
    clearInterval(this.#probe);
    this.#probe = undefined;
    if (this.#announcedDown) this.onChange({ up: true, downMs: Date.now() - this.#downSince });
    this.#announcedDown = false;
  }

  whenReady(timeoutMs: number): Promise<boolean> {
    if (this.client.status === 'ready') return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (value: boolean): void => {
        clearTimeout(timer);
        this.client.off('ready', onReady);
        resolve(value);
      };
      const onReady = (): void => done(true);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.client.on('ready', onReady);
    });
  }

  async close(): Promise<void> {
    this.#closing = true;
    clearInterval(this.#probe);
    try {
      if (this.client.status === 'ready') await this.client.quit();
    } catch {
      // already gone
    }
    this.client.disconnect();
  }
}
