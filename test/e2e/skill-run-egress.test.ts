/**
 * Declared egress as a client sees it, through the SDK's real Client and the built bin: the
 * person is shown the destinations (and, standalone, that the skill granted them to itself), the
 * token binds them, a python3 script (urllib) and a node script reach a declared 127.0.0.1:<port>
 * through the run's proxy, an undeclared port is refused with the proxy's explanation, and a
 * hosted grant narrower than the declaration wins. Needs the bubblewrap sandbox (the level that
 * enforces egress). Network: only a test HTTP server on this machine's loopback.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { bwrapWorks, expectedLevel, isRoot } from '../levels.js';
import { startRunner, type RunnerHandle } from '../runner/harness.js';
import { ERAS, baseEnv, callTool, expectNoLeftovers, hostedRunnerArgs, serve, tempDir, type Served } from './harness.js';
import { askToken, audit } from './run-skills.js';

const FETCH_PY = `import json, sys, urllib.request, urllib.error
try:
    with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
        print(json.dumps({"status": r.status, "body": r.read().decode()}))
except urllib.error.HTTPError as e:
    print(json.dumps({"status": e.code, "body": e.read().decode()}))
except Exception as e:
    print(json.dumps({"error": str(e)}))
`;
// Node 20's http and fetch ignore HTTP_PROXY: the script sends its request to the proxy itself.
const FETCH_JS = `const http = require('node:http');
const proxy = new URL(process.env.HTTP_PROXY);
const target = new URL(process.argv[2]);
http.get({ host: proxy.hostname, port: proxy.port, path: target.href, headers: { Host: target.host } }, (res) => {
  let body = '';
  res.on('data', (c) => (body += c));
  res.on('end', () => console.log(JSON.stringify({ status: res.statusCode, body })));
}).on('error', (e) => console.log(JSON.stringify({ error: e.message })));
`;

let server: Server;
let port = 0;
let otherPort = 0;
const hits: string[] = [];
let root: string;

function writeSkill(dir: string, egress: string[]): void {
  const files = {
    'SKILL.md': `---\nname: fetcher\ndescription: Fetches a page for the egress tests.\nmcp-host:\n  version: 1\n  run:\n    - script: fetch.py\n      interpreter: python3\n      timeout: 30\n    - script: fetch.js\n      interpreter: node\n      timeout: 30\n  egress: [${egress.join(', ')}]\n---\nFetch things.\n`,
    'fetch.py': FETCH_PY,
    'fetch.js': FETCH_JS,
  };
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, 'fetcher', path)), { recursive: true, mode: 0o755 });
    writeFileSync(join(dir, 'fetcher', path), text, { mode: 0o644 });
  }
}

beforeAll(async () => {
  server = createServer((req, res) => {
    hits.push(req.url ?? '');
    res.end(`hello ${req.url}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
  // A second declared destination (never listened on) for the narrowing test.
  otherPort = port === 65535 ? port - 1 : port + 1;
  root = tempDir('egress-skills');
  writeSkill(root, [`127.0.0.1:${port}`, `127.0.0.1:${otherPort}`]);
});
afterAll(async () => {
  server?.close();
  await expectNoLeftovers();
});

async function runOnce(client: Served['client'], script: string, url: string) {
  const preview = await askToken(client, { name: 'fetcher', script, args: [url] });
  const ran = await callTool(client, 'skill_run', { name: 'fetcher', script, args: [url], confirmToken: preview.confirmToken });
  expect(ran.value['status'], ran.text).toBe('completed');
  return {
    willRun: preview.preview.willRun as typeof preview.preview.willRun & { egress?: string[]; egressWarning?: string; egressNote?: string },
    out: JSON.parse(String(ran.value['stdout'])) as { status?: number; body?: string; error?: string },
  };
}

describe.skipIf(!bwrapWorks)('standalone: the declaration is the grant, and the person is told', () => {
  let served: Served;
  let stateDir: string;

  beforeAll(async () => {
    stateDir = join(tempDir('state'), 'state');
    served = await serve({ SKILLS_DIR: root, SKILL_MCP_STATE_DIR: stateDir, MCP_CONFIRM_ELICITATION: 'off' }, ERAS[0]!);
  });
  afterAll(async () => {
    await served?.close();
  });

  test('the preview lists the destinations with a standalone warning; python urllib reaches the declared port through the proxy', async () => {
    const { willRun, out } = await runOnce(served.client, 'fetch.py', `http://127.0.0.1:${port}/python`);
    expect(willRun.isolation).toBe(expectedLevel(isRoot));
    expect(willRun.egress).toEqual([`127.0.0.1:${port}`, `127.0.0.1:${otherPort}`].sort());
    expect(willRun.egressWarning).toContain('No owner grant (standalone)');
    expect(willRun.envNames).toEqual(expect.arrayContaining(['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY']));
    expect(out).toEqual({ status: 200, body: 'hello /python' });
    const listed = (
      (await callTool(served.client, 'skill_list')).value['skills'] as { name: string; scripts: Record<string, unknown>[] }[]
    ).find((s) => s.name === 'fetcher')!;
    expect(listed.scripts.find((s) => s['script'] === 'fetch.py')).toMatchObject({
      egress: willRun.egress,
      egressWarning: willRun.egressWarning,
    });
  });

  test('a node script reaches it by sending its request to HTTP_PROXY', async () => {
    const { out } = await runOnce(served.client, 'fetch.js', `http://127.0.0.1:${port}/node`);
    expect(out).toEqual({ status: 200, body: 'hello /node' });
  });

  test('an undeclared port is refused by the proxy, whose answer names the missing entry; the audit has a line per connection', async () => {
    const undeclared = port > 2 ? port - 1 : port + 2;
    const { out } = await runOnce(served.client, 'fetch.py', `http://127.0.0.1:${undeclared}/nope`);
    expect(out.status).toBe(403);
    expect(out.body).toContain(`"127.0.0.1:${undeclared}" is missing`);
    const egressLines = audit(stateDir).filter((l) => l.event === 'egress');
    expect(egressLines.map((l) => [l['destination'], l['decision']])).toEqual([
      [`127.0.0.1:${port}`, 'allowed'],
      [`127.0.0.1:${port}`, 'allowed'],
      [`127.0.0.1:${undeclared}`, 'refused'],
    ]);
  });
});

describe.skipIf(!bwrapWorks)('a client that shows a prompt sees the network line', () => {
  test('the elicitation names the destinations and the standalone warning; approving runs it', async () => {
    let message = '';
    const served = await serve({ SKILLS_DIR: root, SKILL_MCP_STATE_DIR: join(tempDir('state'), 'state') }, ERAS[0]!, {
      onElicit: (params) => {
        message = params.message;
        return { action: 'accept', content: { confirm: true } };
      },
    });
    try {
      const ran = await callTool(served.client, 'skill_run', {
        name: 'fetcher',
        script: 'fetch.py',
        args: [`http://127.0.0.1:${port}/prompted`],
      });
      expect(ran.value['status'], ran.text).toBe('completed');
      expect(message).toContain(
        `network: only ${[`127.0.0.1:${port}`, `127.0.0.1:${otherPort}`].sort().join(', ')}, through the run's own proxy`,
      );
      expect(message).toContain('WARNING: No owner grant (standalone): this third-party script may connect to');
    } finally {
      await served.close();
    }
  });
});

describe.skipIf(!bwrapWorks)('hosted: MCP_SKILL_RUN egress only narrows', () => {
  let runner: RunnerHandle;
  let served: Served;

  beforeAll(async () => {
    const grant = JSON.stringify([{ skill: 'fetcher', script: 'fetch.py', egress: [`127.0.0.1:${otherPort}`, 'not-declared.example'] }]);
    const hostEnv = { MCP_SKILLS_PATH: root, MCP_SKILL_RUN: grant };
    runner = await startRunner({ env: { ...baseEnv(), ...hostEnv }, base: tempDir('runner'), args: hostedRunnerArgs() });
    served = await serve({ ...hostEnv, SKILL_MCP_RUNNER_SOCKET: runner.socketPath }, ERAS[0]!);
  });
  afterAll(async () => {
    await served?.close();
    await runner?.stop();
  });

  test('the run gets only the granted declared destination; the declared-but-ungranted one is refused; a granted undeclared one is a grant problem', async () => {
    const before = hits.length;
    const { willRun, out } = await runOnce(served.client, 'fetch.py', `http://127.0.0.1:${port}/not-granted`);
    expect(willRun.egress).toEqual([`127.0.0.1:${otherPort}`]);
    // No self-grant warning (the owner granted it); the loopback address is still named as such.
    expect(willRun.egressWarning).toBe(
      `The script may connect to addresses that are not on the public internet: 127.0.0.1:${otherPort} is this machine (loopback).`,
    );
    expect(out.status).toBe(403);
    expect(hits.length).toBe(before);
    const list = await callTool(served.client, 'skill_list');
    const problems = list.value['problems'] as { path: string; reason: string; detail: string }[];
    expect(problems).toContainEqual(
      expect.objectContaining({
        path: 'MCP_SKILL_RUN/fetcher/fetch.py',
        reason: 'grant',
        detail: expect.stringContaining('not-declared.example'),
      }),
    );
  });
});
