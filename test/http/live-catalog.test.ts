/**
 * The live catalog over Streamable HTTP: a 2026-07-28 client's `subscriptions/listen` stream
 * carries each change (the stateless 2025 fallback has no stream; its clients see the change at
 * their next request), and MCP Inspector's `--verify --require-digests` still passes in both eras
 * against the running server after the sequence of edits.
 */
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, describe, expect, test } from 'vitest';
import { connectClient, REPO, startHttp, type HttpServer } from './harness.js';
import { defineLiveScenario, expectListingMatchesDisk, walkSkills } from '../e2e/live-scenario.js';
import { inspectorCommand } from '../verifiers.js';

const [INSPECTOR_NODE, INSPECTOR] = inspectorCommand();

function inspect(url: string, era: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const args = ['--cli', url, '--protocol-era', era, '--method', 'skills/list', '--verify', '--require-digests'];
  return new Promise((resolve) => {
    execFile(INSPECTOR_NODE, [INSPECTOR, ...args], { cwd: REPO, timeout: 60_000, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
    });
  });
}

/** Resolves once the server's stderr matches `pattern` (an event wait with a generous deadline). */
function stderrMatches(server: HttpServer, pattern: RegExp, withinMs = 30_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const stream = server.process.stderr!;
    const check = (): void => {
      if (!pattern.test(server.stderr())) return;
      stream.off('data', check);
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      stream.off('data', check);
      reject(new Error(`stderr never matched ${pattern}:\n${server.stderr()}`));
    }, withinMs);
    stream.on('data', check);
    check();
  });
}

const base = mkdtempSync(join(tmpdir(), 'skill-mcp-http-live-'));
chmodSync(base, 0o755);
let server: HttpServer | undefined;
let legacy: Client | undefined;
afterAll(async () => {
  await legacy?.close();
  await server?.stop();
  rmSync(base, { recursive: true, force: true });
});

defineLiveScenario(
  'a live catalog over HTTP, 2026-07-28 (subscriptions/listen)',
  () => join(base, 'skills'),
  async (root) => {
    server = await startHttp({
      SKILLS_DIR: root,
      SKILL_MCP_PAGE_SIZE: '3',
      TMPDIR: base,
      SKILL_MCP_STATE_DIR: join(base, 'state'),
      SKILL_MCP_LOG_LEVEL: 'debug',
    });
    await stderrMatches(server, /watching the skill folders for changes/);
    const client = await connectClient(server.url, 'modern');
    const subscription = await client.listen({ resourcesListChanged: true, promptsListChanged: true });
    expect(subscription.honoredFilter).toEqual({ resourcesListChanged: true, promptsListChanged: true });
    return { client, close: () => client.close() };
  },
  (get) => {
    describe('after the edits', () => {
      test('a 2025-era client (stateless, no stream) sees the same catalog at its next request', async () => {
        const { root } = get();
        legacy = await connectClient(server!.url, 'legacy');
        await expectListingMatchesDisk(legacy, root, ['alpha', 'invoice-reader', ...Array.from({ length: 10 }, (_, i) => `bulk-${i}`)]);
        expect((await walkSkills(legacy)).restarts).toBe(0);
      });

      test.each(['legacy', 'modern'])(
        'Inspector --verify --require-digests exits 0 against the running server, --protocol-era %s',
        async (era) => {
          const run = await inspect(server!.url, era);
          expect(run.code, run.stderr).toBe(0);
          expect(run.stdout.split('\n').filter((l) => l.startsWith('{')).length).toBe(12);
        },
      );
    });
  },
);
