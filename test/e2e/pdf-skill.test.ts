import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exec, PDF_SKIP_REASON, PDF_VERSION, PDF_WHEEL, publishPdfSkill, startPdfIndex } from '../fixtures/published/pdf-fixture.js';
import type { Served as Index } from '../fixtures/deps/servers.js';
import { baseEnv, ERAS, REPO, serve, SERVER_JS, tempDir, type Served } from './harness.js';
import { callSkillRun } from './workspace-calls.js';

const wheel = PDF_WHEEL;
const version = PDF_VERSION;
const reason = PDF_SKIP_REASON;

describe.skipIf(!wheel)(`run a published skill: pdf with pypdf ${version ?? ''} (${wheel ? 'wheel found' : reason})`, () => {
  let served: Served;
  let index: Index;
  let env: Record<string, string>;
  let site: string;
  let stateDir: string;

  function call(args: Record<string, unknown>) {
    return callSkillRun(served.client, 'pdf', args);
  }
  /** Preview, then the run with the token — as a client on the token path does. */
  async function run(args: Record<string, unknown>) {
    const first = await call(args);
    expect(first.value['status'], JSON.stringify(first.value)).toBe('confirmation-required');
    const preview = (first.value['preview'] as { willRun: Record<string, unknown> }).willRun;
    return { ...(await call({ ...args, confirmToken: first.value['confirmToken'] })), preview };
  }

  beforeAll(async () => {
    index = await startPdfIndex();
    const root = tempDir('published');
    const declarations = tempDir('declarations');
    // The skill as published: its SKILL.md passes the Agent Skills frontmatter rules; we add nothing to it.
    publishPdfSkill(root, declarations);
    stateDir = join(tempDir('published-state'), 'state');
    env = {
      SKILLS_DIR: root,
      SKILL_MCP_DECLARATIONS: declarations,
      SKILL_MCP_STATE_DIR: stateDir,
      SKILL_MCP_PIP_INDEX_URL: `${index.url}/simple/`,
      MCP_CONFIRM_MODE: 'auto',
    };
    served = await serve(env, ERAS[1]!);
  }, 60_000);
  afterAll(async () => {
    await served?.close();
    await index?.close();
    await exec('chmod', ['-R', 'u+w', stateDir], { PATH: '/usr/bin:/bin' });
  });

  it('the operator installs pypdf; a client sends a PDF form and gets the field JSON and the filled PDF back', async () => {
    // Unmodified and spec-clean: `check` finds nothing in the published folder (no mcp-host key, no sidecar).
    const checked0 = await exec(process.execPath, [SERVER_JS, 'check', '--format', 'json', join(env['SKILLS_DIR']!, 'pdf')], baseEnv());
    expect((JSON.parse(checked0.out) as { findings: unknown[] }).findings).toEqual([]);

    const install = await exec(process.execPath, [SERVER_JS, 'deps', 'install', '--skill', 'pdf'], { ...baseEnv(), ...env });
    expect(install.code, install.out).toBe(0);
    expect(install.out).toContain(`installed 1 package(s): pypdf==${version}`);
    const digest = /python environment ([0-9a-f]{64}): installed/.exec(install.out)![1]!;
    site = join(stateDir, 'envs', digest, 'site');

    // A small fillable form, made with pypdf itself (from the environment just installed).
    const work = tempDir('published-form');
    const made = await exec('python3', [join(REPO, 'test/fixtures/make_pdf_form.py'), join(work, 'form.pdf')], {
      PATH: '/usr/bin:/bin',
      PYTHONPATH: site,
    });
    expect(made.code, made.out).toBe(0);
    const form = readFileSync(join(work, 'form.pdf')).toString('base64');
    const input = [{ path: 'form.pdf', base64: form }];

    const checked = await run({ script: 'scripts/check_fillable_fields.py', args: ['form.pdf'], files: input });
    expect(checked.value, JSON.stringify(checked.value)).toMatchObject({
      status: 'completed',
      exitCode: 0,
      stdout: 'This PDF has fillable form fields\n',
    });
    expect(checked.preview['deps']).toEqual([{ kind: 'python', digest, state: 'ready' }]);
    expect(checked.preview['declarationFrom']).toBe('operator');

    const extracted = await run({ script: 'scripts/extract_form_field_info.py', args: ['form.pdf', 'field_info.json'], files: input });
    expect(extracted.value).toMatchObject({ status: 'completed', exitCode: 0 });
    const info = extracted.resources.find((r) => r.resource.uri.endsWith('/field_info.json'))!;
    const fields = JSON.parse(info.resource.text!) as { field_id: string; type: string; page: number }[];
    expect(fields.map((f) => [f.field_id, f.type, f.page])).toEqual([
      ['full_name', 'text', 1],
      ['city', 'text', 1],
    ]);

    const values = fields.map((f) => ({
      field_id: f.field_id,
      page: f.page,
      value: f.field_id === 'full_name' ? 'Ada Lovelace' : 'London',
    }));
    const filled = await run({
      script: 'scripts/fill_fillable_fields.py',
      args: ['form.pdf', 'values.json', 'filled.pdf'],
      files: [...input, { path: 'values.json', text: JSON.stringify(values) }],
    });
    expect(filled.value, JSON.stringify(filled.value)).toMatchObject({ status: 'completed', exitCode: 0 });
    const pdf = filled.resources.find((r) => r.resource.uri.endsWith('/filled.pdf'))!;
    const bytes = Buffer.from(pdf.resource.blob!, 'base64');
    expect(bytes.subarray(0, 5).toString()).toBe('%PDF-');
    expect((filled.value['files'] as { path: string }[]).map((f) => f.path)).toEqual(['filled.pdf']);
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
    expect(JSON.parse(read.out.trim().split('\n').pop()!)).toEqual({ full_name: 'Ada Lovelace', city: 'London' });
  }, 300_000);
});
