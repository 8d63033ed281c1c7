/**
 * @module `skill-mcp` with no arguments: the front on stdio, plus its own runner (docs/architecture.md §0, one bin,
 * two processes). The runner is started through a small guard process, on a private socket, when
 * first needed (until then a shell holds the guard's place, so no second Node competes with the
 * front's start); it restarts if it dies and goes when the front goes, and it serves only this front:
 * the launcher makes a per-instance secret, hands it to the guard over its stdin pipe and keeps it
 * in the front's memory (runner/requests/front-auth.ts). Started as root, the guard and the runner keep root
 * (to sandbox scripts under fresh uids). The front keeps only the variables it reads, clears its
 * environ block (so granted secret values live in the runner alone) and — started as root, in every
 * mode — drops to an unprivileged uid before it reads a single request.
 *
 * With `SKILL_MCP_RUNNER_SOCKET` set, or in hosted mode, no runner is started: the front uses the
 * configured one (or says there is none).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { SkillMcpError } from '../shared/errors.js';
import { isHosted } from '../shared/mode.js';
import { stateDirOf } from '../shared/state-dir.js';
import { refuseToStart } from '../shared/settings-schema.js';
import { sharedSettingIssues } from '../shared/settings.js';
import { scrubEnviron } from '../runner/hygiene.js';
import { runnerVariableIssues } from '../runner/options.js';
import type { RunnerLinkOptions } from '../server/runner-link.js';
import { frontStateKey } from '../server/confirm/request-state.js';
import { externalRunner } from '../server/start.js';
import { copyBundled, reachableBy } from './bundled-copy.js';

/** Default unprivileged uid/gid for the front when started as root (outside the run-uid range). */
export const DEFAULT_FRONT_UID = 61183;
const READY_TIMEOUT_MS = 15_000;
const READY_POLL_MS = 20;
/**
 * When the guard boots if nothing needed it yet: well after a front's first answers (~0.2 s on small
 * folders, ~1 s on 5,000 skills), so the first skill_list does not pay for a Node start (~55 ms)
 * either. A one-shot client is usually gone by then, and the guard never boots at all.
 */
const GUARD_BOOT_DELAY_MS = 2_000;

/** The delay, or `SKILL_MCP_GUARD_BOOT_MS` (milliseconds, 0 to 3,600,000) when set to a whole number in range. */
function guardBootDelayMs(env: NodeJS.ProcessEnv): number {
  const raw = env['SKILL_MCP_GUARD_BOOT_MS'];
  const value = raw !== undefined && /^\d{1,7}$/.test(raw) ? Number(raw) : undefined;
  return value !== undefined && value <= 3_600_000 ? value : GUARD_BOOT_DELAY_MS;
}

/**
 * Only what the front reads survives in its memory (MCP_*, SKILL_MCP_*, SKILLS_DIR). Security: never
 * the secret values (`SKILL_MCP_SECRET_<NAME>`, docs/secrets.md): the runner alone holds them.
 */
function frontVariables(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const kept: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (name.startsWith('SKILL_MCP_SECRET_')) continue;
    if (/^(MCP_|SKILL_MCP_)/.test(name) || name === 'SKILLS_DIR' || name === 'HOME') kept[name] = value;
  }
  return kept;
}

/** A uid/gid the front may drop to. Security: never 0, so a typo cannot leave the front root. */
function unprivilegedId(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1 || value > 2 ** 31 - 1) {
    throw new Error(`${name}=${JSON.stringify(raw)} must be an unprivileged id (1 to ${2 ** 31 - 1})`);
  }
  return value;
}

/** The uid/gid a root-started front becomes: SKILL_MCP_FRONT_UID / _GID, default 61183. */
function frontIds(env: NodeJS.ProcessEnv): Ids {
  const uid = unprivilegedId('SKILL_MCP_FRONT_UID', env['SKILL_MCP_FRONT_UID'], DEFAULT_FRONT_UID);
  return { uid, gid: unprivilegedId('SKILL_MCP_FRONT_GID', env['SKILL_MCP_FRONT_GID'], uid) };
}

