/**
 * @module Tells clients the catalog changed: `notifications/resources/list_changed` and
 * `notifications/prompts/list_changed`. On stdio the connection's one `McpServer` sends them; in
 * the 2025 era they go out as they are, and in the 2026-07-28 era the SDK's entry routes them onto
 * the client's open `subscriptions/listen` streams that asked for them. Over HTTP each request
 * has its own short-lived server, so the change is published on the handler's event bus, which
 * feeds the open `subscriptions/listen` streams (2026-07-28; the stateless 2025 fallback has no
 * stream to carry a notification).
 */
import type { McpServer } from '@modelcontextprotocol/server';
import type { Catalog } from './catalog/catalog.js';

export interface ChangeSink {
  resourcesChanged(): void;
  promptsChanged(): void;
}

export class Announcer {
  /** Weak: a server that ended is collected, not kept for the process's life. */
  #servers = new Set<WeakRef<McpServer>>();
  #sinks = new Set<ChangeSink>();

  constructor(
    catalog: Catalog,
    private readonly warn: (message: string) => void,
  ) {
    catalog.onChange(() => this.announce());
  }

  /** A stdio connection's server: told directly while it is connected. */
  track(mcp: McpServer): void {
    this.#servers.add(new WeakRef(mcp));
  }

  /** An HTTP handler's `notify`: told on every change. */
  addSink(sink: ChangeSink): void {
    this.#sinks.add(sink);
  }

  announce(): void {
    for (const reference of this.#servers) {
      const mcp = reference.deref();
      if (mcp === undefined) {
        this.#servers.delete(reference);
        continue;
      }
      if (!mcp.isConnected()) continue;
      for (const send of [() => mcp.server.sendResourceListChanged(), () => mcp.server.sendPromptListChanged()]) {
        Promise.resolve()
          .then(send)
          .catch((error: unknown) =>
            this.warn(`could not announce a catalog change: ${error instanceof Error ? error.message : String(error)}`),
          );
      }
    }
    for (const sink of this.#sinks) {
      sink.resourcesChanged();
      sink.promptsChanged();
    }
  }
}
