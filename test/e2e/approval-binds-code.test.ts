/**
 * An approval binds the code (issue #12), through the SDK's Client over real stdio against the
 * built bin and its real runner. Between the preview a person approves and the run, the skill is
 * edited — the script, a module it requires, a link retargeted inside it, a file added, a data file
 * the script reads — and on every confirmation path nothing runs under the old approval: the token
 * path answers DRAFT_CHANGED with a fresh preview; an in-client prompt (both eras) is shown again
 * with the new digests. An unchanged skill runs. And a front whose runner sees another copy of a
 * skill never shows a preview for it: CONTENT_MISMATCH, and skill_list says so.
 */
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startRunner, type RunnerHandle } from '../runner/harness.js';
import { baseEnv, callTool, ERAS, expectNoLeftovers, hostedRunnerArgs, serve, skillList, tempDir, type Served } from './harness.js';
import { askToken, audit, refusal, runsStarted } from './run-skills.js';

/** Reports which bytes ran: its own marker, a required module, one behind a link, a data file, an optional file. */
const MAIN_JS = `const fs = require('node:fs');
const at = (p) => require('node:path').join(__dirname, '..', p);
process.stdout.write(JSON.stringify({
  main: 'main-v1',
  helper: require('../lib/helper.js'),
  current: require('../lib/current.js'),
  data: fs.readFileSync(at('data/input.txt'), 'utf8'),
  extra: fs.existsSync(at('lib/extra.js')) ? require('../lib/extra.js') : 'none',
}));
`;
const FILES: Record<string, string> = {
  'scripts/main.js': MAIN_JS,
  'lib/helper.js': "module.exports = 'helper-v1';\n",
  'lib/v1.js': "module.exports = 'current-v1';\n",
  'lib/v2.js': "module.exports = 'current-v2';\n",
  'data/input.txt': 'data-v1',
};

interface Attack {
  name: string;
  slug: string;
  attack: (dir: string) => void;
  shows: Record<string, string>;
}
const ATTACKS: Attack[] = [
  {
    name: 'edit the script',
    slug: 'script',
    attack: (d) => writeFileSync(join(d, 'scripts/main.js'), MAIN_JS.replace("'main-v1'", "'main-EDITED'")),
    shows: { main: 'main-EDITED' },
  },
  {
    name: 'edit a module it requires',
    slug: 'module',
    attack: (d) => writeFileSync(join(d, 'lib/helper.js'), "module.exports = 'helper-EDITED';\n"),
    shows: { helper: 'helper-EDITED' },
  },
  {
    name: 'retarget a symlink',
    slug: 'link',
    attack: (d) => {
      rmSync(join(d, 'lib/current.js'));
      symlinkSync('v2.js', join(d, 'lib/current.js'));
    },
    shows: { current: 'current-v2' },
  },
  {
    name: 'add a file',
    slug: 'added',
    attack: (d) => writeFileSync(join(d, 'lib/extra.js'), "module.exports = 'extra-ADDED';\n", { mode: 0o644 }),
    shows: { extra: 'extra-ADDED' },
  },
  {
    name: 'change a data file the script reads',
    slug: 'data',
    attack: (d) => writeFileSync(join(d, 'data/input.txt'), 'data-EDITED'),
    shows: { data: 'data-EDITED' },
  },
];
const PATHS = ['token', 'elicit-2025', 'elicit-2026'] as const;

function writeSkill(root: string, name: string): void {
  const all = {
    'SKILL.md': `---\nname: ${name}\ndescription: Victim skill ${name}.\nmcp-host:\n  version: 1\n  run:\n    - script: scripts/main.js\n      interpreter: node\n      timeout: 20\n---\nRun it.\n`,
    ...FILES,
  };
  for (const [path, body] of Object.entries(all)) {
    mkdirSync(dirname(join(root, name, path)), { recursive: true, mode: 0o755 });
    writeFileSync(join(root, name, path), body, { mode: 0o644 });
  }
  symlinkSync('v1.js', join(root, name, 'lib/current.js'));
}

let root: string;
beforeAll(() => {
  root = tempDir('victims');
  writeSkill(root, 'steady');
  for (const path of PATHS) for (const a of ATTACKS) writeSkill(root, `${a.slug}-${path}`);
});
afterAll(expectNoLeftovers);

