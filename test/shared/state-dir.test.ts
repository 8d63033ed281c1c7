/**
 * Where a runner keeps its state when nobody says, and whether a root runner can use a state
 * folder (shared/state-dir.ts): root's default is /var/lib/skill-mcp, never its 0700 home, and a
 * configured folder the run uids cannot reach is named with the folder that stops them and the fix.
 */
import { describe, expect, it } from 'vitest';
import {
  defaultStateDir,
  ROOT_STATE_DIR,
  stateDirProblem,
  stateDirSource,
  unreadableByOthers,
  untraversableOnTheWay,
} from '../../shared/state-dir.js';
import type { FolderStat } from '../../shared/state-dir.js';

const DIR = 0o040000;
const FILE = 0o100000;
/** A file system of folders and files by path: mode bits and owner. */
function fs(entries: Record<string, [number, number]>): FolderStat {
  return (path) => {
    const e = entries[path];
    return e ? { mode: e[0], uid: e[1] } : undefined;
  };
}
const ROOT_HOME = fs({
  '/': [DIR | 0o755, 0],
  '/root': [DIR | 0o700, 0],
  '/root/.local': [DIR | 0o755, 0],
  '/var': [DIR | 0o755, 0],
  '/var/lib': [DIR | 0o755, 0],
  '/srv': [DIR | 0o755, 0],
  '/srv/pypi': [DIR | 0o750, 0],
  '/srv/pypi/simple': [DIR | 0o755, 0],
  '/srv/open': [DIR | 0o755, 0],
  '/srv/open/cert.pem': [FILE | 0o600, 0],
  '/srv/open/files': [DIR | 0o755, 0],
});

describe('the default state folder', () => {
  it("root's is /var/lib/skill-mcp, not ~/.local/state inside its 0700 home (HOME set or not)", () => {
    expect(defaultStateDir({ HOME: '/root' }, 0)).toBe(ROOT_STATE_DIR);
    expect(defaultStateDir({}, 0)).toBe('/var/lib/skill-mcp');
  });

  it("an ordinary user's is under their home, or $XDG_STATE_HOME", () => {
    expect(defaultStateDir({ HOME: '/home/ada' }, 1000)).toBe('/home/ada/.local/state/skill-mcp');
    expect(defaultStateDir({ HOME: '/home/ada', XDG_STATE_HOME: '/home/ada/st' }, 1000)).toBe('/home/ada/st/skill-mcp');
  });

  it('XDG_STATE_HOME counts as configured for root too (and is then checked), and messages name where the folder came from', () => {
    expect(defaultStateDir({ XDG_STATE_HOME: '/root/.local/state' }, 0)).toBe('/root/.local/state/skill-mcp');
    expect(stateDirSource({ SKILL_MCP_STATE_DIR: '/x', XDG_STATE_HOME: '/y' })).toBe('SKILL_MCP_STATE_DIR');
    expect(stateDirSource({ XDG_STATE_HOME: '/y' })).toBe('XDG_STATE_HOME');
    expect(stateDirSource({ HOME: '/root' })).toBe('the default');
  });
});

describe('a state folder the run uids cannot reach, by the folder that stops them', () => {
  it("a folder under root's 0700 home: named, with its mode and the fix", () => {
    const problem = stateDirProblem('/root/.local/state/skill-mcp', 'XDG_STATE_HOME', true, ROOT_HOME);
    expect(problem).toContain('the state folder /root/.local/state/skill-mcp (from XDG_STATE_HOME) cannot be used by a root runner');
    expect(problem).toContain('/root is mode 0700 (owner uid 0)');
    expect(problem).toContain("root's default is /var/lib/skill-mcp");
    expect(problem).toContain('chmod o+x /root');
  });

  it('the default and an open folder pass; folders not made yet are not held against it (the runner makes them traversable)', () => {
    expect(stateDirProblem('/var/lib/skill-mcp', 'the default', true, ROOT_HOME)).toBeUndefined();
    expect(stateDirProblem('/srv/open/not/made/yet/state', 'SKILL_MCP_STATE_DIR', true, ROOT_HOME)).toBeUndefined();
  });

  it('the state folder itself is not counted: the runner gives it its own mode (0711 as root)', () => {
    expect(untraversableOnTheWay('/root', ROOT_HOME)).toBeUndefined();
    expect(untraversableOnTheWay('/root/x', ROOT_HOME)).toEqual({ path: '/root', mode: 0o700, uid: 0 });
  });

  it('an ordinary user is never refused: their runs and installs run as themselves', () => {
    expect(stateDirProblem('/root/.local/state/skill-mcp', 'the default', false, ROOT_HOME)).toBeUndefined();
  });
});

describe('what a root install binds for its install uid', () => {
  it('a folder on the way without o+x, a folder without o+r, a file without o+r: each named', () => {
    expect(unreadableByOthers('/root/mirror/simple', ROOT_HOME)).toBe('/root is mode 0700 (owner uid 0)');
    expect(unreadableByOthers('/srv/pypi/simple', ROOT_HOME)).toBe('/srv/pypi is mode 0750 (owner uid 0)');
    expect(unreadableByOthers('/srv/open/cert.pem', ROOT_HOME)).toBe(
      '/srv/open/cert.pem is mode 0600 (owner uid 0): others may not read it',
    );
    expect(unreadableByOthers('/srv/open/files', ROOT_HOME)).toBeUndefined();
  });
});
