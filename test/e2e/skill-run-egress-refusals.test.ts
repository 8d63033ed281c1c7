/**
 * An egress refusal as the client sees it (issue 27), through the SDK's real Client over stdio and
 * the built bin with its own runner: a script that connects where its declaration does not allow
 * (an undeclared name, an undeclared port, a declared name resolving to loopback, a metadata
 * address, the unspecified address) gets a `skill_run` result naming each refusal and why — in
 * `structuredContent.egress` and in one line of text — instead of a bare connection failure; a
 * script that connects nowhere shows none; a flood of 1000 refused connections gives a bounded
 * list and the full count; and the audit log still has its line for every connection. At both
 * bubblewrap levels (the ones that enforce egress): a front and runner as an ordinary uid
 * (`namespace`), and as root (`namespace-uid`). Network: only a test HTTP server on loopback.
 *
 * Tiers: `level` (only the bubblewrap levels give a run a proxy; skipped at the others) and `node`:
 * every refusal here is the proxy's answer to a real client's request or CONNECT (node:net,
 * node:http). What a root runner without bubblewrap says instead is
 * skill-run-egress-refusals-off.test.ts (`uid`).
 */
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { namespaceVariants } from '../levels.js';
import { writeConnectorSkill } from './egress-refusal-skills.js';
import { ERAS, SUITE_TMP, expectNoLeftovers, serve, tempDir, type Served } from './harness.js';
import { askToken, audit } from './run-skills.js';

let server: Server;
let port = 0;
let undeclared = 0;
let root: string;

beforeAll(async () => {
  server = createServer((req, res) => res.end(`hello ${req.url}`));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
  undeclared = port > 2 ? port - 1 : port + 1;
  root = tempDir('egress-refusals');
  writeConnectorSkill(root, 'connector', [`127.0.0.1:${port}`, `localhost:${port}`]);
  writeConnectorSkill(root, 'offline', undefined);
});
afterAll(async () => {
  server?.close();
  await expectNoLeftovers();
});

interface Refusal {
  host: string;
  port: number | null;
  reason: string;
  count: number;
}
interface EgressValue {
  refused: Refusal[];
  refusedCount: number;
  refusedUnlisted: number;
  allowedCount: number;
}

/** Approves and runs a script; returns what the model reads: the structured answer and each text item. */
async function run(client: Served['client'], name: string, script: string, args: string[] = []) {
  const preview = await askToken(client, { name, script, args });
  const result = await client.callTool({ name: 'skill_run', arguments: { name, script, args, confirmToken: preview.confirmToken } });
  const value = result.structuredContent as Record<string, unknown>;
  expect(value['status'], JSON.stringify(value)).toBe('completed');
  expect(value['exitCode'], String(value['stderr'])).toBe(0);
  const texts = (result.content as { type: string; text?: string }[]).filter((c) => c.type === 'text').map((c) => c.text!);
  // The first text is the answer's JSON (what every model reads), the same value as structuredContent.
  expect(JSON.parse(texts[0]!)).toEqual(value);
  return {
    isolation: preview.preview.willRun.isolation,
    value,
    egress: value['egress'] as EgressValue | undefined,
    lines: texts.slice(1),
    runId: String(value['runId']),
  };
}

