/**
 * A workspace per run, through a real MCP client over stdio and the real runner, at whatever level
 * this machine gives (CI runs it as root and as uid 40100, with bubblewrap and without): input
 * files and stdin go in, the script starts in a fresh writable workspace with the skill read-only
 * in SKILL_DIR, and every file it created or changed comes back — listed, and as an embedded
 * resource — up to the output budget. Attack-named tests: planted links, FIFOs, devices and hard
 * links, output bombs, and a workspace that must never outlive the result.
 *
 * Tier `level`: every test here runs a script and asserts what it could write and what came back:
 * the workspace and the skill's copy are mounted or owned differently at each level (bubblewrap's
 * binds, per-run uids, the same uid), and the outputs are walked by the root walker process or in
 * process as an ordinary user. The refusals decided before anything runs (hostile input paths, a
 * changed input, the prompt) are in skill-run-workspace-once.test.ts (front).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERAS, expectNoLeftovers, serve, SUITE_TMP, tempDir, type Served } from './harness.js';
import { audit } from './run-skills.js';
import { runFoldersGone, runFoldersIn } from '../scratch-wait.js';
import { writeWorkspaceSkill } from './workspace-skill.js';
import { callWorkspace, sha, type RunAnswer } from './workspace-calls.js';

const MIB = 1024 * 1024;
const BUDGET = 3 * MIB;

let served: Served;
let stateDir: string;
/** The runner's scratch folder (set explicitly: the default is /run/skill-mcp-scratch or the state dir's), where each run's folder lives. */
const scratch = join(SUITE_TMP, 'scratch');

beforeAll(async () => {
  const root = tempDir('workspace');
  writeWorkspaceSkill(root);
  stateDir = join(SUITE_TMP, 'state');
  // A small output budget, and a file-size limit and workspace a sparse 10 GiB file fits under (its blocks are
  // never written; without root the workspace cap is also each file's size limit), room for the 20k-file bomb.
  // The workspace caps themselves are attacked in skill-run-workspace-cap.test.ts.
  served = await serve(
    {
      SKILLS_DIR: root,
      SKILL_MCP_SCRATCH_DIR: scratch,
      MCP_CONFIRM_MODE: 'auto',
      SKILL_MCP_RUN_OUTPUT_FILES_BYTES: String(BUDGET),
      SKILL_MCP_RUN_FSIZE_BYTES: String(2 ** 40),
      SKILL_MCP_RUN_WORKSPACE_BYTES: String(2 ** 40),
      SKILL_MCP_RUN_WORKSPACE_FILES: '100000',
    },
    ERAS[1]!,
  );
}, 60_000);
afterAll(async () => {
  await served?.close();
  await expectNoLeftovers();
});

function call(args: Record<string, unknown>, signal?: AbortSignal): Promise<RunAnswer> {
  return callWorkspace(served.client, args, signal);
}

/** Preview, then run with the token (the same arguments both times). */
async function run(args: Record<string, unknown>): Promise<RunAnswer & { preview: Record<string, unknown> }> {
  const first = await call(args);
  expect(first.value['status'], JSON.stringify(first.value)).toBe('confirmation-required');
  const answer = await call({ ...args, confirmToken: first.value['confirmToken'] });
  return { ...answer, preview: (first.value['preview'] as { willRun: Record<string, unknown> }).willRun };
}

type Listed = { path: string; size: number; sha256?: string; omitted?: string };
const listed = (answer: RunAnswer): Listed[] => answer.value['files'] as Listed[];
const entry = (answer: RunAnswer, path: string): Listed | undefined => listed(answer).find((f) => f.path === path);
const runFolders = (): string[] => runFoldersIn(scratch);

