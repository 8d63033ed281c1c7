/**
 * Declared egress, enforced (issue #11), through the real runner on its real socket: a python3
 * script (urllib, an http.client CONNECT tunnel, curl) and a node script reach a test HTTP server
 * on this machine's 127.0.0.1 that their skill declares, through the run's own proxy; an undeclared
 * port, a raw socket around the proxy and a declared *name* that resolves to loopback all fail; a
 * skill without egress reaches nothing; a grant narrower than the declaration wins; and the audit
 * log has a line per connection. As an ordinary uid (level `namespace`) and as root
 * (`namespace-uid`); then what egress means at the levels without bubblewrap.
 *
 * Network: only this machine's loopback (test servers on 127.0.0.1 that the test starts).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { namespaceVariants } from '../levels.js';
import { auditLines, isRoot, prepareAndRun, startRunner, tempDir, text, uidRange, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

const probe = {
  // urllib honours HTTP_PROXY; an HTTP error's body is the proxy's explanation.
  'fetch.py': `import json, sys, urllib.request, urllib.error
try:
    with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
        print(json.dumps({"status": r.status, "body": r.read().decode()}))
except urllib.error.HTTPError as e:
    print(json.dumps({"status": e.code, "body": e.read().decode()}))
except Exception as e:
    print(json.dumps({"error": type(e).__name__ + ": " + str(e)}))
`,
  // A CONNECT tunnel to host:port through HTTPS_PROXY (what HTTPS clients do), plain HTTP inside.
  'tunnel.py': `import json, os, sys, http.client, urllib.parse
proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
c = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=10)
c.set_tunnel(sys.argv[1], int(sys.argv[2]))
try:
    c.request("GET", "/tunnel"); r = c.getresponse()
    print(json.dumps({"status": r.status, "body": r.read().decode()}))
except OSError as e:
    print(json.dumps({"error": str(e)}))
`,
  'curl.py': `import subprocess, sys
r = subprocess.run(["curl", "-sS", "--max-time", "10", sys.argv[1]], capture_output=True, text=True)
print(r.returncode, r.stdout.strip() or r.stderr.strip())
`,
  // Around the proxy: a raw TCP connection to the server's own address and port.
  'raw.py': `import socket, sys
s = socket.socket(); s.settimeout(5)
try:
    s.connect(("127.0.0.1", int(sys.argv[1]))); print("connected")
except Exception as e: print(type(e).__name__)
`,
  'env.py': `import json, os
print(json.dumps(dict(os.environ)))
`,
  // Node 20's http ignores HTTP_PROXY: a node script sends its request to the proxy itself.
  'fetch.js': `const http = require('node:http');
const proxy = new URL(process.env.HTTP_PROXY);
const target = new URL(process.argv[2]);
const req = http.request({ host: proxy.hostname, port: proxy.port, path: target.href, headers: { Host: target.host } }, (res) => {
  let body = '';
  res.on('data', (c) => (body += c));
  res.on('end', () => console.log(JSON.stringify({ status: res.statusCode, body })));
});
req.on('error', (e) => console.log(JSON.stringify({ error: e.message })));
req.end();
`,
};
const scripts = Object.keys(probe).map((script) => ({ script, interpreter: script.endsWith('.js') ? 'node' : 'python3', timeout: 30 }));

interface Served {
  server: Server;
  port: number;
  hits: string[];
}

/** An HTTP server on this machine's loopback that answers with its name and the path asked for. */
async function serveOnLoopback(name: string): Promise<Served> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url ?? '');
    res.end(`${name} ${req.url}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port, hits };
}

const variants = namespaceVariants(40211);

describe.each(variants)('declared egress, $name', (variant) => {
  const skip = !variant.run;
  let allowed: Served;
  let undeclared: Served;
  let standalone: RunnerHandle;
  let hosted: RunnerHandle;
  let skillsRoot: string;

  beforeAll(async () => {
    if (skip) return;
    allowed = await serveOnLoopback('allowed');
    undeclared = await serveOnLoopback('undeclared');
    const skills = writeSkills({
      reach: { run: scripts, files: probe, egress: [`127.0.0.1:${allowed.port}`, `localhost:${allowed.port}`, '127.0.0.1:1'] },
      offline: { run: scripts, files: probe },
      drift: { run: scripts, files: probe, egress: ['api.example.com'] },
    });
    skillsRoot = skills;
    const base = tempDir('egress');
    if (variant.uid !== undefined) execFileSync('chown', ['-R', `${variant.uid}:${variant.uid}`, base]);
    chmodSync(base, 0o755);
    const asUid =
      variant.uid !== undefined ? { spawnPrefix: ['setpriv', `--reuid=${variant.uid}`, `--regid=${variant.uid}`, '--clear-groups'] } : {};
    standalone = await startRunner({ env: { SKILLS_DIR: skills }, base, args: ['--uid-range', uidRange(8)], ...asUid });
    // Hosted: the owner grants the script one of the declared destinations only.
    const grant = JSON.stringify([{ skill: 'reach', script: 'fetch.py', egress: [`127.0.0.1:${allowed.port}`] }]);
    const hostedBase = tempDir('egress-hosted');
    if (variant.uid !== undefined) execFileSync('chown', ['-R', `${variant.uid}:${variant.uid}`, hostedBase]);
    chmodSync(hostedBase, 0o755);
    hosted = await startRunner({
      env: { MCP_SKILLS_PATH: skills, MCP_SKILL_RUN: grant },
      base: hostedBase,
      args: ['--uid-range', uidRange(8)],
      ...asUid,
    });
  });
  afterAll(async () => {
    await standalone?.stop();
    await hosted?.stop();
    allowed?.server.close();
    undeclared?.server.close();
  });

  async function run(runner: RunnerHandle, skill: string, script: string, args: string[]) {
    const ran = await prepareAndRun(runner.client, skill, script, args);
    expect(ran.willRun.isolation).toBe(variant.level);
    return { ...ran, out: text(ran.result.stdout).trim() };
  }

  it.skipIf(skip)(
    'the preview lists the destinations, warns that a standalone self-grant brings them, and the script gets exactly the approved variables',
    async () => {
      const { willRun, out } = await run(standalone, 'reach', 'env.py', []);
      expect(willRun.egress).toEqual([`127.0.0.1:${allowed.port}`, '127.0.0.1:1', `localhost:${allowed.port}`].sort());
      expect(willRun.egressWarning).toContain('No owner grant (standalone)');
      expect(willRun.egressNote).toBeUndefined();
      const env = JSON.parse(out) as Record<string, string>;
      expect(Object.keys(env).sort()).toEqual(willRun.envNames);
      for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'all_proxy'])
        expect(env[name]).toBe('http://127.0.0.1:3128');
      expect(env['NO_PROXY']).toBe('');
      expect(env['NODE_USE_ENV_PROXY']).toBe('1');
    },
  );

  it.skipIf(skip)('python urllib reaches a declared 127.0.0.1:<port> through the proxy', async () => {
    const before = allowed.hits.length;
    const { out } = await run(standalone, 'reach', 'fetch.py', [`http://127.0.0.1:${allowed.port}/from-python`]);
    expect(JSON.parse(out)).toEqual({ status: 200, body: 'allowed /from-python' });
    expect(allowed.hits.slice(before)).toEqual(['/from-python']);
  });

  it.skipIf(skip)('a CONNECT tunnel (what HTTPS clients use) and curl reach it too', async () => {
    const tunnel = await run(standalone, 'reach', 'tunnel.py', ['127.0.0.1', String(allowed.port)]);
    expect(JSON.parse(tunnel.out)).toEqual({ status: 200, body: 'allowed /tunnel' });
    const curl = await run(standalone, 'reach', 'curl.py', [`http://127.0.0.1:${allowed.port}/from-curl`]);
    expect(curl.out).toBe('0 allowed /from-curl');
  });

  it.skipIf(skip)('a node script that sends its request to HTTP_PROXY reaches it', async () => {
    const { out } = await run(standalone, 'reach', 'fetch.js', [`http://127.0.0.1:${allowed.port}/from-node`]);
    expect(JSON.parse(out)).toEqual({ status: 200, body: 'allowed /from-node' });
  });

  it.skipIf(skip)(
    'an undeclared port on the same address is refused with a 403 naming the missing entry (by URL and by CONNECT)',
    async () => {
      const { out } = await run(standalone, 'reach', 'fetch.py', [`http://127.0.0.1:${undeclared.port}/nope`]);
      const answer = JSON.parse(out) as { status: number; body: string };
      expect(answer.status).toBe(403);
      expect(answer.body).toContain(`"127.0.0.1:${undeclared.port}" is missing`);
      const tunnel = await run(standalone, 'reach', 'tunnel.py', ['127.0.0.1', String(undeclared.port)]);
      expect((JSON.parse(tunnel.out) as { error: string }).error).toMatch(/403/);
      expect(undeclared.hits).toEqual([]);
    },
  );

  it.skipIf(skip)('a raw socket around the proxy reaches nothing (the run has no network but its own loopback)', async () => {
    const { out } = await run(standalone, 'reach', 'raw.py', [String(allowed.port)]);
    expect(out).toBe('ConnectionRefusedError');
  });

  it.skipIf(skip)(
    'a declared name that resolves to loopback (localhost:<port>) is refused: only the address itself may be declared',
    async () => {
      const before = allowed.hits.length;
      const { out } = await run(standalone, 'reach', 'fetch.py', [`http://localhost:${allowed.port}/by-name`]);
      const answer = JSON.parse(out) as { status: number; body: string };
      expect(answer.status).toBe(403);
      expect(answer.body).toMatch(/localhost resolves to (127\.0\.0\.1|::1) \(loopback\)/);
      expect(allowed.hits.length).toBe(before);
    },
  );

  it.skipIf(skip)('a skill without egress has no proxy variables and reaches nothing', async () => {
    const env = await run(standalone, 'offline', 'env.py', []);
    expect(env.willRun.egress).toBeUndefined();
    expect(Object.keys(JSON.parse(env.out) as object).filter((n) => /proxy/i.test(n))).toEqual([]);
    const before = allowed.hits.length;
    const { out } = await run(standalone, 'offline', 'fetch.py', [`http://127.0.0.1:${allowed.port}/offline`]);
    expect((JSON.parse(out) as { error: string }).error).toMatch(/Connection refused/);
    expect(allowed.hits.length).toBe(before);
  });

  it.skipIf(skip)(
    'hosted: a grant narrower than the declaration wins (no warning; the other declared destinations are refused)',
    async () => {
      const ok = await run(hosted, 'reach', 'fetch.py', [`http://127.0.0.1:${allowed.port}/granted`]);
      expect(ok.willRun.egress).toEqual([`127.0.0.1:${allowed.port}`]);
      // No self-grant warning (the owner granted it); the loopback address is still named as such.
      expect(ok.willRun.egressWarning).toBe(
        `The script may connect to addresses that are not on the public internet: 127.0.0.1:${allowed.port} is this machine (loopback).`,
      );
      expect(JSON.parse(ok.out)).toEqual({ status: 200, body: 'allowed /granted' });
      const refused = await run(hosted, 'reach', 'fetch.py', [`http://127.0.0.1:1/declared-not-granted`]);
      expect(JSON.parse(refused.out)).toMatchObject({ status: 403 });
    },
  );

  it.skipIf(skip)(
    'the token is bound to the destinations: an egress list changed after the approval is DRAFT_CHANGED, with a fresh preview',
    async () => {
      const prepared = await standalone.client.prepare({ skill: 'drift', script: 'env.py', args: [] });
      if (!prepared.ok) throw new Error(prepared.error.message);
      expect(prepared.result.willRun.egress).toEqual(['api.example.com']);
      const file = join(skillsRoot, 'drift', 'SKILL.md');
      writeFileSync(file, readFileSync(file, 'utf8').replace('egress: [api.example.com]', 'egress: [api.example.com, evil.example.org]'));
      const ran = await standalone.client.run(
        { skill: 'drift', script: 'env.py', args: [], confirmToken: prepared.result.confirmToken },
        { timeoutMs: 30_000 },
      );
      expect(ran).toMatchObject({
        ok: false,
        error: { code: 'DRAFT_CHANGED', fresh: { willRun: { egress: ['api.example.com', 'evil.example.org'] } } },
      });
    },
  );

  it.skipIf(skip)(
    'the audit log has one egress line per connection (destination, decision, bytes each way), before the run.exit',
    async () => {
      const { result } = await run(standalone, 'reach', 'fetch.py', [`http://127.0.0.1:${allowed.port}/audited`]);
      const refused = await run(standalone, 'reach', 'fetch.py', [`http://127.0.0.1:${undeclared.port}/audited`]);
      const lines = auditLines(standalone.stateDir);
      const of = (runId: string) => lines.filter((l) => l['run_id'] === runId);
      const okLines = of(result.runId);
      expect(okLines.map((l) => l['event'])).toEqual(['run.accept', 'egress', 'run.exit']);
      expect(okLines[0]).toMatchObject({ egress_mode: 'proxy' });
      expect(okLines[1]).toMatchObject({
        destination: `127.0.0.1:${allowed.port}`,
        method: 'GET',
        decision: 'allowed',
        entry: `127.0.0.1:${allowed.port}`,
        address: '127.0.0.1',
      });
      expect(okLines[1]!['bytes_up']).toBeGreaterThan(0);
      expect(okLines[1]!['bytes_down']).toBeGreaterThan('allowed /audited'.length);
      expect(okLines[2]).toMatchObject({ egress_allowed: 1, egress_refused: 0 });
      const noLines = of(refused.result.runId);
      expect(noLines[1]).toMatchObject({
        event: 'egress',
        destination: `127.0.0.1:${undeclared.port}`,
        decision: 'refused',
        reason: 'not-allowed',
        bytes_up: 0,
        bytes_down: 0,
      });
      expect(noLines[2]).toMatchObject({ egress_allowed: 0, egress_refused: 1 });
    },
  );
});

