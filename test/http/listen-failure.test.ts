/**
 * `skill-mcp --http` that cannot listen exits non-zero with the reason and what to do, and takes
 * its runner guard with it: no live process serving nothing.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, expect, test } from 'vitest';
import { SERVER_JS, baseEnv, expectNoLeftovers, leftoverProcesses } from '../e2e/harness.js';

afterAll(expectNoLeftovers);

const isRoot = process.getuid?.() === 0;

/** Starts `skill-mcp --http` with `args` and resolves when it has exited. */
function httpFront(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [SERVER_JS, '--http', ...args], { env: baseEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString('utf8');
  });
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stderr })));
}

test('a port already in use: exits 1 saying so and how to pick another; the runner guard goes too', async () => {
  const taken: Server = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const port = (taken.address() as AddressInfo).port;
  try {
    const { code, stderr } = await httpFront(['--port', String(port)]);
    expect(code).toBe(1);
    expect(stderr).toContain(`cannot listen on 127.0.0.1:${port}: the port is already in use`);
    expect(stderr).toContain('--port');
    expect(await leftoverProcesses()).toEqual([]);
  } finally {
    taken.close();
  }
});

test('a host name that does not resolve: exits 1 naming it; the runner guard goes too', async () => {
  const { code, stderr } = await httpFront(['--host', 'no-such-host.invalid', '--port', '0']);
  expect(code).toBe(1);
  expect(stderr).toContain('"no-such-host.invalid" does not resolve');
  expect(await leftoverProcesses()).toEqual([]);
});

const lowPortsOpen = Number(readFileSync('/proc/sys/net/ipv4/ip_unprivileged_port_start', 'utf8')) <= 80;
test.skipIf(!isRoot || lowPortsOpen)(
  'as root, port 80: the front has already dropped to its unprivileged uid, and says so and what to do (root only, and only where ip_unprivileged_port_start is above 80)',
  async () => {
    const { code, stderr } = await httpFront(['--port', '80']);
    expect(code).toBe(1);
    expect(stderr).toContain('cannot listen on 127.0.0.1:80: permission denied');
    expect(stderr).toContain('already runs as its unprivileged uid 61183');
    expect(stderr).toContain('net.ipv4.ip_unprivileged_port_start');
    expect(await leftoverProcesses()).toEqual([]);
  },
);
