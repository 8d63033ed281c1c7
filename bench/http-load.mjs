/**
 * @module HTTP load: requests/second and p50/p99 latency of the HTTP front for `resources/read`
 * of a 10 KB file and for `skills/list`, at several client concurrencies. Loopback only, bounded
 * duration, numbers only (never fails on speed).
 *
 *   npm run build && node bench/http-load.mjs [--seconds=5] [--clients=1,10,50] [--era=modern|legacy] [--auth=none|static|jwt|both]
 *
 * `--auth=static`: the server checks one bearer token; `--auth=jwt`: it is an OAuth resource server
 * verifying a JWT access token (RS256) from a local issuer this script starts on loopback;
 * `--auth=both`: `resources/read` at each concurrency under both, side by side.
 *
 * The load generator is this process (node:http, keep-alive, one socket per client); it shares the
 * machine's cores with the server, so the numbers are a floor for a dedicated server. Each request
 * is one stateless 2026-07-28 POST (`--era=legacy`: a 2025-era POST without a session, which the
 * stateless fallback serves the same way).
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, createServer } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { flagsFrom, loop, mcpPost, option as optionOf, percentile, post, startHttpServer } from './lib.mjs';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const argv = process.argv.slice(2);
const option = (name, fallback) => optionOf(argv, name, fallback);
const SECONDS = Number(option('seconds', '5'));
const CLIENTS = option('clients', '1,10,50').split(',').map(Number);
const ERA = option('era', 'modern');
const AUTH = option('auth', 'none');
const FILE_BYTES = 10 * 1024;

/** One skill with a 10 KB text file, in a temp folder. */
function makeSkills() {
  const root = mkdtempSync(join(tmpdir(), 'skill-mcp-http-load-'));
  const dir = join(root, 'load-test');
  mkdirSync(join(dir, 'data'), { recursive: true });
  writeFileSync(
    join(dir, 'SKILL.md'),
    '---\nname: load-test\ndescription: A skill with a 10 KB file, for the HTTP load benchmark.\n---\n\nRead data/ten-kb.txt.\n',
  );
  const line = 'The quick brown fox jumps over the lazy dog. 0123456789 abcdefghijklmnopqrstuvwxyz\n';
  writeFileSync(join(dir, 'data', 'ten-kb.txt'), line.repeat(Math.ceil(FILE_BYTES / line.length)).slice(0, FILE_BYTES));
  // mkdtemp makes the folder 0700: a front started as root drops to an unprivileged uid and could not read it.
  chmodSync(root, 0o755);
  return root;
}

/** A loopback OAuth issuer (metadata + JWKS) and one access token for `audience`. */
async function startIssuer(audience) {
  const { SignJWT, exportJWK, generateKeyPair } = await import('jose');
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench', alg: 'RS256', use: 'sig' };
  let issuer = '';
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    if (req.url === '/.well-known/oauth-authorization-server')
      res.end(
        JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks`, token_endpoint: `${issuer}/token`, response_types_supported: ['code'] }),
      );
    else res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${server.address().port}`;
  const token = await new SignJWT({ sub: 'bench', scope: 'skills:read', aud: audience, iss: issuer })
    .setProtectedHeader({ alg: 'RS256', kid: 'bench' })
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(privateKey);
  return { issuer, token, close: () => server.close() };
}

async function freePort() {
  const probe = createServer();
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** The server under `auth`, with the Authorization header its clients send. */
async function startAuthServer(skillsDir, auth) {
  if (auth === 'none') return { ...(await startServer(skillsDir)), authorization: undefined, close: () => undefined };
  if (auth === 'static') {
    const token = 'bench-static-token-0123456789abcdef';
    return { ...(await startServer(skillsDir, { SKILL_MCP_HTTP_TOKEN: token })), authorization: `Bearer ${token}`, close: () => undefined };
  }
  const port = await freePort();
  const audience = `http://127.0.0.1:${port}/mcp`;
  const issuer = await startIssuer(audience);
  const server = await startServer(skillsDir, { SKILL_MCP_OAUTH_ISSUER: issuer.issuer, SKILL_MCP_OAUTH_AUDIENCE: audience }, port);
  return { ...server, authorization: `Bearer ${issuer.token}`, close: issuer.close };
}

function startServer(skillsDir, extraEnv = {}, port = 0) {
  // BENCH_NODE_FLAGS: flags for the server's node (e.g. --cpu-prof --cpu-prof-dir=DIR to profile it).
  return startHttpServer({
    name: 'server',
    script: join(REPO, 'dist/skill-mcp.js'),
    args: ['--port', String(port)],
    env: { SKILLS_DIR: skillsDir, ...extraEnv },
    nodeFlags: flagsFrom(process.env.BENCH_NODE_FLAGS),
  });
}

async function measure(url, method, params, clients, authorization) {
  const request_ = mcpPost(method, params, { era: ERA, client: 'http-load', authorization });
  const agent = new Agent({ keepAlive: true, maxSockets: clients });
  // Warm-up: JIT, the catalog's digests, one socket per client.
  await Promise.all(Array.from({ length: clients }, () => post(url, agent, request_)));
  const latencies = [];
  const { elapsed, errors } = await loop(url, agent, request_, clients, SECONDS, latencies);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return {
    method,
    clients,
    requests: latencies.length,
    errors,
    rps: latencies.length / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

const skillsDir = makeSkills();
const rows = [];
try {
  const read = ['resources/read', { uri: 'skill://load-test/data/ten-kb.txt' }, 'resources/read 10 KB'];
  const plans =
    AUTH === 'both'
      ? [
          ['static', [read]],
          ['jwt', [read]],
        ]
      : [[AUTH, [read, ['skills/list', {}, 'skills/list (1 skill)']]]];
  for (const [auth, cases] of plans) {
    const server = await startAuthServer(skillsDir, auth);
    try {
      for (const [method, params, label] of cases) {
        for (const clients of CLIENTS) {
          const row = await measure(server.url, method, params, clients, server.authorization);
          const named = auth === 'none' ? label : `${label}, ${auth === 'jwt' ? 'JWT (RS256)' : 'static bearer'}`;
          rows.push({ label: named, ...row });
          process.stderr.write(
            `${named} c=${clients}: ${row.rps.toFixed(0)} req/s p50 ${row.p50.toFixed(2)} ms p99 ${row.p99.toFixed(2)} ms errors ${row.errors}\n`,
          );
        }
      }
    } finally {
      server.child.kill('SIGTERM');
      server.close();
    }
  }
} finally {
  rmSync(skillsDir, { recursive: true, force: true });
}

const cpu = cpus();
console.log(
  `HTTP load, ${ERA} era, ${SECONDS} s per row, loopback; node ${process.version}, ${cpu.length} x ${cpu[0]?.model ?? 'cpu'} (load generator on the same cores)\n`,
);
console.log('| request | clients | req/s | p50 ms | p99 ms | requests | errors |');
console.log('|---|---:|---:|---:|---:|---:|---:|');
for (const r of rows)
  console.log(
    `| ${r.label} | ${r.clients} | ${r.rps.toFixed(0)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.requests} | ${r.errors} |`,
  );
