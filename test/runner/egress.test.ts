/**
 * Declared egress, enforced (issue #11): the run's proxy on the wire, through the real runner on its
 * real socket. A python3 script (urllib, an http.client CONNECT tunnel, curl) and a node script
 * reach a test HTTP server on this machine's 127.0.0.1 that their skill declares, through the run's
 * own proxy; an undeclared port and a declared *name* that resolves to loopback are refused with a
 * 403 that says why; a grant narrower than the declaration wins; and the audit log has a line per
 * connection with the bytes each way. As an ordinary uid (level `namespace`) and as root
 * (`namespace-uid`).
 *
 * Tiers: `level`, as every test here runs only where bubblewrap gives the run its own proxy (skipped
 * without it), and `node`: each test's outcome is the proxy's parsing of a real client's request
 * (node:http, node:net in the helper), which is what changes between Node majors. What a run sees
 * and reaches around the proxy is in egress-isolation.test.ts (not Node-sensitive); egress at the
 * levels without bubblewrap in egress-without-bwrap.test.ts (root or not, not bubblewrap).
 *
 * Network: only this machine's loopback (test servers on 127.0.0.1 that the test starts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { namespaceVariants } from '../levels.js';
import { probe, scripts, serveOnLoopback } from './egress-probe.js';
import type { Served } from './egress-probe.js';
import { auditLines, prepareAndRun, text, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';
import { startRunnerAs } from './runner-as.js';

const variants = namespaceVariants(40211);

describe.each(variants)('declared egress on the wire, $name', (variant) => {
  const skip = !variant.run;
  let allowed: Served;
  let undeclared: Served;
  let standalone: RunnerHandle;
  let hosted: RunnerHandle;

  beforeAll(async () => {
    if (skip) return;
    allowed = await serveOnLoopback('allowed');
    undeclared = await serveOnLoopback('undeclared');
    const skills = writeSkills({
      reach: { run: scripts, files: probe, egress: [`127.0.0.1:${allowed.port}`, `localhost:${allowed.port}`, '127.0.0.1:1'] },
    });
    standalone = await startRunnerAs(variant.uid, { SKILLS_DIR: skills }, 'egress', 8);
    // Hosted: the owner grants the script one of the declared destinations only.
    const grant = JSON.stringify([{ skill: 'reach', script: 'fetch.py', egress: [`127.0.0.1:${allowed.port}`] }]);
    hosted = await startRunnerAs(variant.uid, { MCP_SKILLS_PATH: skills, MCP_SKILL_RUN: grant }, 'egress-hosted', 8);
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
