/**
 * An egress refusal as the client sees it (issue 27), at the level without bubblewrap where a root
 * runner still isolates the run (`uid-sandbox`): through the SDK's real Client over stdio and the
 * built bin with its own runner (started with SKILL_MCP_BWRAP=off). There is no proxy, so the
 * preview says the declared destination is not reachable, and the result claims no refusals it
 * never saw. Network: a test HTTP server on loopback that the skill declares (not reached).
 *
 * Tier `uid`: the runner is told SKILL_MCP_BWRAP=off whatever the pass, so only root or not changes
 * the outcome (it needs root). Not `node`: no proxy, nothing on the wire. The refusals a proxy
 * reports are skill-run-egress-refusals.test.ts.
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { isRoot } from '../levels.js';
import { writeConnectorSkill } from './egress-refusal-skills.js';
import { ERAS, callTool, expectNoLeftovers, serve, tempDir } from './harness.js';
import { askToken } from './run-skills.js';

let server: Server;
let root: string;

beforeAll(async () => {
  server = createServer((req, res) => res.end(`hello ${req.url}`));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  root = tempDir('egress-refusals-off');
  writeConnectorSkill(root, 'connector', [`127.0.0.1:${port}`, `localhost:${port}`]);
});
afterAll(async () => {
  server?.close();
  await expectNoLeftovers();
});

describe.skipIf(!isRoot)('without bubblewrap (root, uid-sandbox): no proxy, so no egress summary', () => {
  test('a declared destination is unreachable, the preview says so, and the result claims no refusals it never saw', async () => {
    const served = await serve(
      { SKILLS_DIR: root, SKILL_MCP_STATE_DIR: join(tempDir('state'), 'state'), SKILL_MCP_BWRAP: 'off', MCP_CONFIRM_ELICITATION: 'off' },
      ERAS[0]!,
    );
    try {
      const preview = await askToken(served.client, { name: 'connector', script: 'quiet.py' });
      expect(preview.preview.willRun.isolation).toBe('uid-sandbox');
      expect((preview.preview.willRun as { egressNote?: string }).egressNote).toContain(
        'Not reachable at this isolation level (uid-sandbox)',
      );
      const ran = await callTool(served.client, 'skill_run', {
        name: 'connector',
        script: 'quiet.py',
        args: [],
        confirmToken: preview.confirmToken,
      });
      expect(ran.value['status'], ran.text).toBe('completed');
      expect(ran.value).not.toHaveProperty('egress');
    } finally {
      await served.close();
    }
  });
});
