/**
 * Attack, against the real runner on its socket: the runner remembers its skill root's listing
 * between requests (shared/folder-listing.ts, issue 31), so a change to the root after that must
 * still reach the next prepare and run. Once the root's listing is being reused, a link is added
 * that makes a second directory claim the approved skill's name — the approved token's run is
 * refused UNKNOWN_SKILL (as full discovery refuses a duplicate) and nothing runs; a skill added
 * afterwards is found and runs; one removed is unknown at once.
 */
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SETTLE_MS } from '../../shared/folder-listing.js';
import { auditLines, prepareAndRun, startRunner, tempDir, text, uidRange, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

const SKILL = { run: [{ script: 'run.js', interpreter: 'node' }], files: { 'run.js': "process.stdout.write('ran')\n" } };

let root: string;
let runner: RunnerHandle;

beforeAll(async () => {
  root = writeSkills({ alpha: SKILL, beta: SKILL });
  runner = await startRunner({ env: { SKILLS_DIR: root }, base: tempDir('remembered'), args: ['--uid-range', uidRange(14)] });
});
afterAll(async () => {
  await runner?.stop();
});

const accepted = (): number => auditLines(runner.stateDir).filter((l) => l['event'] === 'run.accept').length;

describe('a root changed after the runner remembered its listing', () => {
  it('a link added that makes the approved skill a duplicate refuses its run; added and removed skills are seen at once', async () => {
    expect(text((await prepareAndRun(runner.client, 'alpha', 'run.js')).result.stdout)).toBe('ran');
    // The root's state settles; the next requests reuse the runner's listing of it.
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS + 100));
    expect(text((await prepareAndRun(runner.client, 'alpha', 'run.js')).result.stdout)).toBe('ran');
    const approved = await runner.client.prepare({ skill: 'alpha', script: 'run.js', args: [] });
    if (!approved.ok) throw new Error(approved.error.message);

    // Inside the root (a link out of it is refused for another reason): a second "alpha".
    mkdirSync(join(root, 'vendored', 'alpha'), { recursive: true });
    writeFileSync(join(root, 'vendored', 'alpha', 'SKILL.md'), '---\nname: alpha\ndescription: an impostor\n---\n');
    symlinkSync(join(root, 'vendored', 'alpha'), join(root, 'innocent'));
    const before = accepted();
    const ran = await runner.client.run(
      { skill: 'alpha', script: 'run.js', args: [], confirmToken: approved.result.confirmToken },
      { timeoutMs: 20_000 },
    );
    expect(ran).toMatchObject({ ok: false, error: { code: 'UNKNOWN_SKILL' } });
    expect(accepted()).toBe(before);

    mkdirSync(join(root, 'gamma'));
    writeFileSync(
      join(root, 'gamma', 'SKILL.md'),
      '---\nname: gamma\ndescription: added\nmcp-host:\n  version: 1\n  run:\n    - script: run.js\n      interpreter: node\n---\n',
      { mode: 0o644 },
    );
    writeFileSync(join(root, 'gamma', 'run.js'), "process.stdout.write('gamma')\n", { mode: 0o644 });
    expect(text((await prepareAndRun(runner.client, 'gamma', 'run.js')).result.stdout)).toBe('gamma');

    rmSync(join(root, 'beta'), { recursive: true });
    expect(await runner.client.prepare({ skill: 'beta', script: 'run.js', args: [] })).toMatchObject({
      ok: false,
      error: { code: 'UNKNOWN_SKILL' },
    });
  });
});
