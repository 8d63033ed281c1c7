/**
 * An environment against its manifest (runner/deps/verify.ts): every kind of change after the
 * install is seen — an edited file of the same size, a file added, removed, re-permissioned, a link
 * pointed elsewhere, a manifest naming another environment — and an untouched one passes.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hashFile, linkStaysInside, MANIFEST_FILE, walkEnv } from '../../runner/deps/manifest.js';
import { EnvVerifier } from '../../runner/deps/verify.js';

const DIGEST = 'a'.repeat(64);
let dir: string;

async function seal(): Promise<void> {
  const entries = [];
  for (const e of walkEnv(dir))
    entries.push({
      path: e.path,
      type: e.type,
      mode: e.mode,
      ...(e.type === 'file' ? { size: e.size, sha256: await hashFile(e.abs) } : {}),
      ...(e.type === 'link' ? { target: e.target } : {}),
    });
  writeFileSync(
    join(dir, MANIFEST_FILE),
    JSON.stringify({
      version: 1,
      digest: DIGEST,
      kind: 'python',
      interpreter: '',
      builtAt: '',
      index: [],
      resolved: '',
      sourceBuilds: false,
      entries,
    }),
  );
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'skill-mcp-deps-verify-'));
  mkdirSync(join(dir, 'site', 'pkg'), { recursive: true });
  writeFileSync(join(dir, 'site', 'pkg', '__init__.py'), 'VALUE = "good"\n');
  symlinkSync('__init__.py', join(dir, 'site', 'pkg', 'alias.py'));
  await seal();
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('the environment check', () => {
  it('passes an untouched environment, and again from its memory', async () => {
    const verifier = new EnvVerifier();
    expect(await verifier.verify(dir, DIGEST)).toMatchObject({ ok: true, hashed: 1 });
    expect(await verifier.verify(dir, DIGEST)).toMatchObject({ ok: true });
  });

  it('attack: each change after the install is refused as tampered, naming the entry', async () => {
    const verifier = new EnvVerifier();
    await verifier.verify(dir, DIGEST);
    const cases: [string, () => void, string][] = [
      [
        'same-size edit',
        () => writeFileSync(join(dir, 'site', 'pkg', '__init__.py'), 'VALUE = "evil"\n'),
        'site/pkg/__init__.py was changed after the install',
      ],
      ['added', () => writeFileSync(join(dir, 'site', 'sitecustomize.py'), 'x'), 'site/sitecustomize.py was added'],
      ['removed', () => unlinkSync(join(dir, 'site', 'pkg', 'alias.py')), 'site/pkg/alias.py was removed'],
      ['re-permissioned', () => chmodSync(join(dir, 'site'), 0o777), 'site changed permissions'],
      [
        'relinked',
        () => {
          unlinkSync(join(dir, 'site', 'pkg', 'alias.py'));
          symlinkSync('/etc/passwd', join(dir, 'site', 'pkg', 'alias.py'));
        },
        'site/pkg/alias.py points elsewhere',
      ],
    ];
    for (const [name, change, why] of cases) {
      change();
      const verdict = await verifier.verify(dir, DIGEST);
      expect(verdict, name).toMatchObject({ ok: false, state: 'tampered', why: expect.stringContaining(why) });
      // Put it back and seal again for the next case.
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(join(dir, 'site', 'pkg'), { recursive: true });
      writeFileSync(join(dir, 'site', 'pkg', '__init__.py'), 'VALUE = "good"\n');
      symlinkSync('__init__.py', join(dir, 'site', 'pkg', 'alias.py'));
      await seal();
    }
  });

  it('attack: a name that is not valid UTF-8 is named (escaped) and refused, at install and when added after; never read as a real U+FFFD name', async () => {
    // Read as text, b'bad\xff' beside a real 'bad\ufffd' gave two entries for the second (the first never sealed).
    writeFileSync(join(dir, 'site', 'bad\ufffd.py'), 'real = 1\n');
    const odd = Buffer.concat([Buffer.from(`${dir}/site/bad`), Buffer.from([0xff]), Buffer.from('.py')]);
    writeFileSync(odd, 'odd = 1\n');
    expect(() => walkEnv(dir)).toThrow('site/bad\\xff.py has a name that is not valid UTF-8, which a manifest cannot record');
    // Added after the install (sealed without it): tampered, naming it escaped.
    unlinkSync(odd);
    await seal();
    writeFileSync(odd, 'odd = 1\n');
    expect(await new EnvVerifier().verify(dir, DIGEST)).toMatchObject({
      ok: false,
      state: 'tampered',
      why: expect.stringContaining('site/bad\\xff.py has a name that is not valid UTF-8'),
    });
  });

  it('a missing environment is missing; a manifest for another digest is tampered', async () => {
    expect(await new EnvVerifier().verify(join(dir, 'nope'), DIGEST)).toMatchObject({ ok: false, state: 'missing' });
    expect(await new EnvVerifier().verify(dir, 'b'.repeat(64))).toMatchObject({
      ok: false,
      state: 'tampered',
      why: expect.stringContaining('another environment'),
    });
  });

  it('a link may only point inside the environment', () => {
    expect(linkStaysInside('site/pkg/a.py', '__init__.py')).toBe(true);
    expect(linkStaysInside('site/pkg/a.py', '../other/x.py')).toBe(true);
    expect(linkStaysInside('site/pkg/a.py', '../../../etc/passwd')).toBe(false);
    expect(linkStaysInside('site/a.py', '/etc/passwd')).toBe(false);
  });
});
