/**
 * How the runner spawns runs is never silent (runner/sandbox/posix-spawn.ts, docs/isolation.md
 * "How a run is spawned"): its runner.start line names the path, and a runner that spawns through
 * Node's child_process says so on stderr, with why. A run completes on either path. Through the
 * SDK client over stdio, the front's own runner on its real socket.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { loadPosixSpawn } from '../../runner/sandbox/posix-spawn.js';
import { callTool, ERAS, expectNoLeftovers, serve, tempDir, type Served } from './harness.js';
import { askToken, audit, writeRunSkills } from './run-skills.js';

const root = writeRunSkills();
const closing: Served[] = [];
afterAll(async () => {
  for (const s of closing) await s.close();
  await expectNoLeftovers();
});

// An internal note, said at SKILL_MCP_LOG_LEVEL=debug.
const NOTE = "debug: runs are spawned by Node's child_process, not posix_spawn";

async function runWith(env: Record<string, string>): Promise<{ served: Served; start: Record<string, unknown> }> {
  const stateDir = join(tempDir('state'), 'state');
  const served = await serve(
    { SKILLS_DIR: root, SKILL_MCP_STATE_DIR: stateDir, MCP_CONFIRM_ELICITATION: 'off', SKILL_MCP_LOG_LEVEL: 'debug', ...env },
    ERAS[0]!,
  );
  closing.push(served);
  const args = { name: 'reporter', script: 'scripts/report.js', args: ['ok'] };
  const result = await callTool(served.client, 'skill_run', { ...args, confirmToken: (await askToken(served.client, args)).confirmToken });
  expect(result.value['status'], result.text).toBe('completed');
  const start = audit(stateDir).find((l) => l.event === 'runner.start');
  expect(start).toBeDefined();
  return { served, start: start as unknown as Record<string, unknown> };
}

describe('the spawn path a runner takes is said', () => {
  test.skipIf(loadPosixSpawn() === undefined)(
    'by default (koffi and glibc here): posix_spawn, named on the start line, no note',
    async () => {
      const { served, start } = await runWith({});
      expect(start['spawn']).toBe('posix_spawn');
      expect(served.stderr()).not.toContain(NOTE);
    },
  );

  test('SKILL_MCP_SPAWN=node: child_process, named on the start line and said on stderr with why', async () => {
    const { served, start } = await runWith({ SKILL_MCP_SPAWN: 'node' });
    expect(start['spawn']).toBe('child_process');
    expect(served.stderr()).toContain(`${NOTE} (SKILL_MCP_SPAWN=node)`);
  });
});
