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

/**
 * The same bridge for a python3 script, in the script's own interpreter: a python start is a
 * fraction of a node start (~40 against ~130 ms on a small machine), and a python script's run
 * pays it before its own. Isolated (`-I`: no PYTHON* variable, no user site) and without `site`
 * (`-S`), so nothing of the skill's environment is imported into it. Each connection is two threads
 * copying one way each; a clean end half-closes the other side (its buffered bytes still go out),
 * an error cuts both, and both sockets are closed once both ways are done.
 */
export const PYTHON_BRIDGE_SOURCE = `import os, socket, subprocess, sys, threading
port, path, extra_ca, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
def say(text):
    sys.stderr.write("skill-mcp egress bridge: " + text + "\\n")
    sys.stderr.flush()
class Pair:
    def __init__(self, a, b):
        self.socks, self.left, self.lock = (a, b), 2, threading.Lock()
    def done(self):
        with self.lock:
            self.left -= 1
            last = self.left == 0
        if last:
            for s in self.socks:
                s.close()
    def cut(self):
        for s in self.socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
def copy(pair, src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pair.cut()
    pair.done()
def serve(server):
    while True:
        try:
            inside, _ = server.accept()
        except OSError:
            return
        proxy = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            proxy.connect(path)
        except OSError:
            inside.close()
            proxy.close()
            continue
        # No Nagle: a reply written in two pieces would wait ~40 ms for the script's delayed ACK.
        inside.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pair = Pair(inside, proxy)
        for src, dst in ((inside, proxy), (proxy, inside)):
            threading.Thread(target=copy, args=(pair, src, dst), daemon=True).start()
try:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(128)
except OSError as error:
    say(str(error))
    sys.exit(125)
threading.Thread(target=serve, args=(server,), daemon=True).start()
env = dict(os.environ)
if extra_ca:
    env["NODE_EXTRA_CA_CERTS"] = extra_ca
try:
    child = subprocess.Popen(cmd, env=env)
except OSError as error:
    say(str(error))
    sys.exit(127)
code = child.wait()
sys.exit(code if code >= 0 else 128 - code)
`;

/** The bridge's command line in front of the script's: `node -e SOURCE -- PORT SOCKET EXTRA_CA command...`. */
export function bridgeArgv(nodePath: string, command: readonly string[], extraCa = ''): string[] {
  return [nodePath, '-e', BRIDGE_SOURCE, '--', String(BRIDGE_PORT), EGRESS_SOCKET_MOUNT, extraCa, ...command];
}

/** The python bridge's: `python3 -I -S -c SOURCE PORT SOCKET EXTRA_CA command...` (argv[1] on is PORT). */
export function pythonBridgeArgv(pythonPath: string, command: readonly string[], extraCa = ''): string[] {
  return [pythonPath, '-I', '-S', '-c', PYTHON_BRIDGE_SOURCE, String(BRIDGE_PORT), EGRESS_SOCKET_MOUNT, extraCa, ...command];
}

/** Longest unix socket path Linux accepts (sun_path is 108 bytes with its NUL). */
export const MAX_SOCKET_PATH_BYTES = 107;

/** Why a socket path cannot be used, or undefined. */
export function socketPathProblem(path: string): string | undefined {
  if (Buffer.byteLength(path) <= MAX_SOCKET_PATH_BYTES) return undefined;
  return `the egress socket path would be ${Buffer.byteLength(path)} bytes, over the ${MAX_SOCKET_PATH_BYTES} a unix socket allows; set a shorter SKILL_MCP_SCRATCH_DIR`;
}
