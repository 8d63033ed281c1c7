/**
 * A sandbox that could not start, told apart from a script that ran and failed
 * (runner/sandbox/start-failure.ts), on the status lines bubblewrap 0.8 writes (measured: a setup
 * failure writes `{"child-pid": …}` and no `{"exit-code": …}`, exits 1 and says why on stderr as
 * `bwrap: …`); and what the model reads of it: no host path.
 */
import { describe, expect, it } from 'vitest';
import { bubblewrapSaid, commandExitOf, runPaths, sandboxStartFailure, withoutHostPaths } from '../../runner/sandbox/start-failure.js';

const PID_LINE = '{ "child-pid": 4243, "mnt-namespace": 4026532174, "pid-namespace": 4026532175 }\n';
const SETUP_FAILED = "bwrap: Can't find source path /root/.local/state/skill-mcp/envs/ab12: Permission denied\n";
const failed = (over: Partial<Parameters<typeof bubblewrapSaid>[0]> = {}) => ({
  ending: 'exit',
  exitCode: 1,
  stderr: Buffer.from(SETUP_FAILED),
  sandboxStatus: { text: PID_LINE, ended: true },
  ...over,
});

describe('a sandbox that could not start', () => {
  it("bubblewrap's words when it exited 1 with no exit-code line", () => {
    expect(bubblewrapSaid(failed())).toBe("bwrap: Can't find source path /root/.local/state/skill-mcp/envs/ab12: Permission denied");
    expect(commandExitOf(`${PID_LINE}{ "exit-code": 3 }\n`)).toBe(3);
    expect(commandExitOf(PID_LINE)).toBeUndefined();
  });

  it("a script that forges bubblewrap's words and exits 1 is still its own exit: its exit-code line is there", () => {
    expect(bubblewrapSaid(failed({ sandboxStatus: { text: `${PID_LINE}{ "exit-code": 1 }\n`, ended: true } }))).toBeUndefined();
  });

  it('nothing is claimed that is not certain: the status cut by the drain window, a timeout or cancel, another exit code, no bwrap line, no bubblewrap', () => {
    expect(bubblewrapSaid(failed({ sandboxStatus: { text: PID_LINE, ended: false } }))).toBeUndefined();
    expect(bubblewrapSaid(failed({ ending: 'timeout' }))).toBeUndefined();
    expect(bubblewrapSaid(failed({ ending: 'cancelled', exitCode: null }))).toBeUndefined();
    expect(bubblewrapSaid(failed({ exitCode: 2 }))).toBeUndefined();
    expect(bubblewrapSaid(failed({ stderr: Buffer.from('Traceback (most recent call last):\n') }))).toBeUndefined();
    const { sandboxStatus: _none, ...bare } = failed();
    expect(bubblewrapSaid(bare)).toBeUndefined();
  });
});

describe('what the model reads of it', () => {
  const known = runPaths({
    skillCopy: '/run/skill-mcp-scratch/run-1/copy',
    workspace: '/run/skill-mcp-scratch/run-1/work',
    runFolder: '/run/skill-mcp-scratch/run-1',
    envs: [{ source: '/root/.local/state/skill-mcp/envs/ab12', mount: '/deps/python' }],
    envsDir: '/root/.local/state/skill-mcp/envs',
  });

  it('a known host folder by its name, any other by [a host path]; sandbox-side /newroot paths as the sandbox sees them', () => {
    expect(withoutHostPaths(SETUP_FAILED.trim(), known)).toBe(
      "bwrap: Can't find source path [the environment for /deps/python]: Permission denied",
    );
    expect(withoutHostPaths("bwrap: Can't mkdir /newroot/deps/python: Read-only file system", known)).toBe(
      "bwrap: Can't mkdir /deps/python: Read-only file system",
    );
    expect(withoutHostPaths('bwrap: execvp /home/ada/bin/python3: No such file or directory', known)).toBe(
      'bwrap: execvp [a host path]: No such file or directory',
    );
    expect(withoutHostPaths("bwrap: Can't find source path /root/.local/state/skill-mcp/token.key: x", known)).toBe(
      "bwrap: Can't find source path [the runner's state folder]/token.key: x",
    );
  });

  it('a known folder with a space or a colon in its name goes whole', () => {
    const odd = [{ path: '/srv/my skills:v2/pdf', name: "the run's copy of the skill" }];
    expect(withoutHostPaths("bwrap: Can't find source path /srv/my skills:v2/pdf: Permission denied", odd)).toBe(
      "bwrap: Can't find source path [the run's copy of the skill]: Permission denied",
    );
  });

  it('sandboxStartFailure gives both: the whole words for the operator, the cleaned ones for the run', () => {
    expect(sandboxStartFailure(failed(), known)).toEqual({
      hostWords: SETUP_FAILED.trim(),
      words: "bwrap: Can't find source path [the environment for /deps/python]: Permission denied",
    });
  });
});
