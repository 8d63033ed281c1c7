/**
 * @module Where a standalone runner keeps its state when nobody says: the launcher passes it to
 * the runner it starts, and `skill-mcp audit` reads that runner's log from it by default.
 */
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * `$XDG_STATE_HOME/skill-mcp`, else `~/.local/state/skill-mcp`. A uid with neither HOME nor a
 * passwd entry (a bare container uid) gets a per-uid folder in the temp dir instead of a crash;
 * tokens then survive restarts only as long as that folder does.
 */
export function defaultStateDir(env: NodeJS.ProcessEnv): string {
  if (env['XDG_STATE_HOME']) return join(env['XDG_STATE_HOME'], 'skill-mcp');
  let home = env['HOME'];
  if (!home) {
    try {
      home = homedir();
    } catch {
      return join(tmpdir(), `skill-mcp-state-${process.getuid?.() ?? 'user'}`);
    }
  }
  return join(home, '.local', 'state', 'skill-mcp');
}

/** The state directory a runner started here would use: `$SKILL_MCP_STATE_DIR`, else the default. */
export function stateDirOf(env: NodeJS.ProcessEnv): string {
  return env['SKILL_MCP_STATE_DIR'] || defaultStateDir(env);
}

/** The audit log such a runner writes: `$SKILL_MCP_AUDIT_LOG`, else `audit.log` in its state directory. */
export function auditLogOf(env: NodeJS.ProcessEnv): string {
  return env['SKILL_MCP_AUDIT_LOG'] || join(stateDirOf(env), 'audit.log');
}
