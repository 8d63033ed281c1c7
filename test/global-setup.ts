/**
 * The suite's own state (CONTRIBUTING.md, "Tests and CI"): before any test file runs, every process
 * of the suite gets a private `XDG_STATE_HOME` in a fresh temp folder, so a server or runner a test
 * starts with this process's environment keeps its state there, never in the state folder of the
 * person running the tests (who may be using skill-mcp meanwhile). The real default folders, as
 * they were before, are passed to the workers (`SKILL_MCP_TEST_REAL_STATE`, read by
 * test/state-guard.ts only), which refuses to start the product with a state folder among them.
 * The folder is removed when the run ends.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { defaultStateDir } from '../shared/state-dir.js';

/** The passwd home's default, when this uid has one (CI's unprivileged pass runs as a uid without a passwd entry). */
function passwdDefault(): string[] {
  try {
    return [join(userInfo().homedir, '.local', 'state', 'skill-mcp')];
  } catch {
    return [];
  }
}

export default function setup(): () => void {
  // vitest runs a global setup once per project (tier) in the same process: the first one decides.
  if (process.env['SKILL_MCP_TEST_REAL_STATE'] !== undefined) return () => undefined;
  const real = [
    ...new Set([
      defaultStateDir({ ...process.env, SKILL_MCP_STATE_DIR: undefined }),
      defaultStateDir({ HOME: process.env['HOME'] }, 1000),
      defaultStateDir({}, 0),
      ...passwdDefault(),
    ]),
  ];
  const own = mkdtempSync(join(tmpdir(), 'skill-mcp-suite-state-'));
  process.env['SKILL_MCP_TEST_REAL_STATE'] = JSON.stringify(real);
  process.env['XDG_STATE_HOME'] = own;
  return () => {
    try {
      rmSync(own, { recursive: true, force: true });
    } catch {
      // An installed environment (read-only folders) an ordinary uid cannot remove: left in the temp dir.
    }
  };
}