describe('a workspace per run', () => {
  it('the happy path: a script reads form.txt from its cwd and stdin, writes out/result.json, and it comes back', async () => {
    const form = 'name: Ada\n';
    const answer = await run({
      script: 'scripts/fill.py',
      args: ['form.txt', 'out/result.json'],
      stdin: 'from stdin',
      files: [{ path: 'form.txt', text: form }],
    });
    expect(answer.isError, JSON.stringify(answer.value)).toBe(false);
    expect(answer.value).toMatchObject({ status: 'completed', exitCode: 0, stdout: 'filled out/result.json\n' });
    // The preview named the input and stdin by size and digest; the approval bound them.
    expect(answer.preview['inputs']).toEqual({
      files: [{ path: 'form.txt', size: form.length, sha256: sha(form) }],
      stdin: { size: 10, sha256: sha('from stdin') },
    });
    const result = answer.resources.find((r) => r.resource.uri.endsWith('/out/result.json'))!;
    expect(result.resource.uri).toBe(`skill-run://${answer.value['runId'] as string}/out/result.json`);
    expect(result.resource.mimeType).toBe('application/json');
    const written = JSON.parse(result.resource.text!) as Record<string, unknown>;
    expect(written).toMatchObject({ form, stdin: 'from stdin', script_in_skill: true });
    expect(typeof written['skill_dir']).toBe('string');
    // Listed with its digest; the input came back unchanged, so it is not returned.
    expect(listed(answer)).toEqual([
      { path: 'out/result.json', size: Buffer.byteLength(result.resource.text!), sha256: sha(result.resource.text!) },
    ]);
    // The audit lines name the inputs and outputs by size and digest.
    const lines = audit(stateDir).filter((l) => l.run_id === answer.value['runId']);
    expect(lines.find((l) => l.event === 'run.accept')).toMatchObject({
      inputs: [{ path: 'form.txt', size: form.length, sha256: sha(form) }],
      stdin_bytes: 10,
      stdin_sha256: sha('from stdin'),
    });
    expect(lines.find((l) => l.event === 'run.exit')).toMatchObject({
      outputs: [{ path: 'out/result.json', sha256: sha(result.resource.text!) }],
    });
    // Removed after the answer, before the run's slot is given back (runner/requests/run-path.ts).
    expect(await runFoldersGone(scratch)).toEqual([]);
  });

  it('the skill stays read-only: a script cannot write into SKILL_DIR (except at same-uid, where it owns its copy)', async () => {
    const answer = await run({ script: 'scripts/write-skill.py' });
    // same-uid has no sandbox: the script runs as the owner of the runner's copy (SECURITY.md says so).
    expect(answer.value['stdout']).toMatch(answer.preview['isolation'] === 'same-uid' ? /^wrote/ : /^refused \d+/);
  });

  it('a changed input is returned as changed; an unchanged input is not returned', async () => {
    const answer = await run({
      script: 'scripts/edit.py',
      files: [
        { path: 'data.txt', text: 'one\n' },
        { path: 'same.txt', text: 'same\n' },
      ],
    });
    expect(answer.value['stdout']).toBe('same\n');
    expect(listed(answer)).toEqual([{ path: 'data.txt', size: 9, sha256: sha('one\nmore\n') }]);
    expect(answer.resources.map((r) => [r.resource.uri.split('/').pop(), r.resource.text])).toEqual([['data.txt', 'one\nmore\n']]);
  });

  it('binary inputs travel as base64 and arrive byte for byte', async () => {
    const bytes = Buffer.from([0, 1, 2, 255, 254, 10]);
    const answer = await run({
      script: 'scripts/edit.py',
      files: [
        { path: 'data.txt', base64: bytes.toString('base64') },
        { path: 'same.txt', text: '' },
      ],
    });
    const back = answer.resources.find((r) => r.resource.uri.endsWith('/data.txt'))!;
    expect(Buffer.from(back.resource.blob!, 'base64')).toEqual(Buffer.concat([bytes, Buffer.from('more\n')]));
  });
});

