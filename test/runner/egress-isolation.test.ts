/**
 * Declared egress (issue #11), what a run sees and reaches besides the proxy's traffic, through the
 * real runner on its real socket: the preview lists the destinations and warns of a standalone
 * self-grant, and the script gets exactly the approved variables (the proxy's among them); a raw
 * socket around the proxy reaches nothing; a skill without egress has no proxy variables and
 * reaches nothing; the confirmation token is bound to the destinations. As an ordinary uid (level
 * `namespace`) and as root (`namespace-uid`).
 *
 * Tier `level` (not `node`): these run only where bubblewrap gives the run a network namespace of
 * its own (skipped without it) and assert what that namespace lets through; none of them depends on
 * how a Node major parses the proxy's traffic (that is egress.test.ts, in `node`).
 *
 * Network: only this machine's loopback (a test server on 127.0.0.1 that the test starts).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { namespaceVariants } from '../levels.js';
import { probe, scripts, serveOnLoopback } from './egress-probe.js';
import type { Served } from './egress-probe.js';
import { prepareAndRun, text, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';
import { startRunnerAs } from './runner-as.js';

const variants = namespaceVariants(40211);

describe.each(variants)('declared egress, what a run sees and reaches around the proxy, $name', (variant) => {
  const skip = !variant.run;
  let allowed: Served;
  let standalone: RunnerHandle;
  let skillsRoot: string;

  beforeAll(async () => {
    if (skip) return;
    allowed = await serveOnLoopback('allowed');
    skillsRoot = writeSkills({
      reach: { run: scripts, files: probe, egress: [`127.0.0.1:${allowed.port}`, `localhost:${allowed.port}`, '127.0.0.1:1'] },
      offline: { run: scripts, files: probe },
      drift: { run: scripts, files: probe, egress: ['api.example.com'] },
    });
    standalone = await startRunnerAs(variant.uid, { SKILLS_DIR: skillsRoot }, 'egress-iso', 60);
  });
  afterAll(async () => {
    await standalone?.stop();
    allowed?.server.close();
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

  it.skipIf(skip)('a raw socket around the proxy reaches nothing (the run has no network but its own loopback)', async () => {
    const { out } = await run(standalone, 'reach', 'raw.py', [String(allowed.port)]);
    expect(out).toBe('ConnectionRefusedError');
  });

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
});
