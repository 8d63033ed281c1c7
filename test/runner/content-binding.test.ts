/**
 * An approval binds the code (docs/architecture.md §7), against the real runner on its socket: the
 * skill is edited between the preview and the run — the script, a module it requires, a link
 * retargeted inside the skill, a file added, a data file the script reads — and each time the run
 * is refused DRAFT_CHANGED with a fresh preview whose digests differ, nothing runs, and the fresh
 * token runs exactly the new bytes. The script runs from the runner's private copy, never from the
 * skill folder. Keys: a front's requestState key cannot mint a token, and a token that claims to
 * live longer than the runner's TTL is refused.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deriveKey } from '../../shared/keys.js';
import type { Minted } from '../../shared/protocol.js';
import { mintToken } from '../../shared/token.js';
import { auditLines, startRunner, tempDir, text, uidRange, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';
import { runFoldersGone } from '../scratch-wait.js';

/** Says which bytes ran: its own marker, a required module, a module behind a link, a data file, an optional file, where it runs from. */
const MAIN_JS = `const fs = require('node:fs');
const path = require('node:path');
const at = (p) => path.join(__dirname, '..', p);
let where = process.env.SKILL_DIR;
try {
  const line = fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\\n').find((l) => l.split(' ')[4] === '/skill');
  if (line) where = line.split(' ')[3];
} catch {}
process.stdout.write(JSON.stringify({
  main: 'main-v1',
  helper: require('../lib/helper.js'),
  current: require('../lib/current.js'),
  data: fs.readFileSync(at('data/input.txt'), 'utf8'),
  extra: fs.existsSync(at('lib/extra.js')) ? require('../lib/extra.js') : 'none',
  hidden: fs.existsSync(at('.env')),
  where,
}));
`;

const FILES = {
  'scripts/main.js': MAIN_JS,
  'lib/helper.js': "module.exports = 'helper-v1';\n",
  'lib/v1.js': "module.exports = 'current-v1';\n",
  'lib/v2.js': "module.exports = 'current-v2';\n",
  'data/input.txt': 'data-v1',
};

/** Each attack on a skill folder, and what the script reports once the new bytes are approved. */
const ATTACKS: { name: string; attack: (dir: string) => void; shows: Record<string, string>; scriptChanges: boolean }[] = [
  {
    name: 'edit the script',
    attack: (dir) => writeFileSync(join(dir, 'scripts/main.js'), MAIN_JS.replace("'main-v1'", "'main-EDITED'")),
    shows: { main: 'main-EDITED' },
    scriptChanges: true,
  },
  {
    name: 'edit a module it requires',
    attack: (dir) => writeFileSync(join(dir, 'lib/helper.js'), "module.exports = 'helper-EDITED';\n"),
    shows: { helper: 'helper-EDITED' },
    scriptChanges: false,
  },
  {
    name: 'retarget a symlink inside the skill',
    attack: (dir) => {
      rmSync(join(dir, 'lib/current.js'));
      symlinkSync('v2.js', join(dir, 'lib/current.js'));
    },
    shows: { current: 'current-v2' },
    scriptChanges: false,
  },
  {
    name: 'add a file',
    attack: (dir) => writeFileSync(join(dir, 'lib/extra.js'), "module.exports = 'extra-ADDED';\n", { mode: 0o644 }),
    shows: { extra: 'extra-ADDED' },
    scriptChanges: false,
  },
  {
    name: 'change a data file the script reads',
    attack: (dir) => writeFileSync(join(dir, 'data/input.txt'), 'data-EDITED'),
    shows: { data: 'data-EDITED' },
    scriptChanges: false,
  },
];

const slug = (name: string): string => name.replace(/[^a-z]+/g, '-');
const SKILLS = ['steady', 'hidden-file', ...ATTACKS.map((a) => `victim-${slug(a.name)}`)];

/** Every skill gets the same files; `lib/current.js` is a link to `v1.js`. */
function writeVictims(): string {
  const root = writeSkills(
    Object.fromEntries(SKILLS.map((name) => [name, { run: [{ script: 'scripts/main.js', interpreter: 'node' }], files: FILES }])),
  );
  for (const name of SKILLS) symlinkSync('v1.js', join(root, name, 'lib/current.js'));
  writeFileSync(join(root, 'hidden-file', '.env'), 'TOKEN=not-for-the-run\n', { mode: 0o644 });
  return root;
}

