/**
 * @module Where a runner keeps its state when nobody says: the launcher passes it to the runner it
 * starts, `skill-mcp deps install` builds environments in it, and `skill-mcp audit` reads that
 * runner's log from it by default. And whether a state folder works for a root runner: its runs
 * and installs use uids of their own, which must be able to reach the installed environments there
 * (docs/configuration.md, "The state folder").
 */
import { statSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/**
 * Root's state folder when none is configured, where daemons keep theirs. Not root's home: that is
 * 0700 on most systems, and the uids root runs scripts and installs under could not reach the
 * environments installed there.
 */
export const ROOT_STATE_DIR = '/var/lib/skill-mcp';

/**
 * `$XDG_STATE_HOME/skill-mcp`; else, for root, {@link ROOT_STATE_DIR}; else `~/.local/state/skill-mcp`.
 * A uid with neither HOME nor a passwd entry (a bare container uid) gets a per-uid folder in the
 * temp dir instead of a crash; tokens then survive restarts only as long as that folder does.
 */
export function defaultStateDir(env: NodeJS.ProcessEnv, uid: number | undefined = process.getuid?.()): string {
  if (env['XDG_STATE_HOME']) return join(env['XDG_STATE_HOME'], 'skill-mcp');
  if (uid === 0) return ROOT_STATE_DIR;
  let home = env['HOME'];
  if (!home) {
    try {
      home = homedir();
    } catch {
      return join(tmpdir(), `skill-mcp-state-${uid ?? 'user'}`);
    }
  }
  return join(home, '.local', 'state', 'skill-mcp');
}

/** The state directory a runner started here would use: `$SKILL_MCP_STATE_DIR`, else the default. */
export function stateDirOf(env: NodeJS.ProcessEnv): string {
  return env['SKILL_MCP_STATE_DIR'] || defaultStateDir(env);
}

/** Where the state folder's name came from, as a message names it. */
export function stateDirSource(env: NodeJS.ProcessEnv): string {
  if (env['SKILL_MCP_STATE_DIR']) return 'SKILL_MCP_STATE_DIR';
  if (env['XDG_STATE_HOME']) return 'XDG_STATE_HOME';
  return 'the default';
}

/** The audit log such a runner writes: `$SKILL_MCP_AUDIT_LOG`, else `audit.log` in its state directory. */
export function auditLogOf(env: NodeJS.ProcessEnv): string {
  return env['SKILL_MCP_AUDIT_LOG'] || join(stateDirOf(env), 'audit.log');
}

/** What the reach check needs of a folder: its mode and owner, or undefined when it does not exist. */
export type FolderStat = (path: string) => { mode: number; uid: number } | undefined;

const statFolder: FolderStat = (path) => {
  try {
    const st = statSync(path);
    return { mode: st.mode, uid: st.uid };
  } catch {
    return undefined;
  }
};

/**
 * The first folder on the way to `dir` (its existing ancestors) that other uids cannot traverse (no
 * `o+x`), or undefined. `dir` itself is not counted: the runner gives it its mode (runner/state.ts),
 * and so it does to ancestors it has to make. Pure over `stat`.
 */
export function untraversableOnTheWay(dir: string, stat: FolderStat = statFolder): { path: string; mode: number; uid: number } | undefined {
  const chain: string[] = [];
  for (let path = dirname(resolve(dir)); ; path = dirname(path)) {
    chain.unshift(path);
    if (path === dirname(path)) break;
  }
  for (const path of chain) {
    const st = stat(path);
    if (st === undefined) return undefined;
    if ((st.mode & 0o001) === 0) return { path, mode: st.mode & 0o7777, uid: st.uid };
  }
  return undefined;
}

/**
 * Why a root runner cannot use `dir` as its state folder, in words that name the folder and the
 * fix, or undefined. Only root is checked: an ordinary user's runs and installs run as that user,
 * who reaches their own folders. `from` is where the name came from ({@link stateDirSource}, or a
 * command-line flag).
 */
export function stateDirProblem(dir: string, from: string, asRoot: boolean, stat: FolderStat = statFolder): string | undefined {
  if (!asRoot) return undefined;
  const blocker = untraversableOnTheWay(dir, stat);
  if (blocker === undefined) return undefined;
  return (
    `the state folder ${resolve(dir)} (from ${from}) cannot be used by a root runner: ${blocker.path} is mode ${blocker.mode.toString(8).padStart(4, '0')} ` +
    `(owner uid ${blocker.uid}), so the uids that runs and \`skill-mcp deps install\` use cannot reach the environments installed there. ` +
    `Set SKILL_MCP_STATE_DIR to a folder every uid may traverse — or leave it and XDG_STATE_HOME unset: root's default is ${ROOT_STATE_DIR} — ` +
    `or, if every uid may pass through ${blocker.path}, chmod o+x ${blocker.path}.`
  );
}

/**
 * Why another uid cannot read `path` (a folder it must list and enter, or a file it must read), or
 * undefined: a folder on the way without `o+x`, or the path itself without `o+r` (and `o+x` for a
 * folder). For what a root `deps install` binds into the sandbox of its install uid. Pure over `stat`.
 */
export function unreadableByOthers(path: string, stat: FolderStat = statFolder): string | undefined {
  const blocker = untraversableOnTheWay(path, stat);
  if (blocker !== undefined) return `${blocker.path} is mode ${blocker.mode.toString(8).padStart(4, '0')} (owner uid ${blocker.uid})`;
  const st = stat(resolve(path));
  if (st === undefined) return undefined;
  const folder = (st.mode & 0o170000) === 0o040000;
  const needs = folder ? 0o005 : 0o004;
  if ((st.mode & needs) !== needs)
    return `${resolve(path)} is mode ${(st.mode & 0o7777).toString(8).padStart(4, '0')} (owner uid ${st.uid}): others may not ${folder ? 'list it' : 'read it'}`;
  return undefined;
}
