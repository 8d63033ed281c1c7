/**
 * @module A runner without privilege walks a finished run's workspace and redacts its returns in its
 * own process (docs/architecture.md §8, "What runs privileged"): it holds no more than the run's uid
 * there, and a walker process per run would cost a Node start. The code is the walker's own
 * (runner/walker/walk.ts), loaded from the walker's bundle (dist/skill-mcp-walk.cjs) at the first
 * preview, so the runner's bundle carries none of it.
 *
 * Security: never as root. A root runner must not run what reads a script's bytes: it starts a
 * walker process of the run's uid instead (walk-link.ts), and this loader refuses.
 */
import { createRequire } from 'node:module';
import type { RedactionValue } from '../secrets/binding.js';
import type { RunWalks, WalkAsk, Walked } from './walk-link.js';
import { checkWalk, nothing, walkOrders } from './walk-link.js';
import type { StreamsIn, WalkOrders, WalkResult } from './walk-protocol.js';

/** What the walker's bundle exports for a runner's own process (runner/walker/main.ts). */
interface WalkCode {
  walkRun(orders: WalkOrders): WalkResult;
  redactRun(values: readonly RedactionValue[], streams: StreamsIn): Pick<WalkResult, 'streams' | 'redacted' | 'notSearched'>;
}

/** The walker's code from its bundle, or why it cannot be had here. */
export function loadWalkCode(bundle: { path: string } | { why: string }): WalkCode | { why: string } {
  // Security: see the module comment — a root process never loads it.
  if (process.geteuid?.() === 0) return { why: 'a root runner walks in a process of the run uid, never in its own' };
  if ('why' in bundle) return bundle;
  try {
    const code = createRequire(bundle.path)(bundle.path) as Partial<WalkCode>;
    if (typeof code.walkRun !== 'function' || typeof code.redactRun !== 'function')
      return { why: 'the walker bundle does not export the walk (npm run build makes it)' };
    return code as WalkCode;
  } catch (error) {
    return { why: `the walker bundle could not be loaded (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
  }
}

/** The walk in the runner's own process: loaded once, at the first run's preview. */
export class LocalWalks implements RunWalks {
  private code: WalkCode | { why: string } | undefined;

  constructor(private readonly bundle: { path: string } | { why: string }) {}

  warm(): void {
    this.code ??= loadWalkCode(this.bundle);
  }

  replenish(): void {}

  close(): void {}

  private loaded(): WalkCode | { why: string } {
    this.warm();
    return this.code!;
  }

  walk(ask: WalkAsk): Promise<Walked> {
    const code = this.loaded();
    if ('why' in code) return Promise.resolve(nothing(code.why));
    try {
      const checked = checkWalk(code.walkRun(walkOrders(ask)), ask.budgetBytes, ask.streams);
      return Promise.resolve(typeof checked === 'string' ? nothing(checked) : checked);
    } catch (error) {
      return Promise.resolve(nothing(`the walk failed (${(error as NodeJS.ErrnoException).code ?? 'error'})`));
    }
  }

  redactOnly(values: readonly RedactionValue[], streams: StreamsIn): Promise<Walked | undefined> {
    const code = this.loaded();
    if ('why' in code) return Promise.resolve(undefined);
    const done = code.redactRun(values, streams);
    return Promise.resolve({
      collected: { files: [], bytes: 0 },
      redacted: done.redacted,
      ...(done.notSearched !== undefined ? { notSearched: done.notSearched } : {}),
      ...(done.streams !== undefined ? { streams: done.streams } : {}),
    });
  }
}
