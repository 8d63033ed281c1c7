/**
 * Where a secret's value comes from (issue 30, docs/secrets.md "Values"), against what would hand a
 * run the wrong value or leak one: a file others may read or write (0644, 0640, another owner, a
 * second hard link), a link planted where the value or a person's folder should be, a FIFO, a
 * value too short to redact or spanning lines, a subject that names another folder (`/`, `..`),
 * one person's run falling back to the operator's value the operator did not share — and every
 * refusal said without the value and without a host path. Real files in a temp folder.
 */
import { chmodSync, chownSync, linkSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isRoot } from '../levels.js';
import { checkSecretValue, readSecretValue, subjectFolder } from '../../runner/secrets/source.js';
import { makePlaceholder, PLACEHOLDER_PATTERN } from '../../runner/secrets/placeholder.js';
import { planSecrets } from '../../runner/secrets/plan.js';
import { planEgress } from '../../runner/egress/plan.js';
import { ANY_CALLER } from '../../shared/grant.js';

const VALUE = 'tok-0123456789abcdef';

function folder(): string {
  return mkdtempSync(join(tmpdir(), 'skill-mcp-secrets-'));
}

function put(dir: string, rel: string, text: string, mode = 0o600): string {
  const path = join(dir, rel);
  mkdirSync(join(path, '..'), { recursive: true, mode: 0o700 });
  writeFileSync(path, text, { mode });
  chmodSync(path, mode);
  return path;
}

/** A refusal's reason, checked to name neither the value nor the folder's host path. */
function refusedWhy(result: ReturnType<typeof readSecretValue>, dir?: string): string {
  expect(result.ok, JSON.stringify(result)).toBe(false);
  const why = (result as { why: string }).why;
  expect(why).not.toContain(VALUE);
  if (dir !== undefined) expect(why).not.toContain(dir);
  return why;
}

describe('a value is one line of visible ASCII, 8 to 8192 bytes', () => {
  it.each([
    ['a trailing LF is stripped', `${VALUE}\n`, VALUE],
    ['a trailing CRLF is stripped', `${VALUE}\r\n`, VALUE],
    ['exactly 8 bytes', '12345678', '12345678'],
  ])('%s', (_name, raw, value) => {
    expect(checkSecretValue(Buffer.from(raw))).toEqual({ ok: true, value });
  });

  it.each([
    ['too short to redact', '1234567', 'shorter than the 8'],
    ['empty', '\n', 'is 0 bytes'],
    ['two lines', `${VALUE}\n${VALUE}\n`, 'more than one line'],
    ['a CR inside', `${VALUE}\rX-Injected: 1`, 'more than one line'],
    ['a space', 'tok 0123456789', 'not visible ASCII'],
    ['a tab', 'tok\t0123456789', 'not visible ASCII'],
    ['non-ASCII', 'tök-0123456789', 'not visible ASCII'],
    ['a NUL', 'tok-0123\x00456789', 'not visible ASCII'],
    ['over 8192 bytes', 'x'.repeat(8193), 'over 8192 bytes'],
  ])('refused: %s', (_name, raw, text) => {
    const checked = checkSecretValue(Buffer.from(raw));
    expect(checked.ok).toBe(false);
    expect((checked as { why: string }).why).toContain(text);
  });
});

