/**
 * `skill-mcp audit` as an operator meets it: the default log is the one the standalone runner
 * writes, help is an answer (stdout, exit 0), `tail` cannot be made to forge lines by the names a
 * peer sends, and `verify` reports a run whose result was lost (and, apart, one still running).
 */
import { randomBytes } from 'node:crypto';
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, REPO, awaitAuditLine, prepareAndRun, startRunner, tempDir, uidRange, writeSkills } from './harness.js';
import type { RunnerHandle } from './harness.js';

const started: RunnerHandle[] = [];
afterEach(async () => {
  for (const r of started.splice(0)) await r.stop();
});

/**
 * An ordinary user's default state folder is under their home; root's is /var/lib/skill-mcp
 * (shared/state-dir.ts, test/e2e/root-first-hour.test.ts). The tests of the home default run as an
 * ordinary uid, whoever runs them.
 */
const USER_UID = 40151;
const asUser = process.getuid?.() === 0 ? ['setpriv', `--reuid=${USER_UID}`, `--regid=${USER_UID}`, '--clear-groups', '--'] : [];
function userHome(): string {
  const home = tempDir('home');
  if (asUser.length > 0) chownSync(home, USER_UID, USER_UID);
  return home;
}

function cli(
  args: string[],
  env: Record<string, string> = {},
  prefix: string[] = [],
): { status: number | null; stdout: string; stderr: string } {
  const [command, ...argv] = [...prefix, process.execPath, BIN, ...args];
  const r = spawnSync(command!, argv, {
    encoding: 'utf8',
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('help and usage', () => {
  it.each([['--help'], ['--version'], ['audit', '--help'], ['audit', 'verify', '--help'], ['runner', '--help'], ['--http', '--help']])(
    '`skill-mcp %s` answers on stdout, once, and exits 0',
    (...args: string[]) => {
      const r = cli(args);
      expect(r).toMatchObject({ status: 0, stderr: '' });
      expect(r.stdout).not.toBe('');
      if (args.includes('--help')) expect(r.stdout.match(/usage:/g)).toHaveLength(1);
    },
  );

  it('`skill-mcp audit` with no command is a usage error on stderr (exit 2)', () => {
    const r = cli(['audit']);
    expect(r).toMatchObject({ status: 2, stdout: '' });
    expect(r.stderr).toContain('usage: skill-mcp audit verify');
  });
});

describe("the default log is the standalone runner's", () => {
  /** A standalone session piped through, which starts the runner (skill_list wakes it) and so writes its log. */
  function standaloneSession(env: Record<string, string>): Promise<number | null> {
    const session = [
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '0' } },
      },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'skill_list', arguments: {} } },
    ];
    const [command, ...argv] = [...asUser, process.execPath, BIN];
    const child = spawn(command!, argv, {
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', SKILLS_DIR: join(REPO, 'skills'), ...env },
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    child.stdin.end(session.map((m) => `${JSON.stringify(m)}\n`).join(''));
    return new Promise((resolve) => child.once('close', resolve));
  }

  it("`audit verify` and `audit tail` with no FILE read an ordinary user's ~/.local/state/skill-mcp/audit.log, where `skill-mcp` put it", async () => {
    const home = userHome();
    const env = { HOME: home, TMPDIR: home };
    expect(await standaloneSession(env)).toBe(0);
    expect(existsSync(join(home, '.local/state/skill-mcp/audit.log'))).toBe(true);
    // A session that only listed skills decided nothing: its runner wrote no line (no runner.start noise).
    expect(readFileSync(join(home, '.local/state/skill-mcp/audit.log'), 'utf8')).toBe('');
    expect(cli(['audit', 'verify'], env, asUser)).toMatchObject({
      status: 0,
      stdout: expect.stringMatching(/^intact: 0 lines, chain unbroken; nothing recorded yet/),
    });
    expect(cli(['audit', 'tail'], env, asUser)).toMatchObject({ status: 0, stdout: '' });
  });

  it('with XDG_STATE_HOME set, both use $XDG_STATE_HOME/skill-mcp/audit.log', async () => {
    const home = userHome();
    const env = { HOME: home, TMPDIR: home, XDG_STATE_HOME: join(home, 'xdg') };
    expect(await standaloneSession(env)).toBe(0);
    expect(existsSync(join(home, 'xdg/skill-mcp/audit.log'))).toBe(true);
    expect(cli(['audit', 'verify'], env, asUser)).toMatchObject({ status: 0, stdout: expect.stringContaining('intact') });
  });

  it('a missing default log is named, with how to point at another, and exits 1', () => {
    const home = userHome();
    const r = cli(['audit', 'verify'], { HOME: home }, asUser);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(join(home, '.local/state/skill-mcp/audit.log'));
    expect(r.stderr).toContain('SKILL_MCP_AUDIT_LOG');
  });
});

