/**
 * @module Every test file's guard that the suite never touches the state folder of the person
 * running it (test/global-setup.ts): a test that starts the product as a server, or runs `deps
 * install`, with a state folder that is one of that person's real default folders fails at the
 * spawn, naming the command — instead of a check afterwards that could not tell a test's writes
 * from the person's own skill-mcp running meanwhile. Every way a test starts a process goes
 * through `node:child_process` (the SDK's stdio client too, through cross-spawn), whose functions
 * are wrapped here for this worker; the runner subcommand needs `--state-dir` anyway.
 *
 * A command run in a private mount namespace (`unshare -m …`) may use root's default
 * (/var/lib/skill-mcp): there it is the test's own folder (test/e2e/root-first-hour.test.ts).
 */
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll } from 'vitest';
import { ROOT_STATE_DIR } from '../shared/state-dir.js';
import { runFileHooks } from './file-hooks.js';

type Env = Record<string, string | undefined>;

const real = new Set((JSON.parse(process.env['SKILL_MCP_TEST_REAL_STATE'] ?? '[]') as string[]).map((p) => resolve(p)));

/** The state folder a product process started with `env` as `uid` would use (shared/state-dir.ts's rules). */
function stateOf(env: Env, uid: number | undefined): string {
  if (env['SKILL_MCP_STATE_DIR']) return resolve(env['SKILL_MCP_STATE_DIR']);
  if (env['XDG_STATE_HOME']) return resolve(env['XDG_STATE_HOME'], 'skill-mcp');
  if (uid === 0) return ROOT_STATE_DIR;
  return join(env['HOME'] || homedir(), '.local', 'state', 'skill-mcp');
}

/** Why `argv` (with `env`) would touch a real state folder, or undefined. Exported for its own test. */
export function realStateUse(argv: readonly string[], env: Env, realFolders: ReadonlySet<string> = real): string | undefined {
  const at = argv.findIndex((a) => /(^|\/)dist\/skill-mcp\.js$/.test(a));
  if (at < 0) return undefined;
  const [first, second] = [argv[at + 1], argv[at + 2]];
  const help = argv.slice(at + 1).some((a) => ['--help', '-h', '--version'].includes(a));
  // The two that write state: a server (stdio or --http; it starts its runner) and `deps install`.
  const server = (first === undefined || first.startsWith('--')) && !help;
  const install = first === 'deps' && second === 'install';
  if (!server && !install) return undefined;
  const uidFlag = argv.slice(0, at).find((a) => a.startsWith('--reuid='));
  const uid = uidFlag !== undefined ? Number(uidFlag.slice('--reuid='.length)) : process.getuid?.();
  const folder = stateOf(env, uid);
  if (!realFolders.has(folder)) return undefined;
  const privateMounts = argv.slice(0, at).some((a) => /(^|\/)unshare$/.test(a)) && argv.includes('-m') && folder === ROOT_STATE_DIR;
  if (privateMounts) return undefined;
  return `a test started \`${argv.slice(at).join(' ')}\` with the state folder ${folder}, which is the real state folder of the person running the tests: give it a private SKILL_MCP_STATE_DIR (test/e2e/harness.ts baseEnv, test/runner/harness.ts startRunner)`;
}

const cp = createRequire(import.meta.url)('node:child_process') as Record<string, (...a: unknown[]) => unknown>;

/** argv and env of a child_process call: (file, args?, options?) or (command string, options?) for the shell forms. */
function callOf(name: string, a: unknown[]): { argv: string[]; env: Env } {
  const shell = name === 'exec' || name === 'execSync';
  const args = !shell && Array.isArray(a[1]) ? (a[1] as unknown[]).map(String) : [];
  const options = (shell || !Array.isArray(a[1]) ? a[1] : a[2]) as { env?: Env } | undefined;
  const head = String(a[0]);
  const argv = shell ? head.split(/\s+/) : name === 'fork' ? [process.execPath, head, ...args] : [head, ...args];
  return { argv, env: (options && typeof options === 'object' && options.env) || (process.env as Env) };
}

type Callable = ((...a: unknown[]) => unknown) & { [promisify.custom]?: (...a: unknown[]) => unknown };

/** `fn` behind the check; its `util.promisify` form too (execFile and exec resolve to {stdout, stderr}). */
function guard(name: string, fn: Callable): Callable {
  const guarded: Callable = function (this: unknown, ...a: unknown[]): unknown {
    const { argv, env } = callOf(name, a);
    const why = realStateUse(argv, env);
    if (why !== undefined) throw new Error(why);
    return fn.apply(this, a);
  };
  const custom = fn[promisify.custom];
  if (custom) guarded[promisify.custom] = guard(name, custom);
  return guarded;
}

/** Marks the wrapped functions: a worker that runs several files (vitest `isolate: false`) wraps them once. */
const GUARDED = Symbol.for('skill-mcp.state-guard');
if (!(cp['spawn'] as Callable & { [GUARDED]?: true })[GUARDED]) {
  for (const name of ['spawn', 'spawnSync', 'execFile', 'execFileSync', 'exec', 'execSync', 'fork'])
    cp[name] = Object.assign(guard(name, cp[name] as Callable), { [GUARDED]: true });
  // ES module imports of node:child_process see the wrapped functions too.
  syncBuiltinESMExports();
}

// A worker that runs several files: each file after the first gets a temp tree of its own
// (test/suite-tmp.ts; nothing to do until a file of this worker has imported it).
(globalThis as { [key: symbol]: (() => void) | undefined })[Symbol.for('skill-mcp.suite-tmp.renew')]?.();

// After every file: the cleanups shared modules registered (test/file-hooks.ts), which an afterAll at
// their own top level would run after the first file of a worker only. Long enough to wait out a
// leftover check (test/e2e/harness.ts expectNoLeftovers polls up to 20 s).
afterAll(runFileHooks, 60_000);
