/**
 * The workspace per run in hosted mode: an HTTP front (a fresh server per request) and a runner
 * started on its own. A client sends an input file larger than the old 4 MiB request cap (so the
 * body cap follows the input allowance) and stdin; the script reads them from its workspace and
 * writes a file that comes back as an embedded resource; the run's folder is gone afterwards.
 */
import { randomBytes, createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startRunner, tempDir, type RunnerHandle } from '../runner/harness.js';
import { connectClient, startHttp, type HttpServer } from './harness.js';
import { writeWorkspaceSkill } from '../e2e/workspace-skill.js';
import { runFoldersGone } from '../scratch-wait.js';

let runner: RunnerHandle;
let server: HttpServer;
let base: string;
const TOKEN = randomBytes(24).toString('hex');
const sha = (bytes: Uint8Array | string): string => createHash('sha256').update(bytes).digest('hex');

beforeAll(async () => {
  base = tempDir('http-files');
  const skills = tempDir('http-files-skills');
  writeWorkspaceSkill(skills);
  // Run uids apart from every other suite's range; as root the front drops to uid 61183 (the hosted recipe).
  const env = { SKILLS_DIR: skills };
  runner = await startRunner({
    env: { ...env, SKILL_MCP_UID_RANGE: '61910-61917' },
    base,
    args: process.getuid?.() === 0 ? ['--front-uid', '61183', '--front-gid', '61183'] : [],
  });
  server = await startHttp({ ...env, SKILL_MCP_RUNNER_SOCKET: runner.socketPath, MCP_CONFIRM_MODE: 'auto', SKILL_MCP_HTTP_TOKEN: TOKEN });
}, 60_000);
afterAll(async () => {
  await server?.stop();
  await runner?.stop();
  rmSync(base, { recursive: true, force: true });
});

describe.each(['legacy', 'modern'] as const)('skill_run with files over HTTP (hosted pair), %s era', (era) => {
  test('a 5 MiB input and stdin go in, out/result.json comes back as a resource, and the workspace is gone', async () => {
    const client = await connectClient(server.url, era, TOKEN);
    try {
      const form = 'x'.repeat(5 * 1024 * 1024);
      const args = {
        name: 'workspace',
        script: 'scripts/fill.py',
        args: ['form.txt', 'out/result.json'],
        stdin: 'hosted',
        files: [{ path: 'form.txt', base64: Buffer.from(form).toString('base64') }],
      };
      const first = await client.callTool({ name: 'skill_run', arguments: args });
      expect(first.isError, `${JSON.stringify(first.structuredContent ?? first.content)}\n${server.stderr()}`).not.toBe(true);
      const preview = first.structuredContent as { confirmToken: string; preview: { willRun: { inputs: unknown } } };
      expect(preview.preview.willRun.inputs).toEqual({
        files: [{ path: 'form.txt', size: form.length, sha256: sha(form) }],
        stdin: { size: 6, sha256: sha('hosted') },
      });
      const ran = await client.callTool({ name: 'skill_run', arguments: { ...args, confirmToken: preview.confirmToken } });
      expect(ran.isError, JSON.stringify(ran.structuredContent)).not.toBe(true);
      expect(ran.structuredContent).toMatchObject({ status: 'completed', exitCode: 0 });
      const resource = (ran.content as { type: string; resource?: { uri: string; text?: string } }[]).find((c) => c.type === 'resource')!
        .resource!;
      expect(resource.uri).toMatch(/^skill-run:\/\/[0-9a-f]+\/out\/result\.json$/);
      const written = JSON.parse(resource.text!) as { form: string; stdin: string };
      expect([written.form.length, written.form === form, written.stdin]).toEqual([form.length, true, 'hosted']);
      // Removed after the answer, before the run's slot is given back (runner/requests/run-path.ts).
      expect(await runFoldersGone(join(base, 'scratch'))).toEqual([]);
    } finally {
      await client.close();
    }
  }, 120_000);
});