describe.each(namespaceVariants(40212))('egress refusals in the skill_run result, $name', (variant) => {
  let served: Served;
  let stateDir: string;

  beforeAll(async () => {
    if (!variant.run) return;
    // The ordinary-uid variant serves as that uid (a root test drops the front with setpriv), so
    // the front starts its runner as that uid too: level namespace. Its folders are its own.
    const own = tempDir('egress-refusals-front');
    stateDir = join(own, 'state');
    if (variant.uid !== undefined) execFileSync('chown', ['-R', `${variant.uid}:${variant.uid}`, own]);
    served = await serve(
      { SKILLS_DIR: root, SKILL_MCP_STATE_DIR: stateDir, HOME: own, TMPDIR: own, MCP_CONFIRM_ELICITATION: 'off' },
      ERAS[0]!,
      variant.uid !== undefined ? { spawnPrefix: ['setpriv', `--reuid=${variant.uid}`, `--regid=${variant.uid}`, '--clear-groups'] } : {},
    );
  });
  afterAll(async () => {
    await served?.close();
  });

  test.skipIf(!variant.run)(
    'connections the declaration does not allow are named with their reason, in structuredContent and in one line of text',
    async () => {
      const ran = await run(served.client, 'connector', 'probe.py', [String(port), String(undeclared)]);
      expect(ran.isolation).toBe(variant.level);
      // What the script itself saw: an allowed fetch, then only refusals from the proxy.
      expect(JSON.parse(String(ran.value['stdout']))).toEqual({
        allowed: 200,
        'api.example.com:443': 'HTTP/1.1 403 Forbidden',
        [`127.0.0.1:${undeclared}`]: 'HTTP/1.1 403 Forbidden',
        [`localhost:${port}`]: 'HTTP/1.1 403 Forbidden',
        '169.254.169.254:80': 'HTTP/1.1 403 Forbidden',
        '0.0.0.0:80': 'HTTP/1.1 400 Bad Request',
      });
      expect(ran.egress).toEqual({
        refused: [
          { host: 'api.example.com', port: 443, reason: 'not-allowed', count: 2 },
          { host: '127.0.0.1', port: undeclared, reason: 'not-allowed', count: 1 },
          { host: 'localhost', port, reason: 'special-address', count: 1 },
          { host: '169.254.169.254', port: 80, reason: 'not-allowed', count: 1 },
          { host: '0.0.0.0', port: 80, reason: 'bad-destination', count: 1 },
        ],
        refusedCount: 6,
        refusedUnlisted: 0,
        allowedCount: 1,
      });
      expect(ran.lines).toHaveLength(1);
      expect(ran.lines[0]).toMatch(
        /^egress refused: api\.example\.com:443 \(not declared or not granted, 2 times\), 127\.0\.0\.1:\d+ \(not declared or not granted\), localhost:\d+ \(a name resolving to loopback, private, link-local or metadata addresses\), 169\.254\.169\.254:80 \(not declared or not granted\), 0\.0\.0\.0:80 \(not a valid destination\) — 6 refused connections in all\./,
      );
      // Security: nothing of this machine in what the model reads about the refusals.
      for (const text of [JSON.stringify(ran.egress), ran.lines[0]!]) {
        expect(text).not.toContain(SUITE_TMP);
        expect(text).not.toContain(root);
      }
      // The audit log still has a line for every connection, allowed and refused, and the run's totals.
      const lines = audit(stateDir).filter((l) => l['run_id'] === ran.runId);
      const egressLines = lines.filter((l) => l.event === 'egress');
      expect(egressLines.filter((l) => l['decision'] === 'refused').map((l) => [l['destination'], l['reason']])).toEqual([
        ['api.example.com:443', 'not-allowed'],
        [`127.0.0.1:${undeclared}`, 'not-allowed'],
        [`localhost:${port}`, 'special-address'],
        ['169.254.169.254:80', 'not-allowed'],
        ['0.0.0.0:80', 'bad-destination'],
        ['api.example.com:443', 'not-allowed'],
      ]);
      expect(egressLines.filter((l) => l['decision'] === 'allowed')).toHaveLength(1);
      expect(lines.find((l) => l.event === 'run.exit')).toMatchObject({ egress_allowed: 1, egress_refused: 6, egress_unlogged: 0 });
    },
  );

  test.skipIf(!variant.run)(
    'a proxied script that connects nowhere shows no refusal; a skill without egress has no egress summary at all',
    async () => {
      const quiet = await run(served.client, 'connector', 'quiet.py');
      expect(quiet.egress).toEqual({ refused: [], refusedCount: 0, refusedUnlisted: 0, allowedCount: 0 });
      expect(quiet.lines).toEqual([]);
      const offline = await run(served.client, 'offline', 'quiet.py');
      expect(offline.value).not.toHaveProperty('egress');
      expect(offline.lines).toEqual([]);
    },
  );

  test.skipIf(!variant.run)(
    'a flood of 1000 refused connections gives a bounded list and the full count (and the audit its capped lines)',
    async () => {
      const ran = await run(served.client, 'connector', 'flood.py');
      expect(String(ran.value['stdout']).trim()).toBe("['HTTP/1.1 403 Forbidden']");
      expect(ran.egress!.refused).toHaveLength(20);
      expect(ran.egress!.refused.map((r) => r.host)).toEqual(Array.from({ length: 20 }, (_, i) => `h${i}.example`));
      expect(ran.egress).toMatchObject({ refusedCount: 1000, refusedUnlisted: 980, allowedCount: 0 });
      expect(ran.lines).toHaveLength(1);
      expect(ran.lines[0]).toMatch(
        /^egress refused: h0\.example:443 \(not declared or not granted\), h1\.example:443 .*; and 15 more destinations listed in egress\.refused; 980 more connections to other destinations \(not listed\) — 1000 refused connections in all\./,
      );
      const lines = audit(stateDir).filter((l) => l['run_id'] === ran.runId);
      expect(lines.filter((l) => l.event === 'egress')).toHaveLength(1000);
      expect(lines.find((l) => l.event === 'run.exit')).toMatchObject({ egress_allowed: 0, egress_refused: 1000, egress_unlogged: 0 });
    },
  );
});
