/**
 * Redaction, the second wall (issue 30 item 5), on the run's proxy: the SDK's real Client over stdio,
 * the built bin and its own runner, at the level this machine gives (CI: every level). A script asks its proxy for a destination named after its legacy `env` secret (declared
 * `secret: true`, granted, set in the runner's environment); the proxy's refusal reaches the result
 * and the audit log with the value as `[secret:NAME]`, and nothing the model or the audit log holds
 * has the value in any spelling. Network: only the run's own proxy (a refused CONNECT; nothing
 * leaves the machine).
 *
 * Tiers: `level` (only the bubblewrap levels give a run its own proxy: the test says it skips at the
 * others) and `node`: the refusal is the proxy's answer to a CONNECT (node:net, node:http), which
 * changes with the Node major. The rest of redaction is skill-run-redaction.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { hasBwrap } from '../levels.js';
import { RUNNER_NAME, expectNoSpelling, leakyFront, leakySkills } from './redaction-fixture.js';
import { audit } from './run-skills.js';

const root = leakySkills();

describe(`redaction on the proxy, ${RUNNER_NAME}`, () => {
  const front = leakyFront(root);

  describe('attack: a value spelled into a destination', () => {
    it("the proxy's refusal reaches the result and the audit log with the value redacted (levels with a proxy)", async (ctx) => {
      const ran = await front.run('connect.py');
      if (!hasBwrap(ran.isolation as never)) ctx.skip(`level ${ran.isolation} has no per-run proxy`);
      expect(String(ran.value['stdout']).trim()).toBe('HTTP/1.1 403 Forbidden');
      const egress = ran.value['egress'] as { refused: { host: string; port: number; reason: string }[] };
      expect(egress.refused).toEqual([{ host: '[secret:LEAKY_API_KEY].example', port: 443, reason: 'not-allowed', count: 1 }]);
      expect(ran.value['redaction']).toEqual({ count: 1, names: [{ name: 'LEAKY_API_KEY', count: 1 }] });
      const line = audit(front.stateDir()).find((l) => l.event === 'egress' && l.run_id === ran.value['runId'])!;
      expect(line).toMatchObject({ destination: '[secret:LEAKY_API_KEY].example:443', decision: 'refused' });
      expectNoSpelling(ran.all, 'the tool result');
      expectNoSpelling(front.auditText(), 'the audit log');
    }, 120_000);
  });
});
