/**
 * The bridge in a proxied run's sandbox (runner/egress/bridge.ts), both of them — node's, and the
 * python one a python3 script gets — run here as the sandbox runs them, against a unix socket that
 * stands in for the helper's proxy (an echo server): each connection carried both ways with its
 * half-close, no descriptor kept per connection (300 connections under a limit of 64 open files),
 * the script's exit status and signal passed on, NODE_EXTRA_CA_CERTS given to the script and not
 * to the bridge. Through a real sandbox and helper: test/runner/egress.test.ts and the egress e2e files.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BRIDGE_SOURCE, PYTHON_BRIDGE_SOURCE } from '../../runner/egress/bridge.js';

const PYTHON = ['/usr/bin/python3', '/usr/local/bin/python3'].find((p) => existsSync(p));
const PRLIMIT = ['/usr/bin/prlimit', '/bin/prlimit'].find((p) => existsSync(p));
const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-bridge-'));
const socketPath = join(dir, 'proxy.sock');
let echo: Server;

beforeAll(async () => {
  // The helper's proxy, as the bridge sees it: whatever comes in goes back, once the sender half-closed.
  echo = createServer({ allowHalfOpen: true }, (s) => {
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('end', () => s.end(Buffer.concat([Buffer.from('echo:'), ...chunks])));
    s.on('error', () => s.destroy());
  });
  await new Promise<void>((resolve) => echo.listen(socketPath, resolve));
});
afterAll(() => {
  echo?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The script: 300 connections to the bridge, each half-closed and read to its end; then its exit. */
const CLIENT = (port: number, exit: string) => `import os, socket, sys
got = []
for i in range(300):
    s = socket.create_connection(("127.0.0.1", ${port}), timeout=10)
    s.sendall(b"hello %d" % i)
    s.shutdown(socket.SHUT_WR)
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
    s.close()
    got.append(data.decode())
print(len(got), got[0], got[-1], os.environ.get("NODE_EXTRA_CA_CERTS"))
${exit}`;

async function runBridge(kind: 'node' | 'python', port: number, exit: string) {
  // The bridge's argv as bridgeArgv / pythonBridgeArgv build it, with this test's socket for the mount's.
  const head = kind === 'node' ? [process.execPath, '-e', BRIDGE_SOURCE, '--'] : [PYTHON!, '-I', '-S', '-c', PYTHON_BRIDGE_SOURCE];
  const argv = [...head, String(port), socketPath, '/run/skill-mcp/ca-bundle.pem', PYTHON!, '-c', CLIENT(port, exit)];
  // A bridge that kept a descriptor per connection would run out of them well before 300.
  const child = spawn(PRLIMIT!, ['--nofile=64:64', '--', ...argv], { env: { PATH: '/usr/bin:/bin' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, out, err };
}

/**
 * The bridge listens on a fixed port, as in a sandbox's own loopback; here it shares the host's.
 * Ports below the kernel's ephemeral range (32768 on) are taken only by a listener that names them,
 * and a port another process holds anyway is tried again with the next one.
 */
let nextPort = 20_000 + (process.pid % 1000) * 8;

async function onFreePort(kind: 'node' | 'python', exit: string) {
  for (let attempt = 0; ; attempt++) {
    const ran = await runBridge(kind, nextPort++, exit);
    if (attempt < 5 && /address already in use/i.test(ran.err)) continue;
    return ran;
  }
}

describe.skipIf(PYTHON === undefined || PRLIMIT === undefined)('the egress bridges (skipped without /usr/bin/python3 and prlimit)', () => {
  for (const kind of ['node', 'python'] as const) {
    it(`${kind}: each connection carried with its half-close, none kept open; the script's status passed on; NODE_EXTRA_CA_CERTS given to the script`, async () => {
      const ran = await onFreePort(kind, 'sys.exit(3)');
      expect(ran.err).toBe('');
      expect(ran.out.trim()).toBe('300 echo:hello 0 echo:hello 299 /run/skill-mcp/ca-bundle.pem');
      expect(ran.code).toBe(3);
    });

    it(`${kind}: a script killed by a signal ends the bridge with 128 + its number`, async () => {
      const ran = await onFreePort(kind, 'import signal\nos.kill(os.getpid(), signal.SIGKILL)');
      expect(ran.code).toBe(128 + 9);
    });
  }
});
