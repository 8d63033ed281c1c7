/**
 * The script environment allowlist and the standalone warning built from it: the warning names
 * only variables whose values really leave (set and granted), never an unset one.
 */
import { describe, expect, it } from 'vitest';
import { isNeverGrantable, parseDeclaration } from '../../shared/declaration.js';
import { buildScriptEnv, selfGrantWarning } from '../../shared/env.js';
import { sandboxPwd } from '../../runner/sandbox/bwrap.js';

describe('buildScriptEnv', () => {
  it('passes set granted variables, lists unset ones in notSet, and never lets a grant reach a fixed name', () => {
    const built = buildScriptEnv({ PATH: '/bin', A_KEY: 'a', B_KEY: 'b', SECRET: 'no' }, ['B_KEY', 'A_KEY', 'UNSET', 'PATH'], {
      HOME: '(private)',
    });
    expect(built.names).toEqual(['A_KEY', 'B_KEY', 'HOME', 'PATH']);
    expect(built.passed).toEqual(['A_KEY', 'B_KEY']);
    expect(built.notSet).toEqual(['UNSET']);
    expect(built.env['SECRET']).toBeUndefined();
  });
});

describe("PWD: the runner's to set", () => {
  it.each(['PWD', 'OLDPWD'])(
    'attack: a declaration asking for %s (a host path, or a place the script is not) has it dropped as never grantable',
    (name) => {
      expect(isNeverGrantable(name)).toBe(true);
      const parsed = parseDeclaration({ version: 1, run: [{ script: 'a.py', interpreter: 'python3', env: [name, 'OK_VAR'] }] } as never);
      expect(parsed.declaration?.run[0]?.env).toEqual(['OK_VAR']);
      expect(parsed.problems).toEqual([`variables that can never be granted were dropped: mcp-host.run[0].env ${name}`]);
    },
  );

  it("is never taken from the host: only bubblewrap's /work, set by the runner at the bubblewrap levels", () => {
    expect(buildScriptEnv({ PATH: '/bin', PWD: '/home/someone/private', OLDPWD: '/root' }, []).names).toEqual(['PATH']);
    expect(sandboxPwd(true)).toEqual({ PWD: '/work' });
    expect(sandboxPwd(false)).toEqual({});
  });
});

describe('envWarning (standalone self-grant)', () => {
  it('does not claim an unset variable will be received: it names only the passed ones', () => {
    const built = buildScriptEnv({ SET_ONE: 'x' }, ['SET_ONE', 'NOT_SET']);
    const warning = selfGrantWarning(built.passed);
    expect(warning).toContain('SET_ONE');
    expect(warning).not.toContain('NOT_SET');
  });

  it('is omitted when every granted variable is unset', () => {
    const built = buildScriptEnv({}, ['NOT_SET']);
    expect(built.notSet).toEqual(['NOT_SET']);
    expect(selfGrantWarning(built.passed)).toBeUndefined();
  });

  it('never contains a value', () => {
    expect(selfGrantWarning(buildScriptEnv({ K: 'value-must-not-appear' }, ['K']).passed)).not.toContain('value-must-not-appear');
  });
});
