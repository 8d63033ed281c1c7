/**
 * The stdio wire as a client that is not the SDK meets it: a whole session piped in at once
 * (`cat session.jsonl | skill-mcp`), lines that are not JSON-RPC, and a message far over the
 * per-message cap — each against the built server in a real process.
 */
import { spawn } from 'node:child_process';
import { afterAll, expect, test } from 'vitest';
import { Client, ProtocolError } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { MAX_STDIO_MESSAGE_BYTES } from '../../server/stdio/transport.js';
import { BUNDLED_SKILLS, SERVER_JS, baseEnv, callTool, expectNoLeftovers } from './harness.js';

afterAll(expectNoLeftovers);

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'piped', version: '0' } },
};
const INITIALIZED = { jsonrpc: '2.0', method: 'notifications/initialized' };

/** Runs the server with `input` as its whole stdin (closed at once) and collects what it wrote. */
function pipeSession(
  input: string,
  env: Record<string, string> = {},
): Promise<{ code: number | null; answers: Record<string, unknown>[]; stderr: string }> {
  const child = spawn(process.execPath, [SERVER_JS], {
    env: { ...baseEnv(), SKILLS_DIR: BUNDLED_SKILLS, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString('utf8');
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString('utf8');
  });
  child.stdin.end(input);
  return new Promise((resolve) =>
    child.once('close', (code) =>
      resolve({
        code,
        answers: stdout
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Record<string, unknown>),
        stderr,
      }),
    ),
  );
}

const lines = (...messages: unknown[]): string => messages.map((m) => `${JSON.stringify(m)}\n`).join('');

test('stdin closed right after a piped session: every request is still answered, then the server exits 0', async () => {
  const { code, answers, stderr } = await pipeSession(
    lines(
      INIT,
      INITIALIZED,
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'skill_list', arguments: {} } },
      { jsonrpc: '2.0', id: 3, method: 'resources/read', params: { uri: 'skill://commit-message/SKILL.md' } },
      { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'skill_load', arguments: { name: 'commit-message' } } },
      { jsonrpc: '2.0', id: 5, method: 'prompts/list' },
      {
        jsonrpc: '2.0',
        id: 6,
        method: 'tools/call',
        params: { name: 'skill_run', arguments: { name: 'commit-message', script: 'scripts/check-message.js', args: ['feat: x'] } },
      },
    ),
  );
  expect(stderr).not.toMatch(/error/i);
  expect(code).toBe(0);
  const byId = new Map(answers.map((a) => [a['id'], a]));
  expect([...byId.keys()].sort()).toEqual([1, 2, 3, 4, 5, 6]);
  for (const answer of answers) expect(answer).not.toHaveProperty('error');
  const list = JSON.parse((byId.get(2)!['result'] as { content: { text: string }[] }).content[0]!.text) as { skills: { name: string }[] };
  expect(list.skills.map((s) => s.name)).toEqual(['commit-message']);
  expect((byId.get(3)!['result'] as { contents: { text: string }[] }).contents[0]!.text).toMatch(/^---\nname: commit-message/);
  expect(JSON.stringify(byId.get(6)!['result'])).toContain('confirmToken');
});

test('a run waiting for the person to approve it in the client when input ends is answered (not approved), and the server exits', async () => {
  const { code, answers } = await pipeSession(
    lines({ ...INIT, params: { ...INIT.params, capabilities: { elicitation: { form: {} } } } }, INITIALIZED, {
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'skill_run', arguments: { name: 'commit-message', script: 'scripts/check-message.js', args: ['feat: x'] } },
    }),
  );
  expect(code).toBe(0);
  const asked = answers.find((a) => a['method'] === 'elicitation/create');
  expect(asked).toBeDefined();
  const run = answers.find((a) => a['id'] === 2)!;
  expect(run).toBeDefined();
  expect(JSON.stringify(run)).not.toContain('"status":"completed"');
});

test('lines that are not JSON-RPC get JSON-RPC errors (parse error, invalid request), and the requests around them are served', async () => {
  const { code, answers, stderr } = await pipeSession(
    `${lines(INIT, INITIALIZED)}not json\n{"jsonrpc":"2.0","id":7,"params":{}}\n${lines({ jsonrpc: '2.0', id: 8, method: 'ping' })}`,
  );
  expect(code).toBe(0);
  expect(answers).toContainEqual({ jsonrpc: '2.0', id: null, error: { code: -32700, message: expect.any(String) } });
  expect(answers).toContainEqual({ jsonrpc: '2.0', id: 7, error: { code: -32600, message: expect.any(String) } });
  expect(answers.find((a) => a['id'] === 8)).toMatchObject({ result: {} });
  expect(stderr).toContain('not JSON');
});

test('a request over the line cap (23 MiB by default: a skill_run with its whole input allowance) is refused at once with an error under its own id, and the session goes on', async () => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [SERVER_JS],
    env: { ...baseEnv(), SKILLS_DIR: BUNDLED_SKILLS },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString('utf8');
  });
  const client = new Client({ name: 'big-sender', version: '0' });
  await client.connect(transport);
  try {
    const huge = 'x'.repeat(MAX_STDIO_MESSAGE_BYTES + 1024 * 1024);
    const refused = await client.callTool({ name: 'skill_load', arguments: { name: huge } }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(ProtocolError);
    expect((refused as ProtocolError).code).toBe(-32600);
    expect((refused as ProtocolError).message).toContain(`at most ${MAX_STDIO_MESSAGE_BYTES} bytes`);
    expect(stderr).toMatch(/message too large: \d+ bytes/);
    // The connection survived: the next request is served normally.
    const list = await callTool(client, 'skill_list');
    expect(list.isError).toBe(false);
  } finally {
    await client.close();
  }
});

test('an oversized notification (no id to answer) is dropped with its reason on stderr; the session goes on', async () => {
  const big = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { pad: 'y'.repeat(MAX_STDIO_MESSAGE_BYTES) } });
  const { code, answers, stderr } = await pipeSession(
    `${lines(INIT, INITIALIZED)}${big}\n${lines({ jsonrpc: '2.0', id: 2, method: 'ping' })}`,
  );
  expect(code).toBe(0);
  expect(answers.map((a) => a['id'])).toEqual([1, 2]);
  expect(stderr).toMatch(/message too large: \d+ bytes.*no id to answer/);
});
