/**
 * @module Progress for long runs: when the client asked for progress (a `progressToken`), send the
 * elapsed time every second until the work settles. Notifications are best effort.
 */
import type { ServerContext } from '@modelcontextprotocol/server';

const PROGRESS_EVERY_MS = 1_000;

export async function withProgress<T>(ctx: ServerContext, label: string, work: () => Promise<T>): Promise<T> {
  const token = ctx.mcpReq._meta?.progressToken;
  if (token === undefined) return work();
  const started = Date.now();
  const timer = setInterval(() => {
    const seconds = Math.round((Date.now() - started) / 1000);
    void ctx.mcpReq
      .notify({
        method: 'notifications/progress',
        params: { progressToken: token, progress: seconds, message: `${label} running for ${seconds} s` },
      })
      .catch(() => undefined);
  }, PROGRESS_EVERY_MS);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
