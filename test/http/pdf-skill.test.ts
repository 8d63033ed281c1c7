import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { exec, PDF_SKIP_REASON, PDF_VERSION, PDF_WHEEL, publishPdfSkill, startPdfIndex } from '../fixtures/published/pdf-fixture.js';
import type { Served as Index } from '../fixtures/deps/servers.js';
import { startRunner, tempDir, type RunnerHandle } from '../runner/harness.js';
import { baseEnv } from '../e2e/harness.js';
import { connectClient, REPO, SERVER_JS, startHttp, type HttpServer } from './harness.js';
import { runFoldersGone } from '../scratch-wait.js';

const wheel = PDF_WHEEL;
const version = PDF_VERSION;
const reason = PDF_SKIP_REASON;
const TOKEN = randomBytes(24).toString('hex');

type Resource = { type: 'resource'; resource: { uri: string; text?: string; blob?: string } };

describe.skipIf(!wheel)(
  `a published skill over HTTP (hosted pair): pdf with pypdf ${version ?? ''} (${wheel ? 'wheel found' : reason})`,
  () => {
    let index: Index;
    let runner: RunnerHandle;
    let server: HttpServer;
    let shared: Record<string, string>;

    beforeAll(async () => {
      index = await startPdfIndex();
      const root = tempDir('http-published');
      const declarations = tempDir('http-declarations');
      // The skill as published: its SKILL.md passes the Agent Skills frontmatter rules; we add nothing to it.
      publishPdfSkill(root, declarations);
      // Front and runner are configured alike (skills, declarations); only the runner reads the index.
      shared = { SKILLS_DIR: root, SKILL_MCP_DECLARATIONS: declarations };
      runner = await startRunner({
        env: { ...shared, SKILL_MCP_UID_RANGE: '61940-61947', SKILL_MCP_PIP_INDEX_URL: `${index.url}/simple/` },
        base: tempDir('http-pdf'),
        args: process.getuid?.() === 0 ? ['--front-uid', '61183', '--front-gid', '61183'] : [],
      });
      server = await startHttp({
        ...shared,
        SKILL_MCP_RUNNER_SOCKET: runner.socketPath,
        MCP_CONFIRM_MODE: 'auto',
        SKILL_MCP_HTTP_TOKEN: TOKEN,
      });
    }, 60_000);
    afterAll(async () => {
      await server?.stop();
      await runner?.stop();
      await index?.close();
      // The environments are read-only; the temp tree's removal needs them writable again.
      if (runner) await exec('chmod', ['-R', 'u+w', runner.stateDir], { PATH: '/usr/bin:/bin' });
    });

    test("the operator installs pypdf for the runner's state; a client over Streamable HTTP sends a PDF and gets the JSON and the filled PDF back", async () => {
      // Before the install the run is refused with the operator's command, not run without its package.
      const client = await connectClient(server.url, 'modern', TOKEN);
      try {
        const call = async (args: Record<string, unknown>) => {
          const result = await client.callTool({ name: 'skill_run', arguments: { name: 'pdf', args: [], ...args } });
          const content = result.content as ({ type: 'text'; text: string } | Resource)[];
          return {
            isError: result.isError === true,
            value: result.structuredContent as Record<string, unknown>,
            resources: content.filter((c): c is Resource => c.type === 'resource'),
          };
        };
        const run = async (args: Record<string, unknown>) => {
          const first = await call(args);
          expect(first.value['status'], `${JSON.stringify(first.value)}\n${server.stderr()}`).toBe('confirmation-required');
          const preview = (first.value['preview'] as { willRun: Record<string, unknown> }).willRun;
          return { ...(await call({ ...args, confirmToken: first.value['confirmToken'] })), preview };
        };
        const missing = await call({
          script: 'scripts/check_fillable_fields.py',
          args: ['form.pdf'],
          files: [{ path: 'form.pdf', text: 'x' }],
        });
        expect(missing.isError).toBe(true);
        expect(missing.value['error']).toMatchObject({
          code: 'DEPS_MISSING',
          message: expect.stringMatching(/skill-mcp deps install --skill pdf/),
        });

        // The operator's install, into the state directory of the runner that will run it.
        const install = await exec(process.execPath, [SERVER_JS, 'deps', 'install', '--skill', 'pdf', '--state-dir', runner.stateDir], {
          ...baseEnv(),
          ...shared,
          SKILL_MCP_PIP_INDEX_URL: `${index.url}/simple/`,
        });
        expect(install.code, install.out).toBe(0);
        expect(install.out).toContain(`installed 1 package(s): pypdf==${version}`);
        const digest = /python environment ([0-9a-f]{64}): installed/.exec(install.out)![1]!;
        const site = join(runner.stateDir, 'envs', digest, 'site');

        const work = tempDir('http-published-form');
        const made = await exec('python3', [join(REPO, 'test/fixtures/make_pdf_form.py'), join(work, 'form.pdf')], {
          PATH: '/usr/bin:/bin',
          PYTHONPATH: site,
        });
        expect(made.code, made.out).toBe(0);
        const input = [{ path: 'form.pdf', base64: readFileSync(join(work, 'form.pdf')).toString('base64') }];

        const extracted = await run({ script: 'scripts/extract_form_field_info.py', args: ['form.pdf', 'field_info.json'], files: input });
        expect(extracted.value, JSON.stringify(extracted.value)).toMatchObject({ status: 'completed', exitCode: 0 });
        expect(extracted.preview['deps']).toEqual([{ kind: 'python', digest, state: 'ready' }]);
        expect(extracted.preview['declarationFrom']).toBe('operator');
        const info = extracted.resources.find((r) => r.resource.uri.endsWith('/field_info.json'))!;
        const fields = JSON.parse(info.resource.text!) as { field_id: string; type: string; page: number }[];
        expect(fields.map((f) => [f.field_id, f.type, f.page])).toEqual([
          ['full_name', 'text', 1],
          ['city', 'text', 1],
        ]);

        const values = fields.map((f) => ({
          field_id: f.field_id,
          page: f.page,
          value: f.field_id === 'full_name' ? 'Grace Hopper' : 'Arlington',
        }));
        const filled = await run({
          script: 'scripts/fill_fillable_fields.py',
          args: ['form.pdf', 'values.json', 'filled.pdf'],
          files: [...input, { path: 'values.json', text: JSON.stringify(values) }],
        });
        expect(filled.value, JSON.stringify(filled.value)).toMatchObject({ status: 'completed', exitCode: 0 });
        expect((filled.value['files'] as { path: string }[]).map((f) => f.path)).toEqual(['filled.pdf']);
        const bytes = Buffer.from(filled.resources.find((r) => r.resource.uri.endsWith('/filled.pdf'))!.resource.blob!, 'base64');
        expect(bytes.subarray(0, 5).toString()).toBe('%PDF-');
        // Read back with pypdf: the values are in the form.
        writeFileSync(join(work, 'filled.pdf'), bytes);
        const read = await exec(
          'python3',
          [
            '-c',
            'import json,sys; from pypdf import PdfReader; print(json.dumps({k: str(v.get("/V")) for k, v in PdfReader(sys.argv[1]).get_fields().items()}))',
            join(work, 'filled.pdf'),
          ],
          { PATH: '/usr/bin:/bin', PYTHONPATH: site },
        );
        expect(JSON.parse(read.out.trim().split('\n').pop()!)).toEqual({ full_name: 'Grace Hopper', city: 'Arlington' });
        // Nothing of the runs is left in the runner's scratch directory.
        expect(await runFoldersGone(join(runner.stateDir, '..', 'scratch'))).toEqual([]);
      } finally {
        await client.close();
      }
    }, 300_000);
  },
);