const RUN = { script: 'scripts/main.js', args: [] as string[] };
const stdoutOf = (value: Record<string, unknown>): Record<string, string> => JSON.parse(String(value['stdout'])) as Record<string, string>;

describe('the token path (a client without a prompt)', () => {
  let served: Served;
  let stateDir: string;
  beforeAll(async () => {
    stateDir = join(tempDir('state'), 'state');
    served = await serve({ SKILLS_DIR: root, SKILL_MCP_STATE_DIR: stateDir }, ERAS[0]!);
  });
  afterAll(async () => {
    await served?.close();
  });

  test('the preview shows and binds the code: the script digest and the digest over every served file', async () => {
    const preview = await askToken(served.client, { name: 'steady', ...RUN });
    expect((preview.preview.willRun as unknown as { content: unknown }).content).toEqual({
      script: expect.stringMatching(/^[0-9a-f]{64}$/),
      files: expect.stringMatching(/^[0-9a-f]{64}$/),
      fileCount: 7,
      bytes: expect.any(Number),
    });
  });

  test('an unchanged skill runs', async () => {
    const preview = await askToken(served.client, { name: 'steady', ...RUN });
    const ran = await callTool(served.client, 'skill_run', { name: 'steady', ...RUN, confirmToken: preview.confirmToken });
    expect(ran.value['status'], ran.text).toBe('completed');
    expect(stdoutOf(ran.value)).toEqual({ main: 'main-v1', helper: 'helper-v1', current: 'current-v1', data: 'data-v1', extra: 'none' });
  });

  test.each(ATTACKS)(
    '$name between the preview and the run: DRAFT_CHANGED with a fresh preview; nothing ran; the fresh token runs the new bytes',
    async ({ slug, attack, shows }) => {
      const name = `${slug}-token`;
      const preview = await askToken(served.client, { name, ...RUN });
      const before = runsStarted(stateDir);
      attack(join(root, name));
      const changed = await callTool(served.client, 'skill_run', { name, ...RUN, confirmToken: preview.confirmToken });
      expect(changed.isError).toBe(true);
      expect(changed.value).toMatchObject({ status: 'draft-changed', error: { code: 'DRAFT_CHANGED' } });
      const fresh = changed.value as unknown as { preview: { willRun: { content: { files: string } } }; confirmToken: string };
      expect(fresh.preview.willRun.content.files).not.toBe(
        (preview.preview.willRun as unknown as { content: { files: string } }).content.files,
      );
      expect(runsStarted(stateDir)).toBe(before);
      const ran = await callTool(served.client, 'skill_run', { name, ...RUN, confirmToken: fresh.confirmToken });
      expect(ran.value['status'], ran.text).toBe('completed');
      expect(stdoutOf(ran.value)).toMatchObject(shows);
    },
  );
});

describe.each([
  { path: 'elicit-2025' as const, era: ERAS[0]! },
  { path: 'elicit-2026' as const, era: ERAS[1]! },
])('an in-client prompt, $era.name', ({ path, era }) => {
  let served: Served;
  let stateDir: string;
  /** Per skill: what to do when asked (the attack runs while the person looks at the first prompt). */
  const onAsk = new Map<string, (message: string) => 'accept' | 'decline'>();
  const asked: string[] = [];

  beforeAll(async () => {
    stateDir = join(tempDir('state'), 'state');
    served = await serve({ SKILLS_DIR: root, SKILL_MCP_STATE_DIR: stateDir }, era, {
      onElicit: ({ message }) => {
        asked.push(message);
        const skill = /^Run ([^/]+)\//.exec(message)?.[1] ?? '';
        const action = onAsk.get(skill)?.(message) ?? 'decline';
        return action === 'accept' ? { action, content: {} } : { action };
      },
    });
  });
  afterAll(async () => {
    await served?.close();
  });

  test('the prompt shows the code (short digests) and an unchanged skill runs on accept', async () => {
    asked.length = 0;
    onAsk.set('steady', () => 'accept');
    const ran = await callTool(served.client, 'skill_run', { name: 'steady', ...RUN });
    expect(ran.value['status'], ran.text).toBe('completed');
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatch(/code: script sha256:[0-9a-f]{12}, skill files sha256:[0-9a-f]{12} \(7 files, \d+ bytes\)/);
  });

  test.each(ATTACKS)(
    '$name while the person is asked: the approval runs nothing, the person is asked again with the new digests',
    async ({ slug, attack, shows }) => {
      const name = `${slug}-${path}`;
      asked.length = 0;
      let round = 0;
      // First prompt: the skill changes while the person reads it, and they accept what they saw.
      // Second prompt (the fresh preview): declined, so whatever ran would have run on the first.
      onAsk.set(name, () => {
        round += 1;
        if (round > 1) return 'decline';
        attack(join(root, name));
        return 'accept';
      });
      const before = runsStarted(stateDir);
      const answer = await callTool(served.client, 'skill_run', { name, ...RUN });
      expect(answer.value['status'], answer.text).toBe('cancelled');
      expect(asked).toHaveLength(2);
      const files = (m: string): string => /skill files (sha256:[0-9a-f]{12})/.exec(m)?.[1] ?? '';
      expect(files(asked[1]!)).not.toBe(files(asked[0]!));
      expect(runsStarted(stateDir)).toBe(before);
      // Approving the fresh preview runs the new bytes.
      onAsk.set(name, () => 'accept');
      const ran = await callTool(served.client, 'skill_run', { name, ...RUN });
      expect(ran.value['status'], ran.text).toBe('completed');
      expect(stdoutOf(ran.value)).toMatchObject(shows);
    },
  );
});

