/**
 * The suite never touches the state folder of the person running it (test/global-setup.ts,
 * test/state-guard.ts): every worker has the suite's own XDG_STATE_HOME, and starting the product
 * as a server or `deps install` on a real state folder fails at the spawn — while the person's own
 * skill-mcp writing that folder meanwhile fails nothing.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { realStateUse } from './state-guard.js';

const REAL = new Set(['/var/lib/skill-mcp', '/home/ada/.local/state/skill-mcp']);
const BIN = '/repo/dist/skill-mcp.js';

describe("the suite's own state", () => {
  it('every worker has a private XDG_STATE_HOME in the temp folder, and knows the real folders (never its own among them)', () => {
    expect(process.env['XDG_STATE_HOME']).toMatch(new RegExp(`^${tmpdir()}/skill-mcp-suite-state-`));
    const real = JSON.parse(process.env['SKILL_MCP_TEST_REAL_STATE']!) as string[];
    expect(real.length).toBeGreaterThan(0);
    expect(real.filter((p) => p.includes('skill-mcp-suite-state-'))).toEqual([]);
  });

  it('a server or deps install on a real state folder is refused, naming the command; anything else passes', () => {
    // Started as an ordinary uid (setpriv, as the tests do as root), with that user's HOME.
    const ada = { HOME: '/home/ada' };
    const asAda = (args: string[], env: Record<string, string> = ada) =>
      realStateUse(['setpriv', '--reuid=1000', '--', 'node', BIN, ...args], env, REAL);
    expect(asAda([])).toContain('/home/ada/.local/state/skill-mcp, which is the real state folder');
    expect(asAda(['--http', '--port', '0'])).toBeDefined();
    expect(asAda(['deps', 'install', '--skill', 'pdf'])).toBeDefined();
    // A private folder, the suite's XDG_STATE_HOME, or a command that writes no state: fine.
    expect(asAda([], { ...ada, SKILL_MCP_STATE_DIR: '/tmp/x/state' })).toBeUndefined();
    expect(asAda([], { ...ada, XDG_STATE_HOME: '/tmp/suite' })).toBeUndefined();
    for (const args of [
      ['check', '.'],
      ['deps', 'list'],
      ['doctor'],
      ['--version'],
      ['--help'],
      ['--http', '--help'],
      ['runner', '--socket', 's'],
    ])
      expect(asAda(args)).toBeUndefined();
    expect(realStateUse(['python3', '-c', 'print(1)'], ada, REAL)).toBeUndefined();
  });

  it("root's default is /var/lib/skill-mcp: refused, also through setpriv to root — but allowed in a private mount namespace", () => {
    const root = (argv: string[]) => realStateUse(argv, {}, REAL);
    const asRoot = process.getuid?.() === 0;
    if (asRoot) expect(root(['node', BIN])).toContain('/var/lib/skill-mcp');
    expect(root(['setpriv', '--reuid=0', '--', 'node', BIN])).toContain('/var/lib/skill-mcp');
    expect(
      root(['unshare', '-m', '--propagation', 'private', 'sh', '-c', 'mount --bind "$0" /var/lib && exec "$@"', '/tmp/v', 'node', BIN]),
    ).toBeUndefined();
  });

  it("the worker's child_process functions are guarded: spawn and spawnSync throw before starting anything", () => {
    const real = (JSON.parse(process.env['SKILL_MCP_TEST_REAL_STATE']!) as string[])[0]!;
    const env = { PATH: '/usr/bin:/bin', SKILL_MCP_STATE_DIR: real };
    expect(() => spawn(process.execPath, ['/nowhere/dist/skill-mcp.js'], { env })).toThrow(
      /the real state folder of the person running the tests/,
    );
    expect(() => spawnSync(process.execPath, ['/nowhere/dist/skill-mcp.js', 'deps', 'install'], { env })).toThrow(/real state folder/);
  });

  it('the promisified forms keep their shape ({stdout, stderr}) and are guarded too', async () => {
    const run = promisify(execFile);
    expect(await run(process.execPath, ['-e', 'process.stdout.write("out")'])).toEqual({ stdout: 'out', stderr: '' });
    const real = (JSON.parse(process.env['SKILL_MCP_TEST_REAL_STATE']!) as string[])[0]!;
    expect(() => run(process.execPath, ['/nowhere/dist/skill-mcp.js'], { env: { SKILL_MCP_STATE_DIR: real } })).toThrow(
      /real state folder/,
    );
  });
});