describe('egress at the levels without the bubblewrap sandbox (SKILL_MCP_BWRAP=off)', () => {
  let server: Served;
  let skills: string;
  const runners: RunnerHandle[] = [];

  beforeAll(async () => {
    server = await serveOnLoopback('host');
    skills = writeSkills({ reach: { run: scripts, files: probe, egress: [`127.0.0.1:${server.port}`] } });
  });
  afterAll(async () => {
    for (const runner of runners) await runner.stop();
    server?.server.close();
  });

  async function runnerAs(uid: number | undefined): Promise<RunnerHandle> {
    const base = tempDir('egress-off');
    if (uid !== undefined) execFileSync('chown', ['-R', `${uid}:${uid}`, base]);
    chmodSync(base, 0o755);
    const runner = await startRunner({
      env: { SKILLS_DIR: skills, SKILL_MCP_BWRAP: 'off' },
      base,
      args: ['--uid-range', uidRange(8)],
      ...(uid !== undefined ? { spawnPrefix: ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups'] } : {}),
    });
    runners.push(runner);
    return runner;
  }

  it.skipIf(!isRoot)(
    'uid-sandbox (root, own network namespace, no bridge): fails closed — the preview says the run reaches none of its destinations, and it does not',
    async () => {
      const runner = await runnerAs(undefined);
      const { willRun, result } = await prepareAndRun(runner.client, 'reach', 'fetch.py', [`http://127.0.0.1:${server.port}/uid-sandbox`]);
      expect(willRun.isolation).toBe('uid-sandbox');
      expect(willRun.egress).toEqual([`127.0.0.1:${server.port}`]);
      expect(willRun.egressNote).toContain('reaches none of these destinations');
      expect(willRun.envNames.filter((n) => /proxy/i.test(n))).toEqual([]);
      // Its namespace's loopback is not even up: nothing is reachable at all.
      expect((JSON.parse(text(result.stdout)) as { error: string }).error).toMatch(/Network is unreachable|Connection refused/);
      expect(server.hits).not.toContain('/uid-sandbox');
    },
  );

  it('same-uid (no network namespace): the preview says honestly that nothing enforces the list — the script reaches undeclared places too', async () => {
    const runner = await runnerAs(isRoot ? 40211 : undefined);
    const { willRun, result } = await prepareAndRun(runner.client, 'reach', 'raw.py', [String(server.port)]);
    expect(willRun.isolation).toBe('same-uid');
    expect(willRun.egressNote).toContain('can reach any host, not only these');
    expect(text(result.stdout).trim()).toBe('connected');
  });
});