let root: string;
let base: string;
let runner: RunnerHandle;

beforeAll(async () => {
  root = writeVictims();
  base = tempDir('content');
  runner = await startRunner({ env: { SKILLS_DIR: root }, base, args: ['--uid-range', uidRange(12)] });
});
afterAll(async () => {
  await runner?.stop();
});

function acceptedRuns(): number {
  return auditLines(runner.stateDir).filter((l) => l['event'] === 'run.accept').length;
}

async function prepare(skill: string): Promise<Minted> {
  const prepared = await runner.client.prepare({ skill, script: 'scripts/main.js', args: [] });
  if (!prepared.ok) throw new Error(`prepare refused: ${prepared.error.code} ${prepared.error.message}`);
  return prepared.result;
}

async function runWith(skill: string, token: string) {
  return runner.client.run({ skill, script: 'scripts/main.js', args: [], confirmToken: token }, { timeoutMs: 20_000 });
}

describe('a skill edited between the preview and the run', () => {
  it.each(ATTACKS)(
    '$name: DRAFT_CHANGED with a fresh preview of the new bytes; nothing ran; the fresh token runs exactly them',
    async ({ name, attack, shows, scriptChanges }) => {
      const skill = `victim-${slug(name)}`;
      const approved = await prepare(skill);
      const before = acceptedRuns();
      attack(join(root, skill));
      const refused = await runWith(skill, approved.confirmToken);
      expect(refused).toMatchObject({ ok: false, error: { code: 'DRAFT_CHANGED' } });
      const fresh = (refused as { error: { fresh: Minted } }).error.fresh;
      expect(fresh.willRun.content.files).not.toBe(approved.willRun.content.files);
      expect(fresh.willRun.content.script !== approved.willRun.content.script).toBe(scriptChanges);
      expect(acceptedRuns()).toBe(before);
      expect(
        auditLines(runner.stateDir)
          .filter((l) => l['event'] === 'run.reject')
          .at(-1),
      ).toMatchObject({ event: 'run.reject', reason: 'draft-changed', skill });
      const ran = await runWith(skill, fresh.confirmToken);
      if (!ran.ok) throw new Error(`${ran.error.code}: ${ran.error.message}`);
      expect(JSON.parse(text(ran.result.stdout))).toMatchObject(shows);
      const accept = auditLines(runner.stateDir).find((l) => l['event'] === 'run.accept' && l['run_id'] === ran.result.runId);
      expect(accept).toMatchObject({ script_sha256: fresh.willRun.content.script, files_sha256: fresh.willRun.content.files });
    },
  );

  it("an unchanged skill runs, from the runner's private copy (not the skill folder), which is gone afterwards", async () => {
    const approved = await prepare('steady');
    expect(approved.willRun.content).toMatchObject({ fileCount: 7, bytes: expect.any(Number) });
    const ran = await runWith('steady', approved.confirmToken);
    if (!ran.ok) throw new Error(`${ran.error.code}: ${ran.error.message}`);
    const out = JSON.parse(text(ran.result.stdout)) as Record<string, string>;
    expect(out).toMatchObject({ main: 'main-v1', helper: 'helper-v1', current: 'current-v1', data: 'data-v1', extra: 'none' });
    // Bubblewrap: the source of the /skill mount; other levels: the working directory.
    expect(out['where']).toMatch(/\/run-\d+-[0-9a-f]{16}-skill$/);
    expect(out['where']).not.toContain(root);
    // Removed after the answer (runner/requests/run-path.ts), before the run's slot is given back.
    expect((await runFoldersGone(join(base, 'scratch'))).filter((n) => n.endsWith('-skill'))).toEqual([]);
  });

  it('a hidden file (.env) is neither served nor bound nor copied: the run does not see it', async () => {
    const approved = await prepare('hidden-file');
    expect(approved.willRun.content.fileCount).toBe(7);
    const ran = await runWith('hidden-file', approved.confirmToken);
    if (!ran.ok) throw new Error(`${ran.error.code}: ${ran.error.message}`);
    expect(JSON.parse(text(ran.result.stdout))).toMatchObject({ hidden: false });
  });

  it('a skill whose served files exceed the copy cap is refused TOO_LARGE at the preview, before anything is hashed', async () => {
    const big = writeSkills({
      bloated: { run: [{ script: 'run.js', interpreter: 'node' }], files: { 'run.js': 'process.stdout.write("ran")' } },
    });
    writeFileSync(join(big, 'bloated', 'blob.bin'), '', { mode: 0o644 });
    truncateSync(join(big, 'bloated', 'blob.bin'), 65 * 1024 * 1024);
    const other = await startRunner({ env: { SKILLS_DIR: big }, args: ['--uid-range', uidRange(12)] });
    try {
      const prepared = await other.client.prepare({ skill: 'bloated', script: 'run.js', args: [] });
      expect(prepared).toMatchObject({
        ok: false,
        error: { code: 'TOO_LARGE', message: expect.stringMatching(/68157\d+ bytes.*at most 67108864/) },
      });
    } finally {
      await other.stop();
    }
  });
});

