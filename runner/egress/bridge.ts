/**
 * @module The bridge inside a run's sandbox: a fixed, tiny node program that listens on the
 * sandbox's own loopback ({@link BRIDGE_PORT}) and carries each connection to the run's proxy
 * socket, which bubblewrap binds in at {@link EGRESS_SOCKET_MOUNT}. It starts the script only
 * once it listens, stays its parent and exits with its status, so the script never runs without
 * it and it never outlives the sandbox (bubblewrap's pid namespace ends with it).
 *
 * Security: the bridge is not a boundary. The script may kill it or talk to the socket itself;
 * either way its only way out is the runner's proxy, which holds the allowlist. The source is a
 * constant passed with `node -e`: nothing of it comes from the skill.
 */

/**
 * Where a run's helper folder appears inside its sandbox (bound whole, read-only): the helper's
 * socket and, with secret bindings, the run's CA bundle are made there once the helper is given its
 * run, while bubblewrap builds the sandbox; the script starts after (run-path.ts).
 */
export const RUN_HELPER_MOUNT = '/run/skill-mcp';
/** Where the run's proxy socket appears inside the sandbox (the helper's `egress.sock`). */
export const EGRESS_SOCKET_MOUNT = `${RUN_HELPER_MOUNT}/egress.sock`;
/** The bridge's port on the sandbox's own loopback (each run has its own network namespace). */
export const BRIDGE_PORT = 3128;
/** The proxy URL a script is given. */
export const PROXY_URL = `http://127.0.0.1:${BRIDGE_PORT}`;

/**
 * argv after `node -e BRIDGE_SOURCE --`: port, socket path, the script's NODE_EXTRA_CA_CERTS (or
 * ''), then the script's own command line. The bridge starts without that variable — node reads
 * the file it names at every start (~40 ms for a system bundle), which the bridge, making no TLS
 * connection, has no use for — and gives it to the script. A signal that killed the script becomes
 * 128 + its number, as bubblewrap reports it anyway.
 */
export const BRIDGE_SOURCE = `'use strict';
const net = require('node:net');
const { spawn } = require('node:child_process');
const { constants } = require('node:os');
const [port, socketPath, extraCa, command, ...args] = process.argv.slice(1);
const say = (text) => process.stderr.write('skill-mcp egress bridge: ' + text + '\\n');
const server = net.createServer({ allowHalfOpen: true, noDelay: true }, (inside) => {
  const proxy = net.connect({ path: socketPath, allowHalfOpen: true });
  inside.pipe(proxy);
  proxy.pipe(inside);
  inside.on('error', () => proxy.destroy());
  proxy.on('error', () => inside.destroy());
  // A clean close ends the other side (its buffered bytes still go out); an error cuts it.
  inside.on('close', (failed) => (failed ? proxy.destroy() : proxy.end()));
  proxy.on('close', (failed) => (failed ? inside.destroy() : inside.end()));
});
server.on('error', (error) => { say(error.message); process.exit(125); });
server.listen({ host: '127.0.0.1', port: Number(port) }, () => {
  const env = extraCa === '' ? process.env : { ...process.env, NODE_EXTRA_CA_CERTS: extraCa };
  const child = spawn(command, args, { stdio: 'inherit', env });
  child.on('error', (error) => { say(error.message); process.exit(127); });
  child.on('exit', (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));
});
`;

/** The bridge's command line in front of the script's: `node -e SOURCE -- PORT SOCKET EXTRA_CA command...`. */
export function bridgeArgv(nodePath: string, command: readonly string[], extraCa = ''): string[] {
  return [nodePath, '-e', BRIDGE_SOURCE, '--', String(BRIDGE_PORT), EGRESS_SOCKET_MOUNT, extraCa, ...command];
}

/** Longest unix socket path Linux accepts (sun_path is 108 bytes with its NUL). */
export const MAX_SOCKET_PATH_BYTES = 107;

/** Why a socket path cannot be used, or undefined. */
export function socketPathProblem(path: string): string | undefined {
  if (Buffer.byteLength(path) <= MAX_SOCKET_PATH_BYTES) return undefined;
  return `the egress socket path would be ${Buffer.byteLength(path)} bytes, over the ${MAX_SOCKET_PATH_BYTES} a unix socket allows; set a shorter SKILL_MCP_SCRATCH_DIR`;
}
