/**
 * SKILL_MCP_LOG_FORMAT=json: every line the front and the runner write to stderr parses as JSON,
 * the front writes exactly one access-log line per HTTP request (method, path, status, duration,
 * the verified identity), a `traceparent` reaches the access log (header) and the run's audit lines
 * (`_meta`), and no access token appears anywhere in the output.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { auditLines, startRunner, tempDir, type RunnerHandle } from '../runner/harness.js';
import { envelope, MODERN, REPO, startHttp, type HttpServer } from './harness.js';
import { freePort, startIssuer, type TestIssuer } from './issuer.js';

const TRACE = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
let issuer: TestIssuer;
let runner: RunnerHandle;
let server: HttpServer;
let base: string;
let audience: string;

beforeAll(async () => {
  base = tempDir('http-logs');
  issuer = await startIssuer();
  const port = await freePort();
  audience = `http://127.0.0.1:${port}/mcp`;
  runner = await startRunner({
    env: { SKILL_MCP_LOG_FORMAT: 'json', SKILL_MCP_UID_RANGE: '61932-61939' },
    base,
    args: process.getuid?.() === 0 ? ['--front-uid', '61183', '--front-gid', '61183'] : [],
  });
  server = await startHttp(
    {
      SKILLS_DIR: `${REPO}skills`,
      SKILL_MCP_RUNNER_SOCKET: runner.socketPath,
      MCP_CONFIRM_MODE: 'auto',
      SKILL_MCP_LOG_FORMAT: 'json',
      SKILL_MCP_OAUTH_ISSUER: issuer.issuer,
      SKILL_MCP_OAUTH_AUDIENCE: audience,
    },
    [],
    { port },
  );
}, 30_000);

afterAll(async () => {
  await server?.stop();
  await runner?.stop();
  await issuer?.close();
  rmSync(base, { recursive: true, force: true });
});

function post(method: string, params: Record<string, unknown>, headers: Record<string, string>): Promise<Response> {
  const body = envelope(params);
  (body['_meta'] as Record<string, unknown>)['traceparent'] = TRACE;
  return fetch(server.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN,
      'mcp-method': method,
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: body }),
  });
}

test('every line is JSON, one access line per request, the identity and trace in them, no token anywhere', async () => {
  const good = await issuer.mint({ sub: 'alice', aud: audience, scope: 'skills:read skills:run' });
  const wrong = await issuer.mint({ sub: 'alice', aud: 'https://elsewhere.example/mcp', scope: 'skills:read' });
  const answers = [
    await post('tools/list', {}, {}),
    await post('tools/list', {}, { authorization: `Bearer ${wrong}` }),
    await post('tools/list', {}, { authorization: `Bearer ${good}`, traceparent: TRACE }),
    await post(
      'tools/call',
      { name: 'skill_run', arguments: { name: 'commit-message', script: 'scripts/check-message.js', args: ['feat: trace me'] } },
      { authorization: `Bearer ${good}`, 'mcp-name': 'skill_run' },
    ),
    await fetch(new URL('/healthz', server.url)),
    await fetch(new URL('/mcp/secret-looking-path?token=abc', server.url)),
  ];
  for (const answer of answers) await answer.text();
  expect(answers.map((a) => a.status)).toEqual([401, 401, 200, 200, 200, 404]);
  await server.stop();

  const lines = server
    .stderr()
    .split('\n')
    .filter((line) => line !== '');
  const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  for (const record of parsed)
    expect(record).toMatchObject({
      time: expect.any(String),
      level: expect.stringMatching(/^(info|warn)$/),
      component: 'front',
      msg: expect.any(String),
    });
  const access = parsed.filter((r) => r['msg'] === 'access');
  expect(access.map((r) => [r['method'], r['path'], r['status']])).toEqual([
    ['POST', '/mcp', 401],
    ['POST', '/mcp', 401],
    ['POST', '/mcp', 200],
    ['POST', '/mcp', 200],
    ['GET', '/healthz', 200],
    ['GET', 'other', 404],
  ]);
  expect(access.map((r) => r['identity'])).toEqual([undefined, undefined, 'alice', 'alice', undefined, undefined]);
  expect(access[2]!['traceparent']).toBe(TRACE);
  for (const r of access) expect(r['duration_s']).toEqual(expect.any(Number));

  for (const line of runner
    .stderr()
    .split('\n')
    .filter((l) => l !== ''))
    expect(JSON.parse(line)).toMatchObject({ component: 'runner', msg: expect.any(String) });
  const prepared = auditLines(runner.stateDir).find((l) => l['event'] === 'run.prepare');
  expect(prepared).toMatchObject({ requester: 'alice', requester_from: 'oauth', traceparent: TRACE });

  const output = server.stderr() + runner.stderr();
  for (const secret of [good, wrong, 'secret-looking-path', 'token=abc']) expect(output).not.toContain(secret);
});
