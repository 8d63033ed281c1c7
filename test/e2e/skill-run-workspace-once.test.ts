/**
 * A workspace per run, what is decided before anything runs: hostile input paths are refused by the
 * front, an input changed after the approval is DRAFT_CHANGED with a fresh preview, and the prompt
 * a person sees lists each input file and stdin by size and digest.
 *
 * Tier `front`: no script runs in any of these tests (the front refuses, the runner refuses at the
 * token check, or the person declines), so the answers are the same at every isolation level and
 * uid. Moved from skill-run-workspace.test.ts (level), which keeps the tests that run scripts.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERAS, expectNoLeftovers, serve, SUITE_TMP, tempDir, type Served } from './harness.js';
import { audit } from './run-skills.js';
import { writeWorkspaceSkill } from './workspace-skill.js';
import { callWorkspace, sha, type RunAnswer } from './workspace-calls.js';

let served: Served;
let stateDir: string;

beforeAll(async () => {
  const root = tempDir('workspace');
  writeWorkspaceSkill(root);
  stateDir = join(SUITE_TMP, 'state');
  served = await serve({ SKILLS_DIR: root, SKILL_MCP_SCRATCH_DIR: join(SUITE_TMP, 'scratch'), MCP_CONFIRM_MODE: 'auto' }, ERAS[1]!);
}, 60_000);
afterAll(async () => {
  await served?.close();
  await expectNoLeftovers();
});

function call(args: Record<string, unknown>): Promise<RunAnswer> {
  return callWorkspace(served.client, args);
}

describe('an input changed after the approval', () => {
  it('an input changed after the approval is DRAFT_CHANGED with a fresh preview naming the new digest', async () => {
    const first = await call({ script: 'scripts/fill.py', args: ['form.txt', 'o.json'], files: [{ path: 'form.txt', text: 'approved' }] });
    const swapped = await call({
      script: 'scripts/fill.py',
      args: ['form.txt', 'o.json'],
      files: [{ path: 'form.txt', text: 'swapped!' }],
      confirmToken: first.value['confirmToken'],
    });
    expect(swapped.isError).toBe(true);
    expect(swapped.value).toMatchObject({ status: 'draft-changed', error: { code: 'DRAFT_CHANGED' } });
    const fresh = (swapped.value['preview'] as { willRun: { inputs: unknown } }).willRun.inputs;
    expect(fresh).toEqual({ files: [{ path: 'form.txt', size: 8, sha256: sha('swapped!') }] });
    expect(audit(stateDir).filter((l) => l.event === 'run.reject' && l.reason === 'draft-changed').length).toBeGreaterThan(0);
  });
});

describe('hostile input paths are refused before anything runs', () => {
  const cases: [string, unknown[], string][] = [
    ['traversal with ..', [{ path: '../escape.txt', text: 'x' }], 'INVALID_PATH'],
    ['an absolute path', [{ path: '/etc/cron.d/x', text: 'x' }], 'INVALID_PATH'],
    ['a NUL byte', [{ path: 'a\u0000b', text: 'x' }], 'INVALID_PATH'],
    ['a control character', [{ path: 'a\u001bb', text: 'x' }], 'INVALID_PATH'],
    ['a backslash', [{ path: '..\\x', text: 'x' }], 'INVALID_PATH'],
    [
      'a duplicate path',
      [
        { path: 'a.txt', text: 'x' },
        { path: 'a.txt', text: 'y' },
      ],
      'INVALID_PATH',
    ],
    [
      'a case collision',
      [
        { path: 'Form.pdf', text: 'x' },
        { path: 'form.PDF', text: 'y' },
      ],
      'INVALID_PATH',
    ],
    [
      'a Unicode collision (NFC vs NFD)',
      [
        { path: 'caf\u00e9.txt', text: 'x' },
        { path: 'cafe\u0301.txt', text: 'y' },
      ],
      'INVALID_PATH',
    ],
    [
      'a file that is also a folder',
      [
        { path: 'in', text: 'x' },
        { path: 'in/notes.txt', text: 'y' },
      ],
      'INVALID_PATH',
    ],
    ['invalid base64', [{ path: 'a.bin', base64: 'not base64!' }], 'BAD_REQUEST'],
    ['both text and base64', [{ path: 'a.bin', base64: 'AA==', text: 'x' }], 'BAD_REQUEST'],
  ];
  it.each(cases)('attack: %s', async (_name, files, code) => {
    const before = audit(stateDir).filter((l) => l.event === 'run.prepare').length;
    const answer = await call({ script: 'scripts/fill.py', files });
    expect(answer.isError).toBe(true);
    expect((answer.value['error'] as { code: string }).code).toBe(code);
    expect((answer.value['error'] as { message: string }).message).toMatch(/nothing was run/);
    // Refused by the front before any preview was asked for.
    expect(audit(stateDir).filter((l) => l.event === 'run.prepare').length).toBe(before);
  });
});

describe('the prompt a person sees', () => {
  it('lists each input file by name, size and short digest, and stdin', async () => {
    const asked: string[] = [];
    const root = tempDir('workspace-prompt');
    writeWorkspaceSkill(root);
    const prompted = await serve({ SKILLS_DIR: root }, ERAS[0]!, {
      onElicit: (params) => {
        asked.push(params.message);
        return { action: 'decline' };
      },
    });
    try {
      const result = await prompted.client.callTool({
        name: 'skill_run',
        arguments: {
          name: 'workspace',
          script: 'scripts/fill.py',
          args: ['form.txt', 'o.json'],
          stdin: 'abc',
          files: [
            { path: 'form.txt', text: 'hello' },
            { path: 'in/notes.txt', text: 'n' },
          ],
        },
      });
      expect((result.structuredContent as { status: string }).status).toBe('cancelled');
      expect(asked).toHaveLength(1);
      expect(asked[0]).toContain(`input files:\n  form.txt (5 bytes, sha256:${sha('hello').slice(0, 12)}`);
      expect(asked[0]).toContain(`  in/notes.txt (1 bytes, sha256:${sha('n').slice(0, 12)}`);
      expect(asked[0]).toContain(`stdin: 3 bytes, sha256:${sha('abc').slice(0, 12)}`);
      expect(asked[0]).toMatch(/cwd: a fresh workspace of this run/);
    } finally {
      await prompted.close();
    }
  });
});