describe('keys per purpose and token lifetime', () => {
  const secret = randomBytes(32).toString('hex');
  let keyed: RunnerHandle;
  beforeAll(async () => {
    keyed = await startRunner({
      env: { SKILLS_DIR: root, MCP_CONFIRM_SECRET: secret, MCP_CONFIRM_TTL_SECONDS: '600' },
      args: ['--uid-range', uidRange(12)],
    });
  });
  afterAll(async () => {
    await keyed?.stop();
  });

  async function runOn(handle: RunnerHandle, token: string) {
    return handle.client.run({ skill: 'steady', script: 'scripts/main.js', args: [], confirmToken: token }, { timeoutMs: 20_000 });
  }

  it('a front holding only its requestState key (derived from the same secret) cannot make a token the runner takes', async () => {
    const prepared = await keyed.client.prepare({ skill: 'steady', script: 'scripts/main.js', args: [] });
    if (!prepared.ok) throw new Error(prepared.error.message);
    const frontKey = deriveKey(secret, 'request-state');
    const forged = mintToken(frontKey, prepared.result.willRun, Date.now(), 60_000).token;
    expect(await runOn(keyed, forged)).toMatchObject({ ok: false, error: { code: 'TOKEN_INVALID' } });
    // The same claims under the runner's own derivation do run: the refusal was the key.
    const own = mintToken(deriveKey(secret, 'confirm-token'), prepared.result.willRun, Date.now(), 60_000).token;
    expect(await runOn(keyed, own)).toMatchObject({ ok: true, result: { exitCode: 0 } });
  });

  it("a token whose expiry is past its issue time + the runner's TTL is refused TOKEN_INVALID, even with the runner's key", async () => {
    const prepared = await keyed.client.prepare({ skill: 'steady', script: 'scripts/main.js', args: [] });
    if (!prepared.ok) throw new Error(prepared.error.message);
    const long = mintToken(deriveKey(secret, 'confirm-token'), prepared.result.willRun, Date.now(), 600_000 + 1).token;
    expect(await runOn(keyed, long)).toMatchObject({ ok: false, error: { code: 'TOKEN_INVALID' } });
  });

  it('MCP_CONFIRM_SECRET_FILE: the runner derives its token key from the file; a world-readable file stops it', async () => {
    const dir = tempDir('confirm-secret');
    const file = join(dir, 'confirm.secret');
    const fileSecret = randomBytes(32).toString('hex');
    writeFileSync(file, `${fileSecret}\n`, { mode: 0o600 });
    const fromFile = await startRunner({ env: { SKILLS_DIR: root, MCP_CONFIRM_SECRET_FILE: file }, args: ['--uid-range', uidRange(12)] });
    try {
      const prepared = await fromFile.client.prepare({ skill: 'steady', script: 'scripts/main.js', args: [] });
      if (!prepared.ok) throw new Error(prepared.error.message);
      const own = mintToken(deriveKey(fileSecret, 'confirm-token'), prepared.result.willRun, Date.now(), 60_000).token;
      expect(await runOn(fromFile, own)).toMatchObject({ ok: true, result: { exitCode: 0 } });
    } finally {
      await fromFile.stop();
    }
    chmodSync(file, 0o644);
    await expect(
      startRunner({ env: { SKILLS_DIR: root, MCP_CONFIRM_SECRET_FILE: file }, args: ['--uid-range', uidRange(12)] }),
    ).rejects.toThrow(/readable by every user/);
    expect(existsSync(file)).toBe(true);
  });
});
