/**
 * @module Each test file's own temp tree, `SUITE_TMP` (re-exported by test/e2e/harness.ts), also
 * where one worker runs several files (vitest `isolate: false`): modules are then shared between
 * those files, so a tree made once at import would be shared too, and the first file's
 * `expectNoLeftovers` would remove it under the next. test/state-guard.ts (a setup file, run before
 * every file) calls the renewal this module installs, so every file after the first in a worker gets
 * a fresh tree; a tree the previous file left empty is removed.
 *
 * Mode 0755, like every folder a test serves from: started as root, the standalone front drops
 * to uid 61183 and must be able to read the skill roots and reach its runner's socket folder.
 */
import { chmodSync, mkdtempSync, rmdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function make(): string {
  const dir = mkdtempSync(join(tmpdir(), 'skill-mcp-e2e-'));
  chmodSync(dir, 0o755);
  return dir;
}

/** This test file's own temp tree (a live binding: renewed between files that share a worker). */
export let SUITE_TMP = make();

/**
 * The per-file renewal, under a global symbol: the setup file finds it there without importing this
 * module (an import would make a tree for every file, those of files that never use one too).
 */
(globalThis as { [key: symbol]: () => void })[Symbol.for('skill-mcp.suite-tmp.renew')] = () => {
  try {
    rmdirSync(SUITE_TMP);
  } catch {
    // not empty (the file kept what it made, as a file without expectNoLeftovers does) or already removed
  }
  SUITE_TMP = make();
};
