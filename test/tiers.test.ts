/**
 * The CI tiers cover the suite: every test file is in exactly one of unit, front, level and uid, and
 * the Node-sensitive list names only files of the other three (unit already runs on every Node).
 * And the shared test modules the tiers' workers evaluate once (vitest `isolate: false`) register no
 * hook at their top level: it would run for a worker's first file only (test/file-hooks.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, test } from 'vitest';
import { TIERS } from './tiers.mjs';

const here = new URL('.', import.meta.url).pathname;

function testFiles(dir: string, shared = false): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'fixtures' ? [] : testFiles(path, shared);
    const isTest = entry.name.endsWith('.test.ts');
    return (shared ? !isTest && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') : isTest) ? [relative(here, path)] : [];
  });
}

describe('the CI tiers (test/tiers.mjs)', () => {
  const onDisk = testFiles(here).sort();
  const tiered = [...TIERS.unit, ...TIERS.front, ...TIERS.level, ...TIERS.uid];

  test('every test file on disk is in a tier', () => {
    expect(onDisk.filter((f) => !tiered.includes(f))).toEqual([]);
  });

  test('no file is in two tiers, and every listed file exists', () => {
    expect(tiered.filter((f, i) => tiered.indexOf(f) !== i)).toEqual([]);
    expect(tiered.filter((f) => !onDisk.includes(f))).toEqual([]);
  });

  test('the Node-sensitive list holds only front, level and uid files', () => {
    expect(TIERS.node.filter((f) => !TIERS.front.includes(f) && !TIERS.level.includes(f) && !TIERS.uid.includes(f))).toEqual([]);
  });
});

describe('shared test modules (evaluated once per worker)', () => {
  // The setup files are run before every file, so theirs are per file already.
  const setupFiles = ['expect-env.ts', 'state-guard.ts', 'global-setup.ts'];

  test('register no vitest hook at their top level: a cleanup goes through afterEachFile (test/file-hooks.ts)', () => {
    const shared = testFiles(here, true).filter((f) => !setupFiles.includes(f));
    expect(shared.length).toBeGreaterThan(10);
    const hooked = shared.filter((f) => /^(afterAll|beforeAll|afterEach|beforeEach)\(/m.test(readFileSync(join(here, f), 'utf8')));
    expect(hooked).toEqual([]);
  });
});
