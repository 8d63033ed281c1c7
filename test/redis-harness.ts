/**
 * @module A real `redis-server` for the tests that need one: started on a free loopback port with
 * a private temp dir (append-only file, fsync on every write, no RDB snapshots), killed and started
 * again on the same port and dir to play an outage, stopped when the test file ends. Without
 * `redis-server` these tests skip with their reason — except in CI (`CI` set), where a missing
 * `redis-server` fails the file: CI installs it (.ci/run), so a skip there would hide a gap.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEachFile } from './file-hooks.js';

function findRedisServer(): string | undefined {
  const found = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : undefined;
}

export const REDIS_SERVER = findRedisServer();
export const NO_REDIS_REASON = 'redis-server is not installed (apt-get install -y redis-server); CI installs it';
if (!REDIS_SERVER && process.env['CI'])
  throw new Error(`CI: ${NO_REDIS_REASON} — .ci/run should have installed it; these tests must not skip in CI`);

/** A free loopback port (bound and released; redis-server takes it a moment later). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface RedisHandle {
  port: number;
  /** With `tls`: the CA that signed the server's certificate (for 127.0.0.1). */
  caFile?: string;
  /** redis://[:password@]127.0.0.1:port */
  url: string;
  /** SIGKILL, as a crash: resolves once it is gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port and data dir (its append-only file brings the keys back). */
  start(): Promise<void>;
  /** SIGSTOP / SIGCONT: a server that holds the connection open and answers nothing. */
  pause(): void;
  resume(): void;
  /** Runs redis-cli against it and returns stdout. */
  cli(...args: string[]): string;
}

const started: RedisHandle[] = [];
const dirs: string[] = [];
afterEachFile(async () => {
  for (const redis of started.splice(0)) await redis.kill();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A throwaway CA and a server certificate for 127.0.0.1, made with openssl in `dir`. */
function makeCertificates(dir: string): { ca: string; cert: string; key: string } {
  const run = (...args: string[]): void => {
    const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`openssl ${args[0]}: ${r.stderr}`);
  };
  run(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=skill-mcp test CA',
  );
  run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
  writeFileSync(join(dir, 'ext'), 'subjectAltName=IP:127.0.0.1\n');
  run(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.pem',
    '-days',
    '2',
    '-extfile',
    'ext',
  );
  return { ca: join(dir, 'ca.pem'), cert: join(dir, 'server.pem'), key: join(dir, 'server.key') };
}

export async function startRedis(options: { password?: string; tls?: boolean } = {}): Promise<RedisHandle> {
  if (!REDIS_SERVER) throw new Error(NO_REDIS_REASON);
  const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-redis-'));
  const port = await freePort();
  const conf = join(dir, 'redis.conf');
  const tls = options.tls ? makeCertificates(dir) : undefined;
  writeFileSync(
    conf,
    [
      ...(tls
        ? [
            'port 0',
            `tls-port ${port}`,
            `tls-cert-file ${tls.cert}`,
            `tls-key-file ${tls.key}`,
            `tls-ca-cert-file ${tls.ca}`,
            'tls-auth-clients no',
          ]
        : [`port ${port}`]),
      'bind 127.0.0.1',
      `dir ${dir}`,
      'save ""',
      'appendonly yes',
      'appendfsync always',
      'daemonize no',
      'loglevel notice',
      ...(options.password ? [`requirepass "${options.password}"`] : []),
    ].join('\n'),
    { mode: 0o600 },
  );
  let child: ChildProcess | undefined;
  const handle: RedisHandle = {
    port,
    ...(tls ? { caFile: tls.ca } : {}),
    url: `${tls ? 'rediss' : 'redis'}://${options.password ? `:${encodeURIComponent(options.password)}@` : ''}127.0.0.1:${port}`,
    async start() {
      const proc = spawn(REDIS_SERVER!, [conf], { stdio: ['ignore', 'pipe', 'pipe'] });
      child = proc;
      let out = '';
      await new Promise<void>((resolve, reject) => {
        const onData = (chunk: Buffer): void => {
          out += chunk.toString();
          if (/Ready to accept connections/.test(out)) resolve();
        };
        proc.stdout!.on('data', onData);
        proc.stderr!.on('data', onData);
        proc.once('exit', (code) => reject(new Error(`redis-server exited ${code}: ${out}`)));
      });
    },
    async kill() {
      const proc = child;
      child = undefined;
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
      const gone = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill('SIGCONT');
      proc.kill('SIGKILL');
      await gone;
    },
    pause() {
      child?.kill('SIGSTOP');
    },
    resume() {
      child?.kill('SIGCONT');
    },
    cli(...args) {
      const result = spawnSync(
        'redis-cli',
        [
          '-p',
          String(port),
          ...(tls ? ['--tls', '--cacert', tls.ca] : []),
          ...(options.password ? ['--no-auth-warning', '-a', options.password] : []),
          ...args,
        ],
        { encoding: 'utf8' },
      );
      if (result.status !== 0) throw new Error(`redis-cli ${args.join(' ')}: ${result.stderr}`);
      return result.stdout;
    },
  };
  await handle.start();
  started.push(handle);
  dirs.push(dir);
  return handle;
}

export interface HoldingProxy {
  url: string;
  /** While on, a client's bytes that carry a token spend (the ledger's SET ... NX script) are held, with everything after them on that connection. */
  holdSpends: boolean;
  /** Resolves once a spend is being held. */
  held(): Promise<void>;
  /** Forwards what was held, in order: Redis then applies the spend nobody is waiting for any more. */
  release(): void;
  close(): Promise<void>;
}

/**
 * A loopback TCP proxy in front of Redis that can hold a spend past the runner's timeout: the
 * case where a SET may or may not have landed, which no signal to the server can produce alone
 * (a stopped server holds every command, the ledger's read before the spend included).
 */
export async function holdingProxy(redisPort: number, password?: string): Promise<HoldingProxy> {
  const { createConnection } = await import('node:net');
  const queues: { flush: () => void }[] = [];
  let onHeld: (() => void) | undefined;
  const sockets = new Set<import('node:net').Socket>();
  const server = createServer((client) => {
    const upstream = createConnection(redisPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    const pending: Buffer[] = [];
    let holding = false;
    const queue = {
      flush: () => {
        holding = false;
        for (const chunk of pending.splice(0)) upstream.write(chunk);
      },
    };
    client.on('data', (chunk: Buffer) => {
      if (!holding && proxy.holdSpends && chunk.includes("redis.call('SET'")) {
        holding = true;
        queues.push(queue);
        onHeld?.();
      }
      if (holding) pending.push(chunk);
      else upstream.write(chunk);
    });
    upstream.pipe(client);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const proxy: HoldingProxy = {
    url: `redis://${password ? `:${encodeURIComponent(password)}@` : ''}127.0.0.1:${port}`,
    holdSpends: false,
    held: () =>
      new Promise<void>((resolve) => {
        if (queues.length > 0) resolve();
        else onHeld = resolve;
      }),
    release() {
      proxy.holdSpends = false;
      for (const queue of queues.splice(0)) queue.flush();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  return proxy;
}
