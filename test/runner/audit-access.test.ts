/**
 * The audit log (hash chain, 0600, names only, never token material or secrets), `skill-mcp audit
 * verify/tail`, who may connect (socket modes, SO_PEERCRED), hosted defaults (nothing granted,
 * unscrubbed environ refuses runs) and the honest isolation level of a non-root runner.
 */
import { expectedLevel } from '../levels.js';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FrameCodec } from '../../shared/frame.js';
import { BIN, helloFor, isRoot, prepareAndRun, startRunner, tempDir, text, uidRange, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

const SECRET = `audit-secret-${Date.now()}`;
const skills = writeSkills({
  s: {
    run: [{ script: 'a.js', interpreter: 'node', env: ['S_KEY'], timeout: 5 }],
    files: { 'a.js': 'process.stdout.write("out:" + (process.env.S_KEY ? "set" : "unset"))' },
  },
});
let runner: RunnerHandle;
let token = '';

function audit(args: string[]): { status: number | null; stdout: string } {
  const r = spawnSync(process.execPath, [BIN, 'audit', ...args], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout };
}

beforeAll(async () => {
  runner = await startRunner({ env: { SKILLS_DIR: skills, S_KEY: SECRET }, args: ['--uid-range', uidRange(2)] });
  const ran = await prepareAndRun(runner.client, 's', 'a.js', ['arg1']);
  token = ran.token;
  expect(text(ran.result.stdout)).toBe('out:set');
  await runner.client.run({ skill: 's', script: 'a.js', args: ['arg1'], confirmToken: token });
});
afterAll(async () => {
  await runner?.stop();
});

describe('audit log', () => {
  it('is 0600, hash-chained, one line per decision, names only', () => {
    const file = join(runner.stateDir, 'audit.log');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const text = readFileSync(file, 'utf8');
    const all = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    // A signed checkpoint follows every decided run (docs/audit.md).
    expect(all.map((e) => e['event'])).toEqual([
      'runner.start',
      'run.prepare',
      'run.accept',
      'run.exit',
      'audit.checkpoint',
      'run.reject',
      'audit.checkpoint',
    ]);
    const events = all.filter((e) => e['event'] !== 'audit.checkpoint');
    expect(events[2]).toMatchObject({ argv: ['a.js', 'arg1'], env_names: expect.arrayContaining(['S_KEY']) });
    expect(events[3]).toMatchObject({ ended: 'exit', exit_code: 0, stdout_bytes: 7 });
    expect(events[4]).toMatchObject({ reason: 'token-reused' });
    expect(text).not.toContain(SECRET);
    for (const part of token.split('.').slice(1)) expect(text).not.toContain(part);
  });

  it('`audit verify` passes an intact log and names the line where an edit or a deletion breaks it', () => {
    const file = join(runner.stateDir, 'audit.log');
    const intact = audit(['verify', file]);
    expect(intact.status).toBe(0);
    const lines = readFileSync(file, 'utf8').split('\n');
    const copy = join(tempDir('audit'), 'edited.log');
    writeFileSync(copy, lines.map((l, i) => (i === 2 ? l.replace('"arg1"', '"other"') : l)).join('\n'));
    expect(audit(['verify', copy])).toMatchObject({ status: 1, stdout: expect.stringContaining('line 4') });
    writeFileSync(copy, lines.filter((_, i) => i !== 1).join('\n'));
    expect(audit(['verify', copy])).toMatchObject({ status: 1, stdout: expect.stringContaining('line 2') });
    expect(audit(['tail', file]).stdout).toMatch(/run\.exit .*exit_code=0/);
  });
});

describe('who may connect', () => {
  it('socket directory and socket are private to the runner (0700/0600 without a front group)', () => {
    expect(statSync(dirname(runner.socketPath)).mode & 0o777).toBe(0o700);
    expect(statSync(runner.socketPath).mode & 0o777).toBe(0o600);
  });

  it.skipIf(!isRoot)('a process of another uid in the front group is refused by SO_PEERCRED (root only: needs other uids)', async () => {
    const front = await startRunner({
      env: { SKILLS_DIR: skills },
      args: ['--uid-range', uidRange(2), '--front-uid', '40001', '--front-gid', '40001'],
    });
    try {
      expect(statSync(dirname(front.socketPath)).mode & 0o777).toBe(0o750);
      expect(statSync(front.socketPath)).toMatchObject({ gid: 40001 });
      // A hello (a front configured like the runner, no secret: none is set) and a describe.
      const codec = new FrameCodec(1024 * 1024);
      const frames = Buffer.concat([codec.encode(helloFor({ SKILLS_DIR: skills })), codec.encode({ type: 'describe' })]).toString('base64');
      const probe = (uid: number): string =>
        execFileSync(
          'setpriv',
          [
            `--reuid=${uid}`,
            '--regid=40001',
            '--clear-groups',
            process.execPath,
            '-e',
            `
        const net = require('net'); const s = net.createConnection(${JSON.stringify(front.socketPath)});
        s.on('connect', () => s.write(Buffer.from(${JSON.stringify(frames)}, 'base64')));
        let got = Buffer.alloc(0); s.on('data', (c) => { got = Buffer.concat([got, c]); if (got.includes('PEER_REFUSED') || got.includes('isolation')) s.destroy(); });
        s.on('close', () => { process.stdout.write(got.includes('PEER_REFUSED') ? 'refused' : got.includes('isolation') ? 'served' : 'other'); });
        s.on('error', (e) => process.stdout.write(e.code));
        setTimeout(() => s.destroy(), 15000).unref();`,
          ],
          { encoding: 'utf8' },
        ); // a backstop only: 1.5 s lost the answer on a loaded machine
      expect(probe(40002)).toBe('refused');
      expect(probe(40001)).toBe('served');
      const refusals = readFileSync(join(front.stateDir, 'audit.log'), 'utf8');
      expect(refusals).toMatch(/"event":"peer.refuse","uid":40002/);
      expect((await front.client.describe()).ok).toBe(true);
    } finally {
      await front.stop();
    }
  });
});

describe('hosted defaults and honesty', () => {
  it('hosted without MCP_SKILL_RUN grants nothing: prepare is NOT_GRANTED, describe says why', async () => {
    const hosted = await startRunner({ env: { MCP_SKILLS_PATH: skills, S_KEY: SECRET }, args: ['--uid-range', uidRange(2)] });
    try {
      expect(await hosted.client.prepare({ skill: 's', script: 'a.js', args: [] })).toMatchObject({
        ok: false,
        error: { code: 'NOT_GRANTED' },
      });
      const described = await hosted.client.describe();
      expect(described).toMatchObject({
        ok: true,
        result: { grantFrom: 'none (hosted default)', skills: [{ name: 's', scripts: [{ granted: false, runnable: false }] }] },
      });
      expect(JSON.stringify(described)).not.toContain(SECRET);
    } finally {
      await hosted.stop();
    }
  });

  it.skipIf(!isRoot)(
    `a non-root runner reports its level (${expectedLevel(false)} here) in describe and in every preview (root only: drops to uid 40003 to show it)`,
    async () => {
      const base = tempDir('nonroot');
      execFileSync('chown', ['40003:40003', base]);
      const weak = await startRunner({
        env: { SKILLS_DIR: skills, HOME: base },
        base,
        spawnPrefix: ['setpriv', '--reuid=40003', '--regid=40003', '--clear-groups'],
      });
      try {
        const d = await weak.client.describe();
        expect(d).toMatchObject({ ok: true, result: { isolation: { level: expectedLevel(false) } } });
        const ran = await prepareAndRun(weak.client, 's', 'a.js');
        expect(ran.willRun.isolation).toBe(expectedLevel(false));
        expect(ran.willRun.sandbox).toEqual(d.ok ? d.result.isolation.mechanisms : []);
      } finally {
        await weak.stop();
      }
    },
  );
});