describe.skipIf(process.getuid?.() !== 0)(
  'a runner that sees another copy of a skill than its front (root: the runner in a mount namespace of its own)',
  () => {
    let runner: RunnerHandle;
    let served: Served;
    let copies: string;

    beforeAll(async () => {
      copies = tempDir('copies');
      writeSkill(root, 'mirrored');
      writeSkill(copies, 'mirrored');
      writeFileSync(join(copies, 'mirrored', 'scripts/main.js'), MAIN_JS.replace("'main-v1'", "'the-runner-copy'"));
      // Same path, other bytes: the runner's mount namespace shows `copies/mirrored` at `root/mirrored`.
      const bind = [
        'unshare',
        '--mount',
        '--propagation',
        'private',
        'sh',
        '-c',
        'mount --bind "$1" "$2" && shift 2 && exec "$@"',
        'sh',
        join(copies, 'mirrored'),
        join(root, 'mirrored'),
      ];
      runner = await startRunner({
        env: { ...baseEnv(), SKILLS_DIR: root },
        base: tempDir('runner'),
        args: hostedRunnerArgs(),
        spawnPrefix: bind,
      });
      served = await serve({ SKILLS_DIR: root, SKILL_MCP_RUNNER_SOCKET: runner.socketPath }, ERAS[0]!);
    });
    afterAll(async () => {
      await served?.close();
      await runner?.stop();
    });

    test('skill_list reports content-mismatch for that skill only, and its script as unavailable with why', async () => {
      const list = await skillList(served.client);
      const mismatches = list.problems.filter((p) => p.reason === 'content-mismatch');
      expect(mismatches).toEqual([
        {
          path: expect.stringMatching(/\/mirrored$/),
          reason: 'content-mismatch',
          detail: expect.stringMatching(/runner serves other content for skill "mirrored"/),
        },
      ]);
      const skill = list.skills.find((s) => s.name === 'mirrored')!;
      expect(skill.runnable).toBe(false);
      expect(skill.unavailableScripts).toEqual([
        { script: 'scripts/main.js', interpreter: 'node', why: expect.stringMatching(/different copies of the skill folder/) },
      ]);
      expect(list.skills.find((s) => s.name === 'steady')!.runnable).toBe(true);
    });

    test("skill_run gives no preview of the runner's copy: CONTENT_MISMATCH, no token, nothing ran; a skill both see alike still runs", async () => {
      const answer = await callTool(served.client, 'skill_run', { name: 'mirrored', ...RUN });
      expect(refusal(answer).code).toBe('CONTENT_MISMATCH');
      expect(answer.value).not.toHaveProperty('confirmToken');
      expect(answer.text).not.toContain('the-runner-copy');
      expect(audit(runner.stateDir).filter((l) => l.event === 'run.accept')).toEqual([]);
      const preview = await askToken(served.client, { name: 'steady', ...RUN });
      const ran = await callTool(served.client, 'skill_run', { name: 'steady', ...RUN, confirmToken: preview.confirmToken });
      expect(ran.value['status'], ran.text).toBe('completed');
    });
  },
);
