/**
 * Attacks through shared temp folders, against the real runner on its socket:
 * - another local user plants `$TMPDIR/node_modules/<name>` (here TMPDIR is a sticky, world-writable
 *   folder like /tmp, made by the test so parallel runs never share it): without bubblewrap, Node's
 *   require() walks up from the run copy's folder, so a copy below $TMPDIR (the old default) would
 *   load it. The default scratch directory is below no folder others can write (root:
 *   /run/skill-mcp-scratch; a user: the state directory), so `require('<name>')` fails; a runner
 *   told to put its scratch below that folder loads it (the plant is real) and says so at start-up;
 * - another local user creates the runner's scratch directory first (or a link in its place):
 *   it is refused, another is used, and nothing stops the runner from running;
 * - a script's HOME and TMPDIR are its own, not a shared folder.
 */
import { chmodSync, chownSync, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { chooseScratchDir, sharedAncestor } from '../../runner/workspace/scratch.js';
import { bwrapWorks } from '../levels.js';
import { isRoot, prepareAndRun, startRunner, tempDir, text, uidRange, writeSkills } from './harness.js';

const OTHER_UID = 40117;
const moduleName = `skill-mcp-planted-${randomBytes(4).toString('hex')}`;
let shared: string;

const SCRIPT = `let loaded;
try { loaded = require(${JSON.stringify(moduleName)}); } catch (e) { loaded = e.code; }
const os = require('node:os');
const fs = require('node:fs');
const st = fs.statSync(process.env.HOME);
process.stdout.write(JSON.stringify({ loaded, home: process.env.HOME, tmp: process.env.TMPDIR, homeMode: (st.mode & 0o777).toString(8), homeUid: st.uid, uid: process.getuid() }));
`;

let root: string;

beforeAll(() => {
  root = writeSkills({ walker: { run: [{ script: 'main.js', interpreter: 'node' }], files: { 'main.js': SCRIPT } } });
  shared = tempDir('shared-tmp');
  chmodSync(shared, 0o1777);
  const planted = join(shared, 'node_modules', moduleName);
  mkdirSync(planted, { recursive: true, mode: 0o755 });
  writeFileSync(join(planted, 'index.js'), "module.exports = 'PLANTED CODE RAN';\n", { mode: 0o644 });
});

/** A folder the test's uid owns with no folder above it others may write, for a user runner's state; undefined when there is none. */
function safeStateParent(): string | undefined {
  const home = process.env['HOME'];
  if (!home) return undefined;
  try {
    return sharedAncestor(join(home, '.')) === undefined && statSync(home).uid === process.getuid!() && (statSync(home).mode & 0o022) === 0
      ? home
      : undefined;
  } catch {
    return undefined;
  }
}

describe('a planted $TMPDIR/node_modules is never loaded by a run', () => {
  const stateParent = isRoot ? tempDir('state-parent') : safeStateParent();
  const why = isRoot
    ? ''
    : 'HOME is missing or below a folder others may write (no place this uid owns that is safe to put the default scratch in)';
  it.skipIf(!isRoot && stateParent === undefined)(`with the default scratch directory, require() does not reach it ${why}`, async () => {
    const stateDir = mkdtempSync(join(stateParent!, '.skill-mcp-shared-temp-'));
    const runner = await startRunner({
      env: { SKILLS_DIR: root, TMPDIR: shared },
      stateDir,
      args: ['--uid-range', uidRange(22)],
      noScratch: true,
    });
    try {
      const { result } = await prepareAndRun(runner.client, 'walker', 'main.js');
      const out = JSON.parse(text(result.stdout)) as Record<string, unknown>;
      expect(out['loaded']).toBe('MODULE_NOT_FOUND');
      expect(runner.stderr()).not.toContain('other users may write to');
      // HOME and TMPDIR: the run's own folder (bubblewrap: its private /tmp), not the shared one.
      expect(out['home']).toBe(out['tmp']);
      // Bubblewrap: a private tmpfs mounted at /tmp inside; otherwise the run's own folder.
      if (bwrapWorks) expect(out['home']).toBe('/tmp');
      else expect(out['home']).toMatch(/\/run-\d+-[0-9a-f]{16}\/home$/);
      // Without bubblewrap it is a folder on the host: the run's own, 0700 (bubblewrap's tmpfs is seen by nobody else).
      if (!bwrapWorks) expect(out).toMatchObject({ homeMode: '700', homeUid: out['uid'] });
      else expect(out['homeUid']).toBe(out['uid']);
    } finally {
      await runner.stop();
      rmSync(stateDir, { recursive: true, force: true });
    }
  });

  it.skipIf(bwrapWorks)(
    'the plant is real: a runner told to keep its scratch below /tmp warns, and without bubblewrap its runs load it',
    async () => {
      const runner = await startRunner({
        env: { SKILLS_DIR: root, TMPDIR: shared },
        args: ['--uid-range', uidRange(22), '--scratch-dir', join(shared, `scratch-${process.pid}`)],
        noScratch: true,
      });
      try {
        expect(runner.stderr()).toContain('other users may write to');
        const { result } = await prepareAndRun(runner.client, 'walker', 'main.js');
        expect((JSON.parse(text(result.stdout)) as Record<string, unknown>)['loaded']).toBe('PLANTED CODE RAN');
      } finally {
        await runner.stop();
      }
    },
  );
});

describe('a scratch directory someone else made first', () => {
  const mode = isRoot ? 0o711 : 0o700;
  it('a link planted under the name is refused and a fresh private directory is used', () => {
    const parent = tempDir('scratch-choice');
    const decoy = join(parent, 'decoy');
    mkdirSync(decoy);
    symlinkSync(decoy, join(parent, 'taken'));
    const choice = chooseScratchDir([join(parent, 'taken')], parent, mode);
    expect(choice.refused[0]).toContain('is a link or not a directory');
    expect(choice.dir).toMatch(new RegExp(`/skill-mcp-scratch-${process.getuid!()}-[0-9a-f]{8}$`));
    expect(statSync(choice.dir)).toMatchObject({ uid: process.getuid!() });
    expect(statSync(choice.dir).mode & 0o7777).toBe(mode);
    expect(realpathSync(choice.dir)).not.toBe(decoy);
  });

  it.skipIf(!isRoot)('a directory another user owns is refused (root only: needs a second uid)', () => {
    const parent = tempDir('scratch-choice');
    const theirs = join(parent, 'theirs');
    mkdirSync(theirs, { mode: 0o777 });
    chownSync(theirs, OTHER_UID, OTHER_UID);
    const choice = chooseScratchDir([theirs], parent, mode);
    expect(choice.refused[0]).toContain(`belongs to uid ${OTHER_UID}`);
    expect(choice.dir).not.toBe(theirs);
  });

  it.skipIf(!isRoot)(
    'another user who creates the old shared name in TMPDIR first does not stop the runner from running (root only)',
    async () => {
      const tmp = tempDir('tmpdir');
      const old = join(tmp, `skill-mcp-scratch-${process.getuid!()}`);
      mkdirSync(old, { mode: 0o777 });
      chownSync(old, OTHER_UID, OTHER_UID);
      const stateDir = join(tempDir('state-parent'), 'state');
      const runner = await startRunner({
        env: { SKILLS_DIR: root, TMPDIR: tmp },
        stateDir,
        args: ['--uid-range', uidRange(22)],
        noScratch: true,
      });
      try {
        const { result } = await prepareAndRun(runner.client, 'walker', 'main.js');
        expect(result.exitCode).toBe(0);
      } finally {
        await runner.stop();
      }
    },
  );
});