describe('audit tail against forged lines', () => {
  it('an argv element holding \\n, \\r and ESC[2K cannot add, erase or overwrite a printed line', async () => {
    const skills = writeSkills({ s: { run: [{ script: 'a.js', interpreter: 'node', timeout: 10 }], files: { 'a.js': '' } } });
    const runner = await startRunner({ env: { SKILLS_DIR: skills }, args: ['--uid-range', uidRange(9)] });
    started.push(runner);
    const forged = 'x\n2026-01-01T00:00:00.000Z #99 run.exit run_id=forged exit_code=0';
    const erase = '\x1b[2K\r2026-01-01T00:00:00.000Z #98 run.reject reason=none\u202e';
    await prepareAndRun(runner.client, 's', 'a.js', [forged, erase, '\x9b31m\x7f']);
    // A prepare for a skill whose name is the attack: refused, but its name is logged.
    await runner.client.prepare({ skill: 'evil\r\n\x1b]0;title\x07', script: 'a.js', args: [] });
    const log = join(runner.stateDir, 'audit.log');
    const r = cli(['audit', 'tail', '-n', '100', log]);
    expect(r.status).toBe(0);
    const printed = r.stdout.split('\n').filter(Boolean);
    expect(printed).toHaveLength(readFileSync(log, 'utf8').split('\n').filter(Boolean).length);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the assertion is that none are printed
    expect(r.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u);
    for (const line of printed) expect(line).toMatch(/^\d{4}-\d\d-\d\dT\S+ #\d+ [a-z.]+ /);
    const accept = printed.find((l) => l.includes(' run.accept '))!;
    expect(accept).toContain('\\n2026-01-01T00:00:00.000Z #99 run.exit');
    expect(accept).toContain('\\u001b[2K\\r');
    expect(accept).toContain('\\u{202e}');
    expect(accept).toContain('\\u{009b}31m\\u{007f}');
    expect(printed.find((l) => l.includes(' run.prepare ') && l.includes('evil'))).toContain('skill="evil\\r\\n\\u001b]0;title\\u0007"');
  });
});

describe('audit verify and runs without an exit', () => {
  const skills = writeSkills({
    slow: { run: [{ script: 'wait.js', interpreter: 'node', timeout: 60 }], files: { 'wait.js': 'setInterval(() => {}, 1000);' } },
  });

  async function runInFlight(): Promise<{
    runner: RunnerHandle;
    log: string;
    runId: string;
    cancelId: string;
    finished: Promise<unknown>;
  }> {
    const runner = await startRunner({ env: { SKILLS_DIR: skills }, args: ['--uid-range', uidRange(9)] });
    started.push(runner);
    const prepared = await runner.client.prepare({ skill: 'slow', script: 'wait.js', args: [] });
    if (!prepared.ok) throw new Error(prepared.error.message);
    const cancelId = randomBytes(16).toString('hex');
    const finished = runner.client
      .run({ skill: 'slow', script: 'wait.js', args: [], confirmToken: prepared.result.confirmToken }, { timeoutMs: 60_000, cancelId })
      .catch((error: unknown) => error);
    const log = join(runner.stateDir, 'audit.log');
    const accept = await awaitAuditLine(runner.stateDir, (e) => e['event'] === 'run.accept');
    return { runner, log, runId: accept['run_id'] as string, cancelId, finished };
  }

  it('a runner SIGKILLed mid-run: the chain is intact, and the run whose result was lost is named (exit 1)', async () => {
    const { runner, log, runId, finished } = await runInFlight();
    const exited = new Promise((resolve) => runner.proc.once('exit', resolve));
    runner.proc.kill('SIGKILL');
    await exited;
    await finished;
    const r = cli(['audit', 'verify', log], { SKILL_MCP_STATE_DIR: runner.stateDir });
    expect(r.status).toBe(1);
    // (The kill may land between the log line and its anchor: the tail may be anchored or one line ahead.)
    expect(r.stdout).toMatch(/^intact: \d+ lines, chain unbroken; tail (matches|anchored)/);
    expect(r.stdout).toContain(`LOST run ${runId}`);
    expect(r.stdout).toContain(`its runner (pid ${runner.proc.pid}) is gone`);
  });

  it('a run still in progress on a live runner is reported open (exit 3), and the log is clean (exit 0) once it ended', async () => {
    const { runner, log, runId, cancelId, finished } = await runInFlight();
    const open = cli(['audit', 'verify', log], { SKILL_MCP_STATE_DIR: runner.stateDir });
    expect(open.status).toBe(3);
    expect(open.stdout).toContain(`OPEN run ${runId}`);
    expect(open.stdout).not.toContain('LOST');
    expect(await runner.client.cancel(cancelId)).toMatchObject({ ok: true, result: { cancelled: true } });
    await finished;
    expect(cli(['audit', 'verify', log], { SKILL_MCP_STATE_DIR: runner.stateDir })).toMatchObject({
      status: 0,
      stdout: expect.stringContaining('intact'),
    });
  });
});