describe("standalone: the runner's environment or SKILL_MCP_SECRETS_DIR/<NAME>", () => {
  it("reads SKILL_MCP_SECRET_<NAME> from the runner's private environment", () => {
    expect(readSecretValue({ SKILL_MCP_SECRET_API_TOKEN: VALUE }, 'API_TOKEN', undefined)).toEqual({ ok: true, value: VALUE });
  });

  it("a bad variable value is refused with the variable's name, never the value", () => {
    expect(refusedWhy(readSecretValue({ SKILL_MCP_SECRET_API_TOKEN: 'short' }, 'API_TOKEN', undefined))).toContain(
      'SKILL_MCP_SECRET_API_TOKEN: the value is 5 bytes',
    );
  });

  it("reads the file SKILL_MCP_SECRETS_DIR/<NAME> (0600, owned by the runner's user)", () => {
    const dir = folder();
    put(dir, 'API_TOKEN', `${VALUE}\n`);
    expect(readSecretValue({ SKILL_MCP_SECRETS_DIR: dir }, 'API_TOKEN', undefined)).toEqual({ ok: true, value: VALUE });
  });

  it('missing everywhere: says which sources were looked at, by variable name only', () => {
    const dir = folder();
    const why = refusedWhy(readSecretValue({ SKILL_MCP_SECRETS_DIR: dir }, 'API_TOKEN', undefined), dir);
    expect(why).toContain('SKILL_MCP_SECRET_API_TOKEN is not set and SKILL_MCP_SECRETS_DIR/API_TOKEN does not exist');
    expect(refusedWhy(readSecretValue({}, 'API_TOKEN', undefined))).toContain(
      'SKILL_MCP_SECRET_API_TOKEN is not set (and SKILL_MCP_SECRETS_DIR is not set)',
    );
  });

  it.each([0o644, 0o640, 0o604, 0o660])('a file with mode %o is refused (others could read or write it)', (mode) => {
    const dir = folder();
    put(dir, 'API_TOKEN', VALUE, mode);
    expect(refusedWhy(readSecretValue({ SKILL_MCP_SECRETS_DIR: dir }, 'API_TOKEN', undefined), dir)).toContain(
      'must be readable by its owner only (chmod 600)',
    );
  });

  it.skipIf(!isRoot)('a file owned by another user is refused (root chowns it in the test)', () => {
    const dir = folder();
    chownSync(put(dir, 'API_TOKEN', VALUE), 40213, 40213);
    expect(refusedWhy(readSecretValue({ SKILL_MCP_SECRETS_DIR: dir }, 'API_TOKEN', undefined), dir)).toContain(
      "is owned by uid 40213, not by the runner's user",
    );
  });

  it("a symlink at the value's name is refused, even to a good file", () => {
    const dir = folder();
    const real = put(folder(), 'real', VALUE);
    symlinkSync(real, join(dir, 'API_TOKEN'));
    expect(refusedWhy(readSecretValue({ SKILL_MCP_SECRETS_DIR: dir }, 'API_TOKEN', undefined), dir)).toContain(
      'values are never read through links',
    );
  });

  it('a second hard link to the file is refused', () => {
    const dir = folder();
    const path = put(dir, 'API_TOKEN', VALUE);
    linkSync(path, join(dir, 'copy'));
    expect(refusedWhy(readSecretValue({ SKILL_MCP_SECRETS_DIR: dir }, 'API_TOKEN', undefined), dir)).toContain('has 2 hard links');
  });

  it("a FIFO at the value's name is refused without hanging the runner", () => {
    const dir = folder();
    execFileSync('mkfifo', ['-m', '0600', join(dir, 'API_TOKEN')]);
    expect(refusedWhy(readSecretValue({ SKILL_MCP_SECRETS_DIR: dir }, 'API_TOKEN', undefined), dir)).toContain('is not a regular file');
  });

  it("a folder at the value's name is refused", () => {
    const dir = folder();
    mkdirSync(join(dir, 'API_TOKEN'), { mode: 0o700 });
    expect(refusedWhy(readSecretValue({ SKILL_MCP_SECRETS_DIR: dir }, 'API_TOKEN', undefined), dir)).toContain('API_TOKEN');
  });

  it('a too-short file value is refused', () => {
    const dir = folder();
    put(dir, 'API_TOKEN', 'abc\n');
    expect(refusedWhy(readSecretValue({ SKILL_MCP_SECRETS_DIR: dir }, 'API_TOKEN', undefined), dir)).toContain(
      'SKILL_MCP_SECRETS_DIR/API_TOKEN: the value is 3 bytes',
    );
  });
});