describe('outputs never follow or read what a script plants', () => {
  it('attack: a symlink to /etc/passwd, a link to /etc, a FIFO, a device node and hard links are listed, never read', async () => {
    const answer = await run({ script: 'scripts/plant.py' });
    expect(answer.value['exitCode'], JSON.stringify(answer.value)).toBe(0);
    const made = JSON.parse(answer.value['stdout'] as string) as Record<string, string>;
    expect(entry(answer, 'passwd-link')?.omitted).toMatch(/symbolic link/);
    expect(entry(answer, 'dir-link')?.omitted).toMatch(/symbolic link/);
    expect(entry(answer, 'pipe')).toMatchObject({ omitted: 'not a regular file' });
    // A device node can be made only with CAP_MKNOD (never inside a sandbox); if it was, it is not opened.
    if (made['null-device'] === 'made') expect(entry(answer, 'null-device')).toMatchObject({ omitted: 'not a regular file' });
    else expect(entry(answer, 'null-device')).toBeUndefined();
    // A hard link to a file outside (where the kernel allowed one at all) is not read; nor a link made inside.
    if (made['etc-passwd-hardlink'] === 'made') expect(entry(answer, 'etc-passwd-hardlink')?.omitted).toMatch(/hard link|not owned/);
    expect(made['own-hardlink']).toBe('made');
    expect(entry(answer, 'own.txt')?.omitted).toMatch(/hard link/);
    expect(entry(answer, 'own-hardlink')?.omitted).toMatch(/hard link/);
    // The one ordinary file comes back; nothing of /etc/passwd does, anywhere.
    expect(answer.resources.map((r) => r.resource.uri.split('/').pop())).toEqual(['plain.txt']);
    expect(JSON.stringify(answer)).not.toMatch(/root:x?:0:0/);
  });
});

describe('output names are bytes', () => {
  it('attack: names that are not valid UTF-8 are listed escaped and omitted, never dropped or merged; a folder of such a name is listed with what it holds; run.exit lists them too', async () => {
    const answer = await run({ script: 'scripts/byte-names.py' });
    expect(answer.value['exitCode'], JSON.stringify(answer.value)).toBe(0);
    const notUtf8 = /^its name is not valid UTF-8 \(shown with each such byte as \\xHH and a backslash as \\\\\), so it was not read$/;
    const files = listed(answer);
    // The real U+FFFD name: one entry, its own bytes (read lossily, the other name read as it, twice).
    const real = 'the real replacement character\n';
    expect(files.filter((f) => f.path === 'out/drop\ufffd.txt')).toEqual([
      { path: 'out/drop\ufffd.txt', size: real.length, sha256: sha(real) },
    ]);
    // The byte 0xfe: its own entry, escaped, with its size and the reason; never read.
    const escaped = files.filter((f) => f.path === 'out/drop\\xfe.txt');
    expect(escaped).toContainEqual({ path: 'out/drop\\xfe.txt', size: 'not utf-8\n'.length, omitted: expect.stringMatching(notUtf8) });
    // A real name spelled with a backslash is another entry: read, its own bytes, not merged with the escaped one.
    expect(escaped).toContainEqual({ path: 'out/drop\\xfe.txt', size: 20, sha256: sha('a literal backslash\n') });
    expect(escaped).toHaveLength(2);
    // The folder 'bad\xff': listed, and what it holds under it (never read: their paths are not their names).
    expect(entry(answer, 'bad\\xff')?.omitted).toMatch(
      /^a folder whose name is not valid UTF-8 .*what it holds is listed under it, not read$/,
    );
    expect(entry(answer, 'bad\\xff/inner/deep.txt')).toEqual({
      path: 'bad\\xff/inner/deep.txt',
      size: 7,
      omitted: 'in a folder whose name is not valid UTF-8, so it was not read',
    });
    expect(entry(answer, 'bad\\xff/x\\xfe')).toMatchObject({ size: 11, omitted: expect.stringMatching(notUtf8) });
    // Only real names come back as resources.
    expect(answer.resources.map((r) => decodeURIComponent(r.resource.uri.split('/').slice(3).join('/'))).sort()).toEqual([
      'out/drop\\xfe.txt',
      'out/drop\ufffd.txt',
      'plain.txt',
    ]);
    const exit = audit(stateDir).find((l) => l.event === 'run.exit' && l.run_id === answer.value['runId'])!;
    const outputs = exit['outputs'] as Listed[];
    expect(outputs).toEqual(files);
    expect(outputs.map((o) => o.path)).toEqual(
      expect.arrayContaining([
        'bad\\xff',
        'bad\\xff/inner/deep.txt',
        'bad\\xff/x\\xfe',
        'out/drop\\xfe.txt',
        'out/drop\ufffd.txt',
        'plain.txt',
      ]),
    );
    expect(outputs).toHaveLength(7);
  });
});

