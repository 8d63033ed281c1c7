/**
 * @module `skill-mcp runner-guard`: the standalone runner's keeper. The front starts it (before
 * dropping privileges, when started as root) with a pipe on its stdin — through a `/bin/sh` holder
 * that execs it when the runner is first needed or 2 s after start, so its Node does not boot beside
 * the front's first answers (cli/standalone.ts). It starts the runner when
 * the front first asks (`start` line), restarts it if it dies (reporting each restart on stdout as
 * `restarted N`), and when the front goes away (stdin closes) it stops the runner and removes the
 * private socket folder. The runner in turn exits when the guard's pipe closes, so no process
 * outlives the front. The front's first line (`secret ...`) is the per-instance front secret; the
 * guard keeps it in memory and writes it as the first line of each runner's stdin (started with
 * `--front-secret-stdin`), so it never appears in an argv or an environment.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createInterface } from 'node:readline';

const MAX_RESTARTS_PER_MINUTE = 10;
const STOP_GRACE_MS = 3_000;

function log(message: string): void {
  process.stderr.write(`skill-mcp runner-guard: ${message}\n`);
}

export async function guardMain(argv: string[], options: { entry: string }): Promise<void> {
  const split = argv.indexOf('--');
  const own = split < 0 ? argv : argv.slice(0, split);
  const runnerArgs = split < 0 ? [] : argv.slice(split + 1);
  const tmpIndex = own.indexOf('--tmp-dir');
  const tmpDir = tmpIndex >= 0 ? own[tmpIndex + 1] : undefined;

  let child: ChildProcess | undefined;
  let wanted = false;
  let stopping = false;
  let restarts = 0;
  let secret: string | undefined;
  const recent: number[] = [];

  const start = (): void => {
    if (stopping || child) return;
    const spawned = spawn(process.execPath, [options.entry, 'runner', ...runnerArgs], {
      stdio: ['pipe', 'ignore', 'inherit'],
      env: { ...process.env, SKILL_MCP_RUNNER_EXIT_WITH_STDIN: '1' },
    });
    child = spawned;
    spawned.stdin!.on('error', () => undefined);
    if (secret !== undefined) spawned.stdin!.write(`${secret}\n`);
    spawned.on('exit', (code, signal) => {
      if (child === spawned) child = undefined;
      if (stopping) return;
      const now = Date.now();
      recent.push(now);
      while (recent.length > 0 && now - recent[0]! > 60_000) recent.shift();
      if (recent.length > MAX_RESTARTS_PER_MINUTE) {
        log(`the runner died ${recent.length} times in a minute (last: ${signal ?? `exit ${code}`}); giving up`);
        process.stdout.write('gave-up\n');
        return;
      }
      restarts += 1;
      log(`the runner exited (${signal ?? `exit ${code}`}); restarting it (restart ${restarts})`);
      process.stdout.write(`restarted ${restarts}\n`);
      setTimeout(start, Math.min(100 * 2 ** (recent.length - 1), 5_000));
    });
  };

  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    const finish = (): void => {
      if (tmpDir) rmSync(tmpDir, { recursive: true, force: true });
      process.exit(0);
    };
    if (!child) {
      finish();
      return;
    }
    const running = child;
    running.once('exit', finish);
    running.kill('SIGTERM');
    setTimeout(() => running.kill('SIGKILL'), STOP_GRACE_MS).unref();
  };

  createInterface({ input: process.stdin }).on('line', (line) => {
    if (line.startsWith('secret ') && secret === undefined) secret = line.slice('secret '.length);
    else if (line.trim() === 'start' && !wanted) {
      wanted = true;
      start();
    }
  });
  process.stdin.on('end', stop);
  process.stdin.on('close', stop);
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