describe('hosted with verified identities: a value per subject', () => {
  it('two subjects get their own values', () => {
    const dir = folder();
    put(dir, 'alice@example.com/API_TOKEN', 'alice-value-0001\n');
    put(dir, 'bob/API_TOKEN', 'bob-value-000002\n');
    expect(readSecretValue({ SKILL_MCP_SECRETS_DIR: dir }, 'API_TOKEN', 'alice@example.com')).toEqual({
      ok: true,
      value: 'alice-value-0001',
    });
    expect(readSecretValue({ SKILL_MCP_SECRETS_DIR: dir }, 'API_TOKEN', 'bob')).toEqual({ ok: true, value: 'bob-value-000002' });
  });

  it("the operator's value is not used for a subject unless SKILL_MCP_SECRETS_SHARED lists the name", () => {
    const dir = folder();
    put(dir, 'API_TOKEN', VALUE);
    const env = { SKILL_MCP_SECRETS_DIR: dir, SKILL_MCP_SECRET_OTHER: VALUE };
    const why = refusedWhy(readSecretValue(env, 'API_TOKEN', 'carol'), dir);
    expect(why).toContain('SKILL_MCP_SECRETS_DIR/carol/API_TOKEN (your own value) does not exist');
    expect(why).toContain('not in SKILL_MCP_SECRETS_SHARED');
    expect(refusedWhy(readSecretValue(env, 'OTHER', 'carol'), dir)).toContain('not in SKILL_MCP_SECRETS_SHARED');
  });

  it("a listed name falls back to the operator's value (variable or file) only when the subject has none", () => {
    const dir = folder();
    put(dir, 'API_TOKEN', VALUE);
    put(dir, 'alice/API_TOKEN', 'alice-value-0001');
    const env = { SKILL_MCP_SECRETS_DIR: dir, SKILL_MCP_SECRETS_SHARED: 'API_TOKEN, OTHER', SKILL_MCP_SECRET_OTHER: 'other-shared-01' };
    expect(readSecretValue(env, 'API_TOKEN', 'carol')).toEqual({ ok: true, value: VALUE });
    expect(readSecretValue(env, 'OTHER', 'carol')).toEqual({ ok: true, value: 'other-shared-01' });
    expect(readSecretValue(env, 'API_TOKEN', 'alice')).toEqual({ ok: true, value: 'alice-value-0001' });
  });

  it('a bad own value is refused, not replaced by the shared one', () => {
    const dir = folder();
    put(dir, 'API_TOKEN', VALUE);
    put(dir, 'alice/API_TOKEN', 'alice-value-0001', 0o644);
    expect(
      refusedWhy(readSecretValue({ SKILL_MCP_SECRETS_DIR: dir, SKILL_MCP_SECRETS_SHARED: 'API_TOKEN' }, 'API_TOKEN', 'alice'), dir),
    ).toContain('SKILL_MCP_SECRETS_DIR/alice/API_TOKEN has mode 0644');
  });

  it("a person's folder swapped for a link (to another person's folder) is refused", () => {
    const dir = folder();
    put(dir, 'bob/API_TOKEN', 'bob-value-000002');
    symlinkSync(join(dir, 'bob'), join(dir, 'mallory'));
    expect(refusedWhy(readSecretValue({ SKILL_MCP_SECRETS_DIR: dir }, 'API_TOKEN', 'mallory'), dir)).toContain(
      'values are never read through links',
    );
  });

  it('a subject spelling another folder reaches only its own encoded one', () => {
    const dir = folder();
    put(dir, 'API_TOKEN', VALUE);
    put(dir, 'bob/API_TOKEN', 'bob-value-000002');
    for (const subject of ['..', '.', 'bob/..', '../bob', '/bob', 'bob/', '']) {
      const result = readSecretValue({ SKILL_MCP_SECRETS_DIR: dir }, 'API_TOKEN', subject);
      expect(result.ok, subject).toBe(false);
    }
  });
});

