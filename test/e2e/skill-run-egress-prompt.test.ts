/**
 * Declared egress in a client's approval prompt, through the SDK's real Client (which answers the
 * elicitation) and the built bin: the prompt names the destinations, that they are reached through
 * the run's own proxy, and the standalone warning (the skill granted them to itself); accepting
 * runs the script. Needs the bubblewrap sandbox (the levels that give a run a proxy). Network: only
 * a test HTTP server on this machine's loopback.
 *
 * Tier `front`: what is asserted is the prompt's text, made by the front from the preview before
 * anything runs, and the same at both bubblewrap levels (root or not); the proxy's traffic is
 * skill-run-egress.test.ts (level, node).
 */
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { bwrapWorks } from '../levels.js';
import { fetcherSkill } from './fetcher-skill.js';
import { ERAS, callTool, serve, tempDir } from './harness.js';

const fetcher = fetcherSkill();

describe.skipIf(!bwrapWorks)('a client that shows a prompt sees the network line', () => {
  test('the elicitation names the destinations and the standalone warning; approving runs it', async () => {
    let message = '';
    const served = await serve({ SKILLS_DIR: fetcher.root(), SKILL_MCP_STATE_DIR: join(tempDir('state'), 'state') }, ERAS[0]!, {
      onElicit: (params) => {
        message = params.message;
        return { action: 'accept', content: { confirm: true } };
      },
    });
    try {
      const ran = await callTool(served.client, 'skill_run', {
        name: 'fetcher',
        script: 'fetch.py',
        args: [`http://127.0.0.1:${fetcher.port()}/prompted`],
      });
      expect(ran.value['status'], ran.text).toBe('completed');
      expect(message).toContain(
        `network: only ${[`127.0.0.1:${fetcher.port()}`, `127.0.0.1:${fetcher.otherPort()}`].sort().join(', ')}, through the run's own proxy`,
      );
      expect(message).toContain('WARNING: No owner grant (standalone): this third-party script may connect to');
    } finally {
      await served.close();
    }
  });
});
