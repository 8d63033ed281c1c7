/**
 * Signed heads, as an auditor meets them: copies of a real runner's log made outside the runner,
 * checked with only its public key (`audit pubkey`) and a head kept earlier (`audit head`). Each
 * tampering — an emptied copy, a copy cut anywhere, an edited or reordered copy, a head or a log
 * signed by another key — exits non-zero naming the first bad line; an honest copy passes, from a
 * file or from stdin.
 */
import { generateKeyPairSync } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lineHash } from '../../runner/audit/chain.js';
import { signerFrom } from '../../runner/audit/signing.js';
import { BIN, prepareAndRun, startRunner, tempDir, uidRange, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

const skills = writeSkills({
  s: { run: [{ script: 'a.js', interpreter: 'node', timeout: 5 }], files: { 'a.js': 'process.stdout.write("ok")' } },
});
let runner: RunnerHandle;
let lines: string[];
const dir = tempDir('audit-signed');
const pem = join(dir, 'audit.pub');
const headFile = join(dir, 'head.json');

function cli(args: string[], input?: string): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, 'audit', ...args], {
    encoding: 'utf8',
    input,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', SKILL_MCP_STATE_DIR: runner.stateDir },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
function copy(name: string, content: string[]): string {
  const path = join(dir, name);
  writeFileSync(path, content.length > 0 ? `${content.join('\n')}\n` : '');
  return path;
}
const verify = (file: string, ...more: string[]) => cli(['verify', file, '--public-key', pem, ...more]);

beforeAll(async () => {
  runner = await startRunner({ env: { SKILLS_DIR: skills }, args: ['--uid-range', uidRange(7)] });
  await prepareAndRun(runner.client, 's', 'a.js', ['one']);
  await prepareAndRun(runner.client, 's', 'a.js', ['two']);
  const log = join(runner.stateDir, 'audit.log');
  const pub = cli(['pubkey']);
  expect(pub).toMatchObject({ status: 0, stdout: expect.stringMatching(/^-----BEGIN PUBLIC KEY-----\n/) });
  writeFileSync(pem, pub.stdout);
  const head = cli(['head', log]);
  expect(head.status).toBe(0);
  writeFileSync(headFile, head.stdout);
  lines = readFileSync(log, 'utf8').trim().split('\n');
});
afterAll(async () => {
  await runner?.stop();
});

describe('a copy standing alone, with the public key', () => {
  it('an honest copy verifies: chain, every checkpoint signed, signed to its last line; also from stdin, and up to the head', () => {
    const honest = copy('honest.log', lines);
    expect(verify(honest)).toMatchObject({
      status: 0,
      stdout: expect.stringMatching(/^intact: \d+ lines, chain unbroken; signed to its last line/),
    });
    expect(cli(['verify', '-', '--public-key', pem], `${lines.join('\n')}\n`)).toMatchObject({
      status: 0,
      stdout: expect.stringContaining('signed to its last line'),
    });
    expect(verify(honest, '--head', headFile)).toMatchObject({ status: 0, stdout: expect.stringContaining('reaches the head') });
  });

  it('the head is the last checkpoint: it vouches for the line before it', () => {
    const head = JSON.parse(readFileSync(headFile, 'utf8')) as { seq: number; sha256: string };
    const last = JSON.parse(lines.at(-1)!) as Record<string, unknown>;
    expect(last).toMatchObject({ event: 'audit.checkpoint', head_seq: head.seq, head_sha256: head.sha256 });
    expect(lineHash(lines[head.seq - 1]!)).toBe(head.sha256);
  });

  it('an emptied copy fails', () => {
    expect(verify(copy('empty.log', []))).toMatchObject({ status: 1, stdout: expect.stringContaining('the copy is empty') });
  });

  it('a copy cut between checkpoints fails, naming its unsigned tail', () => {
    const accept = lines.findIndex((l, i) => i > 4 && l.includes('"event":"run.accept"'));
    expect(verify(copy('cut-mid.log', lines.slice(0, accept + 1)))).toMatchObject({
      status: 1,
      stdout: expect.stringContaining('UNSIGNED tail'),
    });
  });

  it('a copy cut right after a checkpoint passes alone (nothing can show it), and fails against a later head', () => {
    const firstCheckpoint = lines.findIndex((l) => l.includes('"event":"audit.checkpoint"'));
    const cut = copy('cut-checkpoint.log', lines.slice(0, firstCheckpoint + 1));
    expect(verify(cut)).toMatchObject({ status: 0 });
    expect(verify(cut, '--head', headFile)).toMatchObject({
      status: 1,
      stdout: expect.stringMatching(/^BROKEN at .* the copy ends at seq \d+ but the head vouches for seq/),
    });
  });

  it('a copy cut mid-line fails', () => {
    const path = join(dir, 'torn.log');
    writeFileSync(path, `${lines.join('\n')}`.slice(0, -10));
    expect(verify(path)).toMatchObject({ status: 1, stdout: expect.stringContaining('incomplete') });
  });

  it('a copy cut at its start fails', () => {
    expect(verify(copy('no-start.log', lines.slice(2)))).toMatchObject({
      status: 1,
      stdout: expect.stringContaining('line 1 (seq 3): the first line does not start the chain'),
    });
  });

  it('an edited copy fails at the line after the edit', () => {
    const edited = lines.map((l, i) => (i === 2 ? l.replace('"one"', '"evil"') : l));
    expect(verify(copy('edited.log', edited))).toMatchObject({
      status: 1,
      stdout: expect.stringContaining('line 4 (seq 4): prev does not match'),
    });
  });

  it('an edited copy whose chain was recomputed fails at the checkpoint that signed the old line', () => {
    const rechained: string[] = [];
    let prev = '0'.repeat(64);
    for (const [i, l] of lines.entries()) {
      const entry = JSON.parse(l) as Record<string, unknown>;
      if (i === 2) entry['argv'] = ['a.js', 'evil'];
      entry['prev'] = prev;
      if (entry['event'] === 'audit.checkpoint') entry['head_sha256'] = prev;
      const line = JSON.stringify(entry);
      rechained.push(line);
      prev = lineHash(line);
    }
    expect(verify(copy('rechained.log', rechained))).toMatchObject({
      status: 1,
      stdout: expect.stringContaining('signature does not verify'),
    });
  });

  it('a reordered copy fails', () => {
    const swapped = [...lines];
    [swapped[3], swapped[4]] = [swapped[4]!, swapped[3]!];
    expect(verify(copy('reordered.log', swapped))).toMatchObject({ status: 1, stdout: expect.stringContaining('line 4 (seq 5)') });
  });

  it('a head from another key is refused; so is a log checked with another key', () => {
    const other = signerFrom(generateKeyPairSync('ed25519').privateKey);
    const head = JSON.parse(readFileSync(headFile, 'utf8')) as { seq: number; sha256: string; ts: string };
    const forged = join(dir, 'forged-head.json');
    writeFileSync(forged, JSON.stringify(other.sign({ seq: head.seq, sha256: head.sha256, ts: head.ts })));
    const honest = copy('honest2.log', lines);
    expect(verify(honest, '--head', forged)).toMatchObject({ status: 1, stdout: expect.stringContaining('BAD HEAD') });
    const otherPem = join(dir, 'other.pub');
    writeFileSync(otherPem, other.publicPem);
    expect(cli(['verify', honest, '--public-key', otherPem])).toMatchObject({
      status: 1,
      stdout: expect.stringContaining('not by the public key given'),
    });
  });

  it('every run line names the requester and the approval channel; the accept names the grant', () => {
    const accept = JSON.parse(lines.find((l) => l.includes('"event":"run.accept"'))!) as Record<string, unknown>;
    expect(accept).toMatchObject({
      requester: expect.any(String),
      requester_from: 'os-user',
      approval: { channel: 'token' },
      grant: { from: 'declaration' },
      will_run_sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    const prepare = JSON.parse(lines.find((l) => l.includes('"event":"run.prepare"'))!) as Record<string, unknown>;
    expect(prepare).toMatchObject({ requester: accept['requester'], will_run_sha256: accept['will_run_sha256'] });
  });
});

describe('audit query', () => {
  it('filters by run, outcome, skill, subject and time; --json prints the lines themselves; a run brings its exit along', () => {
    const log = join(runner.stateDir, 'audit.log');
    const accept = JSON.parse(lines.find((l) => l.includes('"event":"run.accept"'))!) as Record<string, unknown>;
    const byRun = cli(['query', log, '--run', String(accept['run_id']), '--json']);
    expect(byRun.status).toBe(0);
    const runLines = byRun.stdout.trim().split('\n');
    expect(runLines.map((l) => (JSON.parse(l) as { event: string }).event)).toEqual(['run.accept', 'run.exit']);
    expect(runLines[0]).toBe(lines.find((l) => l.includes('"event":"run.accept"')));
    const ok = cli(['query', log, '--outcome', 'ok', '--json']).stdout.trim().split('\n');
    expect(ok).toHaveLength(2);
    const bySkill = cli(['query', log, '--skill', 's', '--subject', String(accept['requester']), '--json'])
      .stdout.trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { event: string }).event);
    expect(bySkill).toEqual(['run.prepare', 'run.accept', 'run.exit', 'run.prepare', 'run.accept', 'run.exit']);
    expect(cli(['query', log, '--skill', 'other']).stdout).toBe('');
    expect(cli(['query', log, '--since', '2999-01-01']).stdout).toBe('');
    expect(cli(['query', log, '--until', '2000-01-01']).stdout).toBe('');
    expect(cli(['query', log, '--since', 'yesterday'])).toMatchObject({
      status: 2,
      stderr: expect.stringContaining('--since needs a time'),
    });
    expect(cli(['query', log, '--outcome', 'ok']).stdout).toMatch(/#\d+ run\.exit .*exit_code=0/);
  });
});

describe('docs/audit.schema.json', () => {
  it('every line a real runner wrote validates against the schema of its event', async () => {
    type Validator = ((value: unknown) => boolean) & { errors?: unknown };
    const mod = (await import('ajv/dist/2020.js')) as unknown as {
      default: new (options: object) => { compile(schema: object): Validator };
    };
    const ajv = new mod.default({ strict: false });
    const validate = ajv.compile(JSON.parse(readFileSync(join(import.meta.dirname, '../../docs/audit.schema.json'), 'utf8')) as object);
    for (const line of lines) {
      const entry = JSON.parse(line) as unknown;
      expect({ line, ok: validate(entry), errors: validate.errors ?? null }).toMatchObject({ ok: true });
    }
    // And the schema is not a blank check: a wrong type is refused.
    expect(validate({ ...(JSON.parse(lines[0]!) as object), seq: 'one' })).toBe(false);
    expect(
      validate({ ...(JSON.parse(lines.find((l) => l.includes('"run.accept"'))!) as object), approval: { channel: 'telepathy' } }),
    ).toBe(false);
  });
});