describe('a subject becomes one folder name', () => {
  it.each([
    ['alice@example.com', 'alice@example.com'],
    ['auth0|1234', 'auth0%7C1234'],
    ['a/b', 'a%2Fb'],
    ['..', '%2E.'],
    ['.', '%2E'],
    ['.hidden', '%2Ehidden'],
    ['100%', '100%25'],
    ['nul\0byte', 'nul%00byte'],
    ['Zoë', 'Zo%C3%AB'],
    ['a b', 'a%20b'],
  ])('%j → %j', (subject, encoded) => {
    expect(subjectFolder(subject)).toBe(encoded);
  });

  it('is never empty, ".", ".." or holds "/" or NUL; too long for a folder name is undefined', () => {
    expect(subjectFolder('')).toBeUndefined();
    expect(subjectFolder('x'.repeat(255))).toBe('x'.repeat(255));
    expect(subjectFolder('x'.repeat(256))).toBeUndefined();
    expect(subjectFolder('/'.repeat(86))).toBeUndefined();
  });

  it('two subjects never share a folder (the encoding is reversible)', () => {
    const subjects = ['a%2Fb', 'a/b', '%2E.', '..', '.x', '%2Ex', 'A', 'a'];
    const folders = subjects.map(subjectFolder);
    expect(new Set(folders).size).toBe(subjects.length);
  });
});

describe('placeholders', () => {
  it('have one fixed shape and are fresh each time', () => {
    const seen = new Set(Array.from({ length: 100 }, makePlaceholder));
    expect(seen.size).toBe(100);
    for (const p of seen) expect(p).toMatch(PLACEHOLDER_PATTERN);
  });
});

describe("a run's secrets plan", () => {
  const granted = [{ name: 'API_TOKEN', hosts: ['api.example.com'], header: 'Authorization', format: 'Bearer {value}' }];
  const proxied = planEgress('namespace', true, true, ['api.example.com']);

  it('binds the value with a fresh placeholder and adds the value to what redaction searches for', () => {
    const plan = planSecrets({
      env: { SKILL_MCP_SECRET_API_TOKEN: VALUE },
      caller: undefined,
      granted,
      egress: proxied,
      isolation: 'namespace',
      what: 's/call.py',
    });
    expect(plan).toMatchObject({
      ok: true,
      bindings: [{ name: 'API_TOKEN', hosts: ['api.example.com'], header: 'Authorization', format: 'Bearer {value}', value: VALUE }],
      redact: [{ name: 'API_TOKEN', value: VALUE }],
    });
    const again = planSecrets({
      env: { SKILL_MCP_SECRET_API_TOKEN: VALUE },
      caller: undefined,
      granted,
      egress: proxied,
      isolation: 'namespace',
      what: 's/call.py',
    });
    expect((plan as { bindings: { placeholder: string }[] }).bindings[0]!.placeholder).not.toBe(
      (again as { bindings: { placeholder: string }[] }).bindings[0]!.placeholder,
    );
  });

  it('no value: SECRET_MISSING naming the secret', () => {
    const plan = planSecrets({ env: {}, caller: undefined, granted, egress: proxied, isolation: 'namespace', what: 's/call.py' });
    expect(plan).toMatchObject({ ok: false, code: 'SECRET_MISSING', message: expect.stringContaining('needs the secret API_TOKEN') });
  });

  it.each([
    ['uid-sandbox', planEgress('uid-sandbox', false, true, ['api.example.com'])],
    ['uid', planEgress('uid', false, true, ['api.example.com'])],
    ['same-uid', planEgress('same-uid', false, true, ['api.example.com'])],
    ['namespace without a bridge node', planEgress('namespace', true, false, ['api.example.com'])],
  ] as const)('at %s (no run proxy) a script with secrets is unavailable, with the value set or not', (level, egress) => {
    const isolation = level.split(' ')[0] as 'uid-sandbox';
    const plan = planSecrets({
      env: { SKILL_MCP_SECRET_API_TOKEN: VALUE },
      caller: undefined,
      granted,
      egress,
      isolation,
      what: 's/call.py',
    });
    expect(plan).toMatchObject({ ok: false, code: 'SANDBOX_UNAVAILABLE', reason: 'secrets-unavailable' });
    expect((plan as { message: string }).message).toContain('The value is never handed to the script instead');
    expect(JSON.stringify(plan)).not.toContain(VALUE);
  });

  it('for "any caller" (skill_list) no value is read', () => {
    expect(planSecrets({ env: {}, caller: ANY_CALLER, granted, egress: proxied, isolation: 'namespace', what: 's/call.py' })).toEqual({
      ok: true,
      bindings: [],
      redact: [],
    });
  });
});
