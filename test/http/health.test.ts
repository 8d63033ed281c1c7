/**
 * `/healthz` and `/readyz` with the runner down, up, disagreeing and gone again: a front started
 * before its runner says so on stderr at start and in /readyz (503), becomes ready once the runner
 * answers with the same configuration, reports CONFIG_MISMATCH with what differs, and is not ready
 * again when the runner stops. A standalone front's own runner is started by the first /readyz.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { startRunner, tempDir, type RunnerHandle } from '../runner/harness.js';
import { REPO, startHttp, type HttpServer } from './harness.js';

const base = tempDir('http-health');
const socketPath = join(base, 'sock', 'runner.sock');
const servers: HttpServer[] = [];
let runner: RunnerHandle | undefined;
const frontArgs = process.getuid?.() === 0 ? ['--front-uid', '61183', '--front-gid', '61183'] : [];

afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  await runner?.stop();
  rmSync(base, { recursive: true, force: true });
});

async function start(env: Record<string, string>): Promise<HttpServer> {
  const server = await startHttp({ SKILLS_DIR: `${REPO}skills`, ...env });
  servers.push(server);
  return server;
}

async function get(server: HttpServer, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(new URL(path, server.url));
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('health and readiness', () => {
  let front: HttpServer;
  let mismatched: HttpServer;

  test('runner down: alive, not ready (503), and said at start on stderr', async () => {
    front = await start({ SKILL_MCP_RUNNER_SOCKET: socketPath });
    expect(front.stderr()).toMatch(/not ready: the runner is not reachable/);
    expect(await get(front, '/healthz')).toEqual({ status: 200, body: { status: 'alive' } });
    const ready = await get(front, '/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({
      ready: false,
      checks: { catalog: { ok: true, skills: 1 }, runner: { ok: false, configured: true, reachable: false } },
    });
  });

  test('runner up with the same configuration: ready (200)', async () => {
    runner = await startRunner({ env: { SKILL_MCP_UID_RANGE: '61924-61931' }, base, args: frontArgs });
    const ready = await get(front, '/readyz');
    expect(ready.status, JSON.stringify(ready.body)).toBe(200);
    expect(ready.body).toMatchObject({
      ready: true,
      checks: { runner: { ok: true, reachable: true }, ledger: { ok: true, kind: 'file' } },
    });
    expect(front.stderr()).toContain('ready: catalog loaded; runner reachable with the same configuration');
  });

  test("a front whose grant differs from the runner's: CONFIG_MISMATCH naming what differs, at start and in /readyz", async () => {
    mismatched = await start({ SKILL_MCP_RUNNER_SOCKET: socketPath, MCP_SKILL_RUN: '[]' });
    expect(mismatched.stderr()).toMatch(/not ready: CONFIG_MISMATCH with the runner \(differs: grant\)/);
    const ready = await get(mismatched, '/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ checks: { runner: { ok: false, reachable: true, configMismatch: ['grant'] } } });
  });

  test('runner stopped again: not ready, and the change is logged once', async () => {
    await runner!.stop();
    runner = undefined;
    const ready = await get(front, '/readyz');
    expect(ready.status).toBe(503);
    await get(front, '/readyz');
    expect(front.stderr().match(/not ready: the runner is not reachable/g)).toHaveLength(2);
  });

  test('a front with its own runner (standalone): nothing said at start, ready once asked (the runner starts on demand)', async () => {
    const own = await start({});
    expect(own.stderr()).not.toMatch(/ready/);
    const ready = await get(own, '/readyz');
    expect(ready.status, JSON.stringify(ready.body)).toBe(200);
    expect(ready.body).toMatchObject({ checks: { runner: { ok: true, configured: true, reachable: true } } });
  });

  test('other methods are 405; unknown paths stay 404', async () => {
    expect((await fetch(new URL('/readyz', front.url), { method: 'POST' })).status).toBe(405);
    expect((await fetch(new URL('/nope', front.url))).status).toBe(404);
  });
});
