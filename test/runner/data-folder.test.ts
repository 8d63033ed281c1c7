/**
 * A skill's data folder (docs/isolation.md, "Data folders"), through the real runner over its socket
 * at this machine's level: what one run writes the next reads — also after a runner restart and, as
 * root, under a fresh uid per run — two skills never share a folder, two runs of one folder never
 * run at once, the quota is checked after each run (dataFull, then DATA_FULL, nothing lost), and
 * what a script leaves there (a link, a FIFO) is named but never followed.
 *
 * Tier `level`: the folder reaches the script differently at each level (bound at /data in
 * bubblewrap, the host path elsewhere; root:<gid> 2770 with a fresh uid per run as root, the
 * runner's own uid otherwise), and these tests assert what a script could read, write and count
 * there. The approval's binding of the quota and the no-queue BUSY refusal, which do not depend on
 * how the folder is reached, are in data-folder-once.test.ts (front).
 */
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunnerClient } from '../../server/runner-client.js';
import { requesterTag } from '../../shared/token.js';
import { expectedLevel, hasBwrap } from '../levels.js';
import { auditLines, awaitAuditLine, BIN, isRoot, startRunner, tempDir, text, until, type RunnerHandle } from './harness.js';
import { GIDS, dataEnv, run, writeDataSkills } from './data-skills.js';

const skills = writeDataSkills();
const env = dataEnv(skills);
const level = expectedLevel(isRoot);
const base = tempDir('data-runner');
const stateDir = join(base, 'state');
const folderOf = (skill: string): string => join(stateDir, 'data', skill, 'anyone');
let runner: RunnerHandle;