function canConnect(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection(path);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

interface Ids {
  uid: number;
  gid: number;
}

/**
 * Holds the guard's place until the front first needs its runner: a POSIX shell reading one line
 * from the pipe, then exec'ing the guard in place (same pid, pipe, environment and — started as
 * root — root). A second Node booting beside the front cost ~60 ms of CPU on the way to the first
 * answer on 2 cores (bench/RESULTS.md); the shell costs ~1 ms. If the front goes first (EOF), it
 * removes the private folder and exits, so nothing outlives the front either way.
 */
const GUARD_HOLDER = 'tmp=$1; shift; IFS= read -r line && [ "$line" = guard ] && exec "$@"; rm -rf -- "$tmp"';
/** Where the holder's shell is; without one (a distroless image) the guard is spawned at once. */
const HOLDER_SHELL = '/bin/sh';

/** Starts the guard (or its holder) and returns how the front reaches the runner. `front`: whom the front becomes (root only). */
function launchOwnRunner(env: NodeJS.ProcessEnv, entry: string, front: Ids | undefined, bundledSkills: string): RunnerLinkOptions {
  const asRoot = front !== undefined;
  const tmp = mkdtempSync(join(tmpdir(), 'skill-mcp-'));
  // The front (another uid when root) must traverse to the runner's own 0750 socket folder.
  if (asRoot) chmodSync(tmp, 0o711);
  if (front && !env['MCP_SKILLS_PATH'] && !env['SKILLS_DIR'] && !reachableBy(bundledSkills, front.uid, front.gid)) {
    // Set before the guard starts: the runner and the front must serve the same roots.
    const copy = join(tmp, 'skills');
    const files = copyBundled(bundledSkills, copy);
    env['SKILLS_DIR'] = copy;
    process.stderr.write(
      `skill-mcp: serving a copy of the bundled skills (${files} files): uid ${front.uid}, which the front drops to as root, cannot read the package's own folder ${bundledSkills}\n`,
    );
  }
  const socketPath = join(tmp, 'run', 'runner.sock');
  const stateDir = stateDirOf(env);
  const runnerArgs = [
    '--socket',
    socketPath,
    '--state-dir',
    stateDir,
    '--front-secret-stdin',
    ...(front ? ['--front-uid', String(front.uid), '--front-gid', String(front.gid)] : []),
  ];
  // The runner's secret comes from the guard's pipe, not from an operator's file.
  const guardEnv = { ...env };
  delete guardEnv['SKILL_MCP_FRONT_SECRET_FILE'];
  const guardArgv = [process.execPath, entry, 'runner-guard', '--tmp-dir', tmp, '--', ...runnerArgs];
  // Security: spawned now, while the launcher still has its rights and its whole environment (the
  // runner's granted variables), whichever of the two the front is about to give up.
  const held = existsSync(HOLDER_SHELL);
  const guard = held
    ? spawn(HOLDER_SHELL, ['-c', GUARD_HOLDER, 'skill-mcp-guard-holder', tmp, ...guardArgv], {
        stdio: ['pipe', 'pipe', 'inherit'],
        env: guardEnv,
      })
    : spawn(guardArgv[0]!, guardArgv.slice(1), { stdio: ['pipe', 'pipe', 'inherit'], env: guardEnv });
  guard.stdin.on('error', () => undefined);
  // Security: every front started as root has the same uid, so only this secret tells this
  // instance's front from another's; a pipe, because argv and environ are readable by others.
  // Written when the guard boots (the holder reads exactly one line; the guard reads the rest).
  const frontSecret = randomBytes(32).toString('hex');
  let booted = false;
  const boot = (): void => {
    if (booted) return;
    booted = true;
    guard.stdin.write(`${held ? 'guard\n' : ''}secret ${frontSecret}\n`);
  };
  setTimeout(boot, guardBootDelayMs(process.env)).unref();

  let restarts = 0;
  let gone: string | undefined;
  createInterface({ input: guard.stdout }).on('line', (line) => {
    const match = /^restarted (\d+)$/.exec(line);
    if (match) restarts = Number(match[1]);
    if (line === 'gave-up') gone = 'the runner keeps dying and was not restarted again; restart skill-mcp';
  });
  guard.on('exit', () => {
    gone = 'the runner supervisor exited; restart skill-mcp';
  });

  let woken = false;
  return {
    socketPath,
    frontSecret,
    restarts: () => restarts,
    async wake() {
      if (gone) throw new Error(gone);
      if (!woken) {
        woken = true;
        boot();
        guard.stdin.write('start\n');
      }
      const deadline = Date.now() + READY_TIMEOUT_MS;
      while (!(await canConnect(socketPath))) {
        if (gone) throw new Error(gone);
        if (Date.now() > deadline) throw new Error(`the runner did not start listening within ${READY_TIMEOUT_MS / 1000} s (see stderr)`);
        await new Promise((resolve) => setTimeout(resolve, READY_POLL_MS));
      }
    },
  };
}

/**
 * Everything a front needs before it serves a request, for stdio and HTTP alike: its runner (its
 * own, through the guard, unless one is configured or the mode is hosted), its trimmed variables,
 * a cleared environ, and — started as root — its unprivileged uid.
 */
export async function prepareFront(
  entry: string,
  bundledSkills: string,
): Promise<{ env: NodeJS.ProcessEnv; runner: RunnerLinkOptions; droppedToUid?: number; requestStateKey?: Buffer | undefined }> {
  const env = process.env;
  // A value the runner would refuse stops the launcher now, before anything starts, with the runner's message.
  refuseToStart([...sharedSettingIssues(env), ...(env['SKILL_MCP_RUNNER_SOCKET'] || isHosted(env) ? [] : runnerVariableIssues(env))]);
  const dropTo = process.getuid?.() === 0 ? frontIds(env) : undefined;
  const own = env['SKILL_MCP_RUNNER_SOCKET'] || isHosted(env) ? undefined : launchOwnRunner(env, entry, dropTo, bundledSkills);
  // Read now: an operator's secret file may be readable by root only.
  const runner: RunnerLinkOptions = own ?? (await externalRunner(env));
  const wake = runner.wake;
  if (wake) {
    // RunnerLink expects RUNNER_UNAVAILABLE-shaped failures; keep the message, lose nothing.
    runner.wake = async () => {
      try {
        await wake();
      } catch (error) {
        throw new SkillMcpError('RUNNER_UNAVAILABLE', `the runner is not available: ${(error as Error).message}`);
      }
    };
  }
  // Security: the front keeps only its requestState key, derived now (as root, a secret file only
  // root reads is still readable); the secret itself — from which a runner's token key derives —
  // is not kept, so nothing the front holds can mint a token (shared/keys.ts).
  const requestStateKey = frontStateKey(env);
  const kept = frontVariables(env);
  delete kept['MCP_CONFIRM_SECRET'];
  delete kept['MCP_CONFIRM_SECRET_FILE'];
  for (const name of Object.keys(process.env))
    if (!(name in kept) && !['PATH', 'HOME', 'LANG', 'TZ', 'TMPDIR'].includes(name)) delete process.env[name];
  // Scrub while still allowed to write our own /proc/self/mem (a uid change makes us undumpable).
  const scrub = scrubEnviron(process.env);
  if (!scrub.scrubbed)
    process.stderr.write(`skill-mcp: warning: the front could not clear its environ block (${scrub.detail ?? 'unknown'})\n`);
  if (dropTo) {
    // Security: the MCP-facing process gives up root before it reads any request, whatever the
    // mode — a root front would serve a hard link to /etc/shadow planted in a skill.
    process.setgroups?.([]);
    process.setgid?.(dropTo.gid);
    process.setuid?.(dropTo.uid);
  }
  return { env: kept, runner, requestStateKey, ...(dropTo ? { droppedToUid: dropTo.uid } : {}) };
}

export async function serveStandalone(options: { bundledSkills: string; entry: string }): Promise<void> {
  const { env, runner, requestStateKey } = await prepareFront(options.entry, options.bundledSkills);
  const { serveOverStdio } = await import('../server/stdio.js');
  await serveOverStdio({ bundledSkills: options.bundledSkills, env, runner, requestStateKey });
}

export async function serveStandaloneHttp(options: { bundledSkills: string; entry: string; args: string[] }): Promise<void> {
  const { serveOverHttp, wantsHelp } = await import('../server/http/serve.js');
  if (wantsHelp(options.args)) {
    await serveOverHttp({ args: options.args, bundledSkills: options.bundledSkills, env: process.env });
    return;
  }
  // Flags, variables and the token file are read first, with the launcher's own rights.
  const { readHttpOptions } = await import('../server/http/options.js');
  const http = readHttpOptions(options.args, process.env);
  const { env, runner, droppedToUid, requestStateKey } = await prepareFront(options.entry, options.bundledSkills);
  await serveOverHttp({ args: options.args, bundledSkills: options.bundledSkills, env, runner, http, droppedToUid, requestStateKey });
}
