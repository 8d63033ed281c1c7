/**
 * @module Graceful stop for the HTTP front: stop accepting, let in-flight requests finish, close
 * idle keep-alive sockets as they free up, and cut what is left when the grace period ends.
 */
import type { Server } from 'node:http';

export interface InFlight {
  /** Counts a request until its response has finished or its socket closed. */
  track(res: NodeJS.EventEmitter): void;
  /** Resolves once nothing is in flight (immediately when nothing is). */
  idle(): Promise<void>;
  readonly count: number;
}

export function createInFlight(): InFlight {
  let count = 0;
  let waiters: Array<() => void> = [];
  return {
    track(res) {
      count += 1;
      let done = false;
      const finish = (): void => {
        if (done) return;
        done = true;
        count -= 1;
        if (count === 0) {
          const ready = waiters;
          waiters = [];
          for (const resolve of ready) resolve();
        }
      };
      res.once('finish', finish);
      res.once('close', finish);
    },
    idle: () => (count === 0 ? Promise.resolve() : new Promise((resolve) => waiters.push(resolve))),
    get count() {
      return count;
    },
  };
}

/**
 * Stops `server`: no new connections (then `onListenerClosed` is told how many requests are in
 * flight); in-flight requests get `graceMs` to finish; then every remaining connection is closed
 * and `closeHandler` tears down the MCP handler. Resolves when done.
 */
export async function shutdownGracefully(
  server: Server,
  inFlight: InFlight,
  graceMs: number,
  closeHandler: () => Promise<void>,
  onListenerClosed: (inFlight: number) => void = () => undefined,
): Promise<{ cut: number }> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  onListenerClosed(inFlight.count);
  let timer: NodeJS.Timeout | undefined;
  const graceOver = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), graceMs);
  });
  const outcome = await Promise.race([inFlight.idle().then(() => 'idle' as const), graceOver]);
  clearTimeout(timer);
  const cut = outcome === 'timeout' ? inFlight.count : 0;
  // Keep-alive sockets that were busy when close() ran are idle now; nothing more will come.
  server.closeAllConnections();
  await closeHandler();
  await closed;
  return { cut };
}
