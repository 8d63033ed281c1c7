/**
 * @module The front over stdio, both protocol eras from one server (2026-07-28 `server/discover`
 * and 2025 `initialize`). stdout carries JSON-RPC only; everything else goes to stderr.
 */
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { createServerFactory } from './front.js';
import type { RunnerLinkOptions } from './runner-link.js';
import { keepHeapSmall, servingLine, startFront } from './start.js';
import { LineTransport } from './stdio/transport.js';
import { messageCapFor } from '../shared/run-io.js';

export async function serveOverStdio(options: {
  bundledSkills: string;
  env: NodeJS.ProcessEnv;
  runner?: RunnerLinkOptions;
  requestStateKey?: Buffer | undefined;
}): Promise<void> {
  const warn = (message: string): void => void process.stderr.write(`skill-mcp: ${message}\n`);
  keepHeapSmall();
  const front = await startFront(options.env, options.bundledSkills, options.runner, warn, undefined, options.requestStateKey);
  // The session ends when input has ended and every request read was answered (or stdout broke):
  // stop watching, close, then exit even if a runner guard's pipes are still open (the guard sees
  // our end of its pipe close and takes the runner down with it).
  const transport = new LineTransport({
    // Room for a skill_run carrying the whole input allowance as base64.
    maxMessageBytes: messageCapFor(front.runInputBytes),
    warn,
    onFinished: (reason) => {
      front.live.close();
      void handle.close().finally(() => process.exit(reason === 'end' ? 0 : 1));
    },
  });
  const handle = serveStdio(
    createServerFactory(front, warn, (mcp) => front.announcer.track(mcp)),
    { legacy: 'serve', transport, onerror: (error) => warn(error.message) },
  );
  // The one line that says it is ready (internal notes: SKILL_MCP_LOG_LEVEL=debug).
  warn(`${servingLine(front, options.env, options.bundledSkills)}; waiting for an MCP client on stdin`);
}
