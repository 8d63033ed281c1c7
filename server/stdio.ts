/**
 * @module The front over stdio, both protocol eras from one server (2026-07-28 `server/discover`
 * and 2025 `initialize`). stdout carries JSON-RPC only; everything else goes to stderr.
 */
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { createServerFactory } from './front.js';
import { startFront } from './start.js';

export async function serveOverStdio(options: { bundledSkills: string; env: NodeJS.ProcessEnv }): Promise<void> {
  const warn = (message: string): void => void process.stderr.write(`skill-mcp: ${message}\n`);
  const front = await startFront(options.env, options.bundledSkills);
  const handle = serveStdio(createServerFactory(front, warn), { legacy: 'serve', onerror: (error) => warn(error.message) });
  process.stdin.once('end', () => void handle.close());
}