describe('output bombs', () => {
  it("attack: 20k files (five times the walk's bound) — the walk stops at its bound and says so", async () => {
    const answer = await run({ script: 'scripts/many.py' });
    expect(answer.value['exitCode'], JSON.stringify(answer.value).slice(0, 500)).toBe(0);
    expect(answer.value['filesNote']).toMatch(/more than \d+ entries; the walk stopped/);
    expect(listed(answer).length).toBeLessThanOrEqual(4096);
    // Removed after the answer, before the run's slot is given back (runner/requests/run-path.ts).
    expect(await runFoldersGone(scratch)).toEqual([]);
  }, 400_000);

  it('attack: one huge file is listed as omitted past the budget; the small one still comes back', async () => {
    const answer = await run({ script: 'scripts/huge.py' });
    expect(entry(answer, 'huge.bin')).toMatchObject({ size: 8 * MIB, omitted: expect.stringMatching(/past the output budget/) });
    expect(entry(answer, 'small.txt')).toMatchObject({ size: 6, sha256: sha('small\n') });
    expect(answer.resources).toHaveLength(1);
  });

  it('attack: a sparse 10 GiB file counts by its apparent size and is refused without being read', async () => {
    const answer = await run({ script: 'scripts/sparse.py' });
    expect(answer.value['stdout'], JSON.stringify(answer.value)).toBe(`${10 * 1024 ** 3}\n`);
    expect(entry(answer, 'sparse.bin')).toMatchObject({ size: 10 * 1024 ** 3, omitted: expect.stringMatching(/past the output budget/) });
    expect(answer.resources).toHaveLength(0);
  });

  it('outputs past the budget are listed as omitted, never dropped', async () => {
    const answer = await run({ script: 'scripts/budget.py' });
    expect(entry(answer, 'a.bin')).toMatchObject({ size: 2 * MIB, sha256: expect.any(String) });
    expect(entry(answer, 'a.bin')?.omitted).toBeUndefined();
    expect(entry(answer, 'b.bin')).toMatchObject({ size: 2 * MIB, omitted: expect.stringMatching(/past the output budget/) });
    expect(answer.resources.map((r) => r.resource.uri.split('/').pop())).toEqual(['a.bin']);
  });
});

describe('the workspace never outlives the result', () => {
  it('after a timeout the workspace is gone, and what the script wrote still comes back', async () => {
    const answer = await run({ script: 'scripts/hold.py' });
    expect(answer.value).toMatchObject({ timedOut: true });
    expect(entry(answer, 'started')).toMatchObject({ size: 3 });
    // Removed after the answer, before the run's slot is given back (runner/requests/run-path.ts).
    expect(await runFoldersGone(scratch)).toEqual([]);
  });

  it('attack: folders locked with chmod 000, one named with a byte that is not valid UTF-8, are removed all the same', async () => {
    const answer = await run({ script: 'scripts/lock.py' });
    expect(answer.value['stdout'], JSON.stringify(answer.value)).toBe('locked\n');
    // Nothing of the run is left; read as text, the second name could not be reopened for the removal.
    expect(await runFoldersGone(scratch)).toEqual([]);
    expect(audit(stateDir).filter((l) => l.event === 'run.cleanup' && l.run_id === answer.value['runId'] && l['workspace_left'])).toEqual(
      [],
    );
  });

  it('after a cancel the workspace is gone', async () => {
    const first = await call({ script: 'scripts/hold.py' });
    const aborter = new AbortController();
    const pending = call({ script: 'scripts/hold.py', confirmToken: first.value['confirmToken'] }, aborter.signal).catch(
      (error: unknown) => error,
    );
    // The script has started once its marker is in its workspace (a host folder, at every level).
    const deadline = Date.now() + 30_000;
    const started = (): boolean => runFolders().some((f) => existsSync(join(scratch, f, 'work', 'started')));
    while (!started() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(started()).toBe(true);
    aborter.abort();
    await pending;
    // The runner kills the run, writes its exit line and removes its folder while that line is
    // fsynced; the client stopped waiting at once.
    const gone = Date.now() + 30_000;
    const exit = (): Record<string, unknown> | undefined =>
      audit(stateDir).find((l) => l.event === 'run.exit' && l['ended'] === 'cancelled');
    while (exit() === undefined && Date.now() < gone) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(exit(), 'the run ended as cancelled, not by its timeout').toBeDefined();
    // The run folder (workspace, HOME) and the skill's copy are removed once the exit line is written.
    expect(await runFoldersGone(scratch)).toEqual([]);
  });
});
