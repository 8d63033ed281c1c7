/**
 * Prometheus metrics of `skill-mcp --http --metrics-port`: a separate loopback endpoint, off by
 * default, whose counters move with real calls — requests by method and status, latency
 * histograms, skill_run results and refusal codes, runner and ledger availability, catalog size —
 * and whose labels never carry a skill name, an argument, a token or the bearer secret.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { startRunner, tempDir, type RunnerHandle } from '../runner/harness.js';
import { connectClient, REPO, startHttp, type HttpServer } from './harness.js';

const TOKEN = randomBytes(24).toString('hex');
let runner: RunnerHandle;
let server: HttpServer;
let plain: HttpServer;
let metricsUrl: string;

beforeAll(async () => {
  runner = await startRunner({
    env: { SKILL_MCP_UID_RANGE: '61926-61933' },
    base: tempDir('metrics'),
    args: process.getuid?.() === 0 ? ['--front-uid', '61183', '--front-gid', '61183'] : [],
  });
  const env = { SKILLS_DIR: `${REPO}skills`, SKILL_MCP_RUNNER_SOCKET: runner.socketPath, MCP_CONFIRM_MODE: 'auto' };
  [server, plain] = await Promise.all([startHttp({ ...env, SKILL_MCP_HTTP_TOKEN: TOKEN }, ['--metrics-port', '0']), startHttp(env)]);
  metricsUrl = /metrics on (http:\/\/\S+)/.exec(server.stderr())![1]!;
});
afterAll(async () => {
  await Promise.all([server?.stop(), plain?.stop()]);
  await runner?.stop();
});

async function scrape(): Promise<string> {
  const response = await fetch(metricsUrl);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return response.text();
}

/** The value of one sample (0 when absent), labels given exactly and in any order. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const got = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.keys(labels).length === Object.keys(got).length && Object.entries(labels).every(([k, v]) => got[k] === v))
      return Number(match[3]);
  }
  return 0;
}

describe('the metrics endpoint', () => {
  test('counters move with real calls: requests by method and status, latency, skill_run outcomes and refusal codes, runner, ledger and catalog', async () => {
    const before = await scrape();
    const client = await connectClient(server.url, 'legacy', TOKEN);
    const args = ['feat(metrics): count what happened'];
    let token: string;
    try {
      await client.listTools();
      await client.callTool({ name: 'skill_list', arguments: {} });
      const preview = await client.callTool({
        name: 'skill_run',
        arguments: { name: 'commit-message', script: 'scripts/check-message.js', args },
      });
      token = (preview.structuredContent as { confirmToken: string }).confirmToken;
      const forged = await client.callTool({
        name: 'skill_run',
        arguments: { name: 'commit-message', script: 'scripts/check-message.js', args, confirmToken: `${token.slice(0, -4)}AAAA` },
      });
      expect(forged.structuredContent).toMatchObject({ error: { code: 'TOKEN_INVALID' } });
      const ran = await client.callTool({
        name: 'skill_run',
        arguments: { name: 'commit-message', script: 'scripts/check-message.js', args, confirmToken: token },
      });
      expect(ran.structuredContent).toMatchObject({ status: 'completed' });
    } finally {
      await client.close();
    }
    // A request refused on its headers: counted, its body never read.
    expect(
      (
        await fetch(server.url, {
          method: 'POST',
          body: '{}',
          headers: { 'content-type': 'application/json', authorization: 'Bearer wrong-token-wrong-token' },
        })
      ).status,
    ).toBe(401);

    const after = await scrape();
    const moved = (name: string, labels: Record<string, string> = {}): number => sample(after, name, labels) - sample(before, name, labels);
    expect(moved('skill_mcp_http_requests_total', { method: 'initialize', status: '200' })).toBe(1);
    expect(moved('skill_mcp_http_requests_total', { method: 'tools/list', status: '200' })).toBe(1);
    expect(moved('skill_mcp_http_requests_total', { method: 'tools/call', status: '200' })).toBe(4);
    expect(moved('skill_mcp_http_requests_total', { method: 'unread', status: '401' })).toBe(1);
    expect(moved('skill_mcp_http_request_duration_seconds_count', { method: 'tools/call' })).toBe(4);
    expect(moved('skill_mcp_http_request_duration_seconds_bucket', { method: 'tools/call', le: '+Inf' })).toBe(4);
    expect(moved('skill_mcp_skill_run_total', { result: 'confirmation-required' })).toBe(1);
    expect(moved('skill_mcp_skill_run_total', { result: 'refused' })).toBe(1);
    expect(moved('skill_mcp_skill_run_refusals_total', { code: 'TOKEN_INVALID' })).toBe(1);
    expect(moved('skill_mcp_skill_run_total', { result: 'completed' })).toBe(1);
    expect(sample(after, 'skill_mcp_runner_up')).toBe(1);
    expect(sample(after, 'skill_mcp_ledger_available', { kind: 'file' })).toBe(1);
    expect(sample(after, 'skill_mcp_ledger_errors_total')).toBe(0);
    expect(sample(after, 'skill_mcp_runner_ledger_errors_total')).toBe(0);
    expect(after).toMatch(/^skill_mcp_build_info\{version="0\.1\.0",node_version="v[\d.]+"\} 1$/m);
    expect(after).toMatch(/^skill_mcp_runner_isolation_info\{level="[a-z-]+"\} 1$/m);
    // Prometheus conventions: each of our counters ends in _total, and none of our gauges does
    // (prom-client's own process/nodejs defaults are left as that library names them).
    for (const [, name, type] of after.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      if (/^skill_mcp_(process|nodejs)_/.test(name!)) continue;
      expect(name!.endsWith('_total'), name).toBe(type === 'counter');
    }
    // The runner's own counts arrive through its describe answer, which the front keeps for a
    // moment: wait for a scrape that has them (no clock in the assertion).
    await vi.waitFor(
      async () => {
        const late = await scrape();
        const runnerMoved = (name: string, labels: Record<string, string> = {}): number =>
          sample(late, name, labels) - sample(before, name, labels);
        expect(runnerMoved('skill_mcp_runner_runs_total', { ending: 'exit' })).toBe(1);
        expect(runnerMoved('skill_mcp_runner_refusals_total', { reason: 'token-invalid' })).toBe(1);
        expect(runnerMoved('skill_mcp_runner_reaps_total')).toBe(1);
        expect(sample(late, 'skill_mcp_runner_reap_seconds_total')).toBeGreaterThan(0);
        expect(sample(late, 'skill_mcp_runner_runs_active', { state: 'running' })).toBe(0);
        expect(sample(late, 'skill_mcp_runner_runs_active', { state: 'queued' })).toBe(0);
      },
      { timeout: 30_000, interval: 250 },
    );
    expect(sample(after, 'skill_mcp_catalog_skills', { published: 'true' })).toBeGreaterThan(0);
    expect(after).toMatch(/^skill_mcp_process_resident_memory_bytes \d+/m);

    // Security: nothing a client chose or a skill holds is a label.
    for (const secret of ['commit-message', 'check-message', args[0]!, token, TOKEN, 'wrong-token']) expect(after).not.toContain(secret);
  });

  test('only GET /metrics is served there, and the MCP port never serves metrics', async () => {
    expect((await fetch(metricsUrl.replace(/\/metrics$/, '/mcp'))).status).toBe(404);
    expect((await fetch(metricsUrl, { method: 'POST' })).status).toBe(404);
    expect((await fetch(server.url.replace(/\/mcp$/, '/metrics'))).status).toBe(404);
  });

  test('off by default: no metrics endpoint without --metrics-port', () => {
    expect(plain.stderr()).not.toContain('metrics on');
  });

  test('a runner that is gone shows as down', async () => {
    const lonely = await startHttp(
      { SKILLS_DIR: `${REPO}skills`, SKILL_MCP_RUNNER_SOCKET: `${tempDir('gone')}/none.sock`, SKILL_MCP_HTTP_TOKEN: TOKEN },
      ['--metrics-port', '0'],
    );
    try {
      const text = await (await fetch(/metrics on (http:\/\/\S+)/.exec(lonely.stderr())![1]!)).text();
      expect(sample(text, 'skill_mcp_runner_up')).toBe(0);
    } finally {
      await lonely.stop();
    }
  });
});
