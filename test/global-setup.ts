/**
 * Fails the run if any test wrote the real default state directory of the user running the tests
 * (`~/.local/state/skill-mcp`, or under `$XDG_STATE_HOME`): every server and runner a test starts
 * must get a private state dir, HOME and TMPDIR. A child spawned without HOME falls back to the
 * passwd home, so that one is watched too. (Running `skill-mcp` by hand during a test run also
 * counts as a write.)
 */
import { readdirSync, statSync, type Stats } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { defaultStateDir } from '../shared/state-dir.js';

function listing(dir: string): string[] {
  const out: string[] = [];
  const walk = (path: string): void => {
    let stat: Stats;
    try {
      stat = statSync(path);
    } catch {
      return; // absent: an empty listing
    }
    if (!stat.isDirectory()) {
      out.push(`${path} ${stat.size} ${stat.mtimeMs}`);
      return;
    }
    out.push(`${path}/`);
    for (const name of readdirSync(path)) walk(join(path, name));
  };
  walk(dir);
  return out;
}

/** The passwd home, when this uid has one (CI's unprivileged pass runs as a uid without a passwd entry). */
function passwdHome(): string[] {
  try {
    return [join(userInfo().homedir, '.local', 'state', 'skill-mcp')];
  } catch {
    return [];
  }
}

export default function setup(): () => void {
  const watched = [...new Set([defaultStateDir({ ...process.env, SKILL_MCP_STATE_DIR: undefined }), ...passwdHome()])];
  const before = new Map(watched.map((dir) => [dir, listing(dir)]));
  return () => {
    const changed: string[] = [];
    for (const [dir, was] of before) {
      const now = listing(dir);
      const added = now.filter((l) => !was.includes(l));
      const removed = was.filter((l) => !now.includes(l));
      if (added.length + removed.length > 0)
        changed.push(`${dir}:\n${[...added.map((l) => `  + ${l}`), ...removed.map((l) => `  - ${l}`)].join('\n')}`);
    }
    if (changed.length > 0) {
      // vitest reports an error thrown here but still exits 0: set the status ourselves.
      process.stderr.write(
        `\nFAIL: a test wrote the real state directory (give every server and runner a private SKILL_MCP_STATE_DIR, HOME and TMPDIR):\n${changed.join('\n')}\n`,
      );
      process.exitCode = 1;
    }
  };
}