/** `skill-mcp data …` on this test's state folder, as the operator. */
function cli(...args: string[]): string {
  try {
    return execFileSync(process.execPath, [BIN, 'data', ...args, '--state-dir', stateDir], {
      encoding: 'utf8',
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', SKILL_MCP_DATA_GID_RANGE: GIDS },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (error) {
    throw new Error(String((error as { stderr?: string }).stderr ?? error));
  }
}

async function ok(client: RunnerClient, skill: string, script: string, args: string[] = []) {
  const { prepared, ran } = await run(client, skill, script, args);
  if (!ran.ok) throw new Error(`run refused: ${ran.error.code} ${ran.error.message}`);
  return { willRun: prepared.willRun, result: ran.result };
}

beforeAll(async () => {
  runner = await startRunner({ env, base, stateDir });
}, 30_000);
afterAll(async () => {
  await runner?.stop();
});

describe(`data folders at ${level}`, () => {
  it('a counter counts 1, 2, 3 across runs and goes on after a runner restart; the preview binds the folder and its quota', async () => {
    const first = await ok(runner.client, 'counter', 'count.py');
    expect(first.willRun.isolation).toBe(level);
    expect(first.willRun.data).toEqual({ folder: 'counter/anyone', bytes: 100 * 1024 * 1024, files: 10_000 });
    expect(first.willRun.envNames).toContain('MCP_DATA_DIR');
    const [count, dir] = text(first.result.stdout).trim().split(' ');
    expect(count).toBe('1');
    // Inside bubblewrap the folder is at /data; elsewhere the script gets its host path.
    expect(dir).toBe(hasBwrap(level) ? '/data' : folderOf('counter'));
    expect(text((await ok(runner.client, 'counter', 'count.py')).result.stdout).split(' ')[0]).toBe('2');
    await runner.stop();
    runner = await startRunner({ env, base, stateDir });
    const third = await ok(runner.client, 'counter', 'count.py');
    expect(text(third.result.stdout).split(' ')[0]).toBe('3');
    expect(third.result.data).toEqual({ bytes: expect.any(Number), entries: 2 });
    expect(third.result.dataFull).toBeUndefined();
    expect(readFileSync(join(folderOf('counter'), 'sub', 'count'), 'utf8')).toBe('3');
    const exit = await awaitAuditLine(stateDir, (l) => l['event'] === 'run.exit' && l['run_id'] === third.result.runId);
    expect(exit).toMatchObject({
      data_folder: 'counter/anyone',
      data_bytes_before: 1,
      data_entries_before: 2,
      data_bytes: 1,
      data_entries: 2,
    });
    // skill_list's source (describe) names the folder, its quota and what it holds.
    const described = await runner.client.describe(['counter']);
    expect(described.ok && described.result.skills[0]?.data).toEqual({
      folder: 'counter/anyone',
      bytes: 100 * 1024 * 1024,
      files: 10_000,
      used: { bytes: 1, entries: 2, full: false },
    });
    // The next preview shows what the folder holds now, outside what the token binds.
    const next = await runner.client.prepare({ skill: 'counter', script: 'count.py', args: [] });
    expect(next.ok && next.result.dataUsed).toEqual({ bytes: 1, entries: 2, full: false });
  }, 90_000);

  it.runIf(isRoot)(
    'as root the folder is root:<its own gid> 2770, and a file another uid wrote there stays writable to the next run',
    async () => {
      const st = statSync(folderOf('counter'));
      const [first, last] = GIDS.split('-').map(Number) as [number, number];
      expect(st.uid).toBe(0);
      expect(st.gid).toBeGreaterThanOrEqual(first);
      expect(st.gid).toBeLessThanOrEqual(last);
      expect(st.mode & 0o7777).toBe(0o2770);
      // As a run of another uid would have left it (umask 007, the folder's group through setgid):
      // owned by a uid that is no run's, so only the group lets the next run rewrite it.
      const count = join(folderOf('counter'), 'sub', 'count');
      expect(statSync(count).gid).toBe(st.gid);
      expect(statSync(count).mode & 0o777).toBe(0o660);
      chownSync(count, 12345, st.gid);
      const next = await ok(runner.client, 'counter', 'count.py');
      expect(text(next.result.stdout).split(' ')[0]).toBe('4');
    },
    60_000,
  );

  it('a skill without data: gets no folder and no MCP_DATA_DIR; two skills never see each other’s folder', async () => {
    const plain = await ok(runner.client, 'plain', 'look.py');
    expect(plain.willRun.data).toBeUndefined();
    expect(plain.willRun.envNames).not.toContain('MCP_DATA_DIR');
    expect(text(plain.result.stdout).trim()).toBe('none');
    writeFileSync(join(folderOf('counter'), 'secret-of-counter'), 'x');
    const looker = await ok(runner.client, 'looker', 'look.py');
    expect(text(looker.result.stdout).trim()).toBe('empty');
    expect(existsSync(folderOf('plain'))).toBe(false);
  }, 60_000);

  it('attack: a script of another skill that names a folder by its host path cannot list it (same-uid: unprotected, as documented)', async () => {
    const peek = await ok(runner.client, 'plain', 'peek.py', [folderOf('counter')]);
    const seen = text(peek.result.stdout).trim();
    // bubblewrap: not in the sandbox at all; uid levels: the folder's group is not the run's.
    if (hasBwrap(level)) expect(seen).toBe('missing');
    else if (isRoot) expect(seen).toBe('denied');
    else expect(seen).toContain('secret-of-counter');
  }, 60_000);

  it('over the quota: the run that went over says dataFull and keeps what it wrote; the next is refused DATA_FULL, its approval unspent', async () => {
    const fits = await ok(runner.client, 'small', 'write.py', ['a', '600']);
    expect(fits.willRun.data).toEqual({ folder: 'small/anyone', bytes: 1000, files: 5 });
    expect(fits.result.dataFull).toBeUndefined();
    const over = await ok(runner.client, 'small', 'write.py', ['b', '600']);
    expect(over.result.exitCode).toBe(0);
    expect(over.result.dataFull).toBe(true);
    expect(over.result.dataNote).toMatch(/over its quota of 1000 bytes/);
    expect(readdirSync(folderOf('small')).sort()).toEqual(['a', 'b']);
    const refused = await run(runner.client, 'small', 'write.py', ['c', '1']);
    expect(refused.ran.ok).toBe(false);
    if (!refused.ran.ok) expect(refused.ran.error.code).toBe('DATA_FULL');
    expect(readdirSync(folderOf('small')).sort()).toEqual(['a', 'b']);
    const reject = await awaitAuditLine(stateDir, (l) => l['event'] === 'run.reject' && l['reason'] === 'data-full');
    expect(reject['skill']).toBe('small');
    // The operator's view, then the folder emptied: the refused approval runs as it was.
    expect(cli('ls')).toMatch(/small\/anyone\t1200 bytes\t2 entries of 1000 bytes, 5 entries\tFULL/);
    expect(cli('rm', 'small')).toMatch(/small\/anyone\t0 bytes\t0 entries/);
    const again = await runner.client.run(
      { skill: 'small', script: 'write.py', args: ['c', '1'], confirmToken: refused.prepared.confirmToken },
      { timeoutMs: 60_000 },
    );
    expect(again.ok && again.result.dataFull).toBeUndefined();
    expect(readdirSync(folderOf('small'))).toEqual(['c']);
  }, 60_000);

  it('skill-mcp data export and import carry a folder, and import refuses an archive holding a link', async () => {
    const tar = join(tempDir('data-tar'), 'small.tar');
    expect(cli('export', 'small', tar)).toMatch(/wrote small\/anyone/);
    cli('rm', 'small');
    expect(cli('import', 'small', tar)).toMatch(/small\/anyone\t1 bytes\t1 entries/);
    // du measures again (without following the link a run might have left) and keeps the figures.
    expect(cli('du', 'small')).toMatch(/small\/anyone\t1 bytes\t1 entries of 1000 bytes, 5 entries$/m);
    expect(JSON.parse(cli('ls', '--json'))).toContainEqual({
      folder: 'small/anyone',
      record: { bytes: 1, entries: 1, full: false, quota: { bytes: 1000, files: 5 } },
    });
    expect(readFileSync(join(folderOf('small'), 'c'), 'utf8')).toBe('x');
    // The imported file is the next run's to change.
    const next = await ok(runner.client, 'small', 'write.py', ['c', '2']);
    expect(next.result.data).toEqual({ bytes: 2, entries: 1 });
    const linked = tempDir('data-link');
    symlinkSync('/etc/passwd', join(linked, 'l'));
    execFileSync('tar', ['-C', linked, '-cf', join(linked, 'bad.tar'), 'l']);
    expect(() => cli('import', 'small', join(linked, 'bad.tar'))).toThrow(/regular files and folders only/);
  }, 60_000);

  it('attack: a link and a FIFO planted in the folder are named, never followed or opened, and the folder still serves', async () => {
    const planted = await ok(runner.client, 'planter', 'plant.py');
    expect(text(planted.result.stdout).trim()).toBe('planted');
    expect(planted.result.dataFull).toBeUndefined();
    expect(planted.result.dataNote).toMatch(/never followed: (passwd-link, pipe|pipe, passwd-link)/);
    // Only the link's own size is nothing: /etc/passwd's bytes were not counted.
    expect(planted.result.data).toEqual({ bytes: 0, entries: 2 });
    const exit = await awaitAuditLine(stateDir, (l) => l['event'] === 'run.exit' && l['run_id'] === planted.result.runId);
    expect((exit['data_odd'] as string[]).sort()).toEqual(['passwd-link', 'pipe']);
    expect(text((await ok(runner.client, 'planter', 'plant.py')).result.stderr)).toMatch(/FileExistsError/);
  }, 60_000);
});

describe('one run at a time per data folder', () => {
  it('a second run of the same folder waits for the first to end', async () => {
    const a = run(runner.client, 'holder', 'hold.py', ['a']);
    expect(await until(() => existsSync(join(folderOf('holder'), 'started-a')), 30_000)).toBe(true);
    // While A holds the folder: a person's clear is BUSY at once (never waits, never races the run),
    // its confirmation kept; the operator's `data rm` refuses; nothing is removed.
    const preview = await runner.client.dataClear({ skill: 'holder' });
    if (!preview.ok) throw new Error(preview.error.message);
    const clearToken = preview.result.confirmToken!;
    const busy = await runner.client.dataClear({ skill: 'holder', confirmToken: clearToken });
    expect(busy.ok).toBe(false);
    if (!busy.ok) expect(busy.error.code).toBe('BUSY');
    expect(() => cli('rm', 'holder')).toThrow(/a run is using this folder .*try again when it ends/);
    expect(existsSync(join(folderOf('holder'), 'started-a'))).toBe(true);
    const b = run(runner.client, 'holder', 'hold.py', ['b']);
    // B waits for its turn at the folder (its run.wait line), and must not start before A has ended.
    await awaitAuditLine(stateDir, (l) => l['event'] === 'run.wait' && l['data_folder'] === 'holder/anyone');
    writeFileSync(join(folderOf('holder'), 'go'), '');
    const [ra, rb] = await Promise.all([a, b]);
    if (!ra.ran.ok || !rb.ran.ok) throw new Error('a holder run was refused');
    expect(text(rb.ran.result.stdout).trim()).toBe('other-done');
    const lines = auditLines(stateDir);
    const exitA = lines.findIndex((l) => l['event'] === 'run.exit' && l['run_id'] === (ra.ran.ok && ra.ran.result.runId));
    const acceptB = lines.findIndex((l) => l['event'] === 'run.accept' && l['run_id'] === (rb.ran.ok && rb.ran.result.runId));
    expect(acceptB).toBeGreaterThan(exitA);
    // Both runs over: the same confirmation now empties the folder, and says what it removed.
    const cleared = await runner.client.dataClear({ skill: 'holder', confirmToken: clearToken });
    if (!cleared.ok) throw new Error(cleared.error.message);
    expect(cleared.result).toMatchObject({ folder: 'holder/anyone', removed: { entries: 5, bytes: 0 }, left: { entries: 0, bytes: 0 } });
    expect(readdirSync(folderOf('holder'))).toEqual([]);
    const refusedLine = auditLines(stateDir).find((l) => l['event'] === 'data.clear' && l['refused'] === 'busy');
    expect(refusedLine).toMatchObject({ skill: 'holder', data_folder: 'holder/anyone' });
  }, 90_000);
});

describe("the host's MCP_DATA_DIR", () => {
  it('is the base: every granted skill gets <base>/<skill>/anyone, one folder per subject, and the base itself never reaches a script', async () => {
    const hostBase = tempDir('host-data');
    const hosted = await startRunner({
      env: {
        ...env,
        MCP_DATA_DIR: hostBase,
        MCP_SKILL_RUN: JSON.stringify([
          { skill: 'plain', script: 'look.py' },
          { skill: 'counter', script: 'count.py' },
        ]),
        MCP_SKILL_ALLOW_UNSCRUBBED: '1',
      },
    });
    try {
      const plain = await ok(hosted.client, 'plain', 'look.py');
      expect(plain.willRun.data).toEqual({ folder: 'plain/anyone', bytes: 100 * 1024 * 1024, files: 10_000 });
      expect(text(plain.result.stdout).trim()).toBe('empty');
      const counted = await ok(hosted.client, 'counter', 'count.py');
      expect(text(counted.result.stdout).split(' ')[0]).toBe('1');
      expect(readFileSync(join(hostBase, 'counter', 'anyone', 'sub', 'count'), 'utf8')).toBe('1');
      expect(existsSync(join(hostBase, 'plain', 'anyone'))).toBe(true);
      // One folder per verified identity: two people never see each other's count.
      const as = async (subject: string) => {
        const identity = { subject };
        const prepared = await hosted.client.prepare({ skill: 'counter', script: 'count.py', args: [], identity });
        if (!prepared.ok) throw new Error(prepared.error.message);
        expect(prepared.result.willRun.data?.folder).toBe(`counter/s-${requesterTag(subject)}`);
        const ran = await hosted.client.run(
          { skill: 'counter', script: 'count.py', args: [], identity, confirmToken: prepared.result.confirmToken },
          { timeoutMs: 60_000 },
        );
        if (!ran.ok) throw new Error(ran.error.message);
        return text(ran.result.stdout).split(' ')[0];
      };
      expect(await as('alice@example.com')).toBe('1');
      expect(await as('bob@example.com')).toBe('1');
      expect(await as('alice@example.com')).toBe('2');
      expect(readdirSync(join(hostBase, 'counter')).sort()).toEqual(
        ['anyone', `s-${requesterTag('alice@example.com')}`, `s-${requesterTag('bob@example.com')}`].sort(),
      );
      const alice = { subject: 'alice@example.com' };
      const bob = { subject: 'bob@example.com' };
      const aliceFolder = `counter/s-${requesterTag(alice.subject)}`;
      // describe (skill_list's source) shows each asker its own folder and usage, never another's.
      const seen = await hosted.client.describe(['counter'], alice);
      expect(seen.ok && seen.result.skills[0]?.data).toMatchObject({ folder: aliceFolder, used: { entries: 2 } });
      const bobs = await hosted.client.describe(['counter'], bob);
      expect(bobs.ok && bobs.result.skills[0]?.data?.folder).toBe(`counter/s-${requesterTag(bob.subject)}`);
      // attack: Bob presents the token Alice was given to clear her folder.
      const alicePreview = await hosted.client.dataClear({ skill: 'counter', identity: alice });
      if (!alicePreview.ok) throw new Error(alicePreview.error.message);
      expect(alicePreview.result.folder).toBe(aliceFolder);
      const stolen = await hosted.client.dataClear({ skill: 'counter', identity: bob, confirmToken: alicePreview.result.confirmToken! });
      expect(!stolen.ok && stolen.error.code).toBe('TOKEN_INVALID');
      // attack: a skill not granted to the caller has no folder of theirs to clear.
      const ungranted = await hosted.client.dataClear({ skill: 'looker', identity: bob });
      expect(!ungranted.ok && ungranted.error.code).toBe('NOT_GRANTED');
      // Bob clears: his own folder only — the request cannot name another.
      const bobPreview = await hosted.client.dataClear({ skill: 'counter', identity: bob });
      if (!bobPreview.ok) throw new Error(bobPreview.error.message);
      const bobCleared = await hosted.client.dataClear({ skill: 'counter', identity: bob, confirmToken: bobPreview.result.confirmToken! });
      expect(bobCleared.ok && bobCleared.result.removed).toEqual({ entries: 2, bytes: 1 });
      expect(readdirSync(join(hostBase, 'counter', `s-${requesterTag(bob.subject)}`))).toEqual([]);
      expect(readFileSync(join(hostBase, aliceFolder, 'sub', 'count'), 'utf8')).toBe('2');
      expect(await as('bob@example.com')).toBe('1');
      expect(await as('alice@example.com')).toBe('3');
      const line = await awaitAuditLine(hosted.stateDir, (l) => l['event'] === 'data.clear' && l['entries_removed'] === 2);
      expect(line).toMatchObject({ requester: bob.subject, data_folder: `counter/s-${requesterTag(bob.subject)}` });
      // Every data.clear line (done and refused) fits docs/audit.schema.json.
      const mod = (await import('ajv/dist/2020.js')) as unknown as {
        default: new (options: object) => { compile(schema: object): ((value: unknown) => boolean) & { errors?: unknown } };
      };
      const validate = new mod.default({ strict: false }).compile(
        JSON.parse(readFileSync(join(import.meta.dirname, '../../docs/audit.schema.json'), 'utf8')) as object,
      );
      const clears = auditLines(hosted.stateDir).filter((l) => l['event'] === 'data.clear');
      expect(clears.length).toBeGreaterThanOrEqual(2);
      for (const l of clears) expect({ ok: validate(l), errors: validate.errors ?? null }).toMatchObject({ ok: true });
      expect(validate({ ...clears[0], data_folder: '/abs/host/path' })).toBe(false);
    } finally {
      await hosted.stop();
    }
  }, 90_000);
});
