/**
 * @module Test harness for the runner: real `node dist/skill-mcp.js runner` processes on real
 * sockets, skill roots written to a world-readable temp dir, and the front's own RunnerClient.
 * Build first (`npm run build`).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { RunnerClient } from '../../server/runner-client.js';
import { configView } from '../../shared/config-view.js';
import type { RunnerRequest } from '../../shared/protocol.js';
import { jtiLogId } from '../../shared/token.js';
import { afterEachFile } from '../file-hooks.js';
import { unmountAll } from '../../runner/workspace/mount.js';

export const REPO = resolve(import.meta.dirname, '../..');
export const BIN = join(REPO, 'dist/skill-mcp.js');
export const isRoot = process.getuid?.() === 0;

export interface SkillSpec {
  /** The `run:` rows of the declaration. */
  run: { script: string; interpreter: string; env?: string[]; timeout?: number }[];
  files: Record<string, string>;
  /** The declaration's `egress` entries, written as a YAML flow list. */
  egress?: string[];
  /** The declaration's `data:` as YAML (`true`, `{bytes: 1000, files: 5}`). */
  data?: string;
}

/** A run's captured bytes as text (the protocol carries output as bytes, exactly as written). */
export function text(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('utf8');
}

const made: string[] = [];
// Every folder a test file made is removed when that file's tests are done — every file, not only a
// worker's first (test/file-hooks.ts), after its own afterAll hooks have stopped its runners.
afterEachFile(() => {
  for (const dir of made.splice(0)) {
    // A root runner SIGKILLed mid-run leaves its run's workspace tmpfs mounted (the next runner on
    // that scratch directory sweeps it: test/runner/workspace-mounts.test.ts); a test that killed
    // one and started no other has it taken off here, so the folder can go.
    unmountAll(dir);
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A fresh directory every uid may traverse (run uids must read the skills); removed after the file. */
export function tempDir(prefix: string): string {
  if (!existsSync(BIN)) throw new Error('dist/skill-mcp.js is missing: run `npm run build` first');
  const dir = mkdtempSync(join(tmpdir(), `skill-mcp-${prefix}-`));
  chmodSync(dir, 0o755);
  made.push(dir);
  return dir;
}

/** Writes skills (`<root>/<name>/SKILL.md` + files) and returns the root. */
export function writeSkills(skills: Record<string, SkillSpec>): string {
  const root = tempDir('skills');
  for (const [name, spec] of Object.entries(skills)) {
    const rows = spec.run
      .map(
        (r) =>
          `    - script: ${r.script}\n      interpreter: ${r.interpreter}\n      env: [${(r.env ?? []).join(', ')}]\n      timeout: ${r.timeout ?? 10}`,
      )
      .join('\n');
    const egress = `${spec.egress ? `\n  egress: [${spec.egress.join(', ')}]` : ''}${spec.data ? `\n  data: ${spec.data}` : ''}`;
    const files = {
      'SKILL.md': `---\nname: ${name}\ndescription: test skill ${name}\nmcp-host:\n  version: 1\n  run:\n${rows}${egress}\n---\nTest skill.\n`,
      ...spec.files,
    };
    for (const [path, text] of Object.entries(files)) {
      const full = join(root, name, path);
      mkdirSync(dirname(full), { recursive: true, mode: 0o755 });
      writeFileSync(full, text, { mode: 0o644 });
    }
  }
  return root;
}

export interface RunnerHandle {
  proc: ChildProcess;
  client: RunnerClient;
  socketPath: string;
  stateDir: string;
  stderr: () => string;
  stop(): Promise<void>;
}

let rangeCursor = 0;
/** A distinct run-uid range per runner a test file starts, so parallel files never share a uid. */
export function uidRange(fileIndex: number): string {
  const first = 61184 + fileIndex * 32 + (rangeCursor++ % 4) * 8;
  return `${first}-${first + 7}`;
}

/** The bundled skills, which a runner given neither MCP_SKILLS_PATH nor SKILLS_DIR serves. */
export const BUNDLED = join(REPO, 'skills');

/** The hello a front configured like `env` sends (its view of roots, mode and grant). */
export function helloFor(env: Record<string, string>, frontSecret?: string): Extract<RunnerRequest, { type: 'hello' }> {
  return { type: 'hello', view: configView(env, BUNDLED), ...(frontSecret !== undefined ? { frontSecret } : {}) };
}

/**
 * Starts a runner. Its `client` is a front configured like the runner (`env`), holding
 * `frontSecret` when given (the runner then needs `--front-secret-file` in `args`).
 */
export async function startRunner(opts: {
  env: Record<string, string>;
  stateDir?: string;
  args?: string[];
  spawnPrefix?: string[];
  base?: string;
  frontSecret?: string;
  /** No `--scratch-dir`: the runner picks its default scratch directory. */
  noScratch?: boolean;
  /** Another build's bin (a copy of dist/ a test changed): the runner takes its helper and walker bundles from beside it. */
  bin?: string;
}): Promise<RunnerHandle> {
  const base = opts.base ?? tempDir('runner');
  const socketPath = join(base, 'sock', 'runner.sock');
  const stateDir = opts.stateDir ?? join(base, 'state');
  const argv = [
    opts.bin ?? BIN,
    'runner',
    '--socket',
    socketPath,
    '--state-dir',
    stateDir,
    ...(opts.noScratch ? [] : ['--scratch-dir', join(base, 'scratch')]),
    ...(opts.args ?? []),
  ];
  const [command, ...args] = opts.spawnPrefix ? [...opts.spawnPrefix, process.execPath, ...argv] : [process.execPath, ...argv];
  // SKILL_MCP_BWRAP passes through, so CI's fallback pass reaches every runner the tests start.
  const bwrap = process.env['SKILL_MCP_BWRAP'] ? { SKILL_MCP_BWRAP: process.env['SKILL_MCP_BWRAP'] } : {};
  const env = {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    LANG: 'C.UTF-8',
    SKILL_MCP_KILL_GRACE_MS: '500',
    SKILL_MCP_DRAIN_MS: '300',
    ...bwrap,
    ...opts.env,
  };
  const proc = spawn(command!, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  await new Promise<void>((ok, fail) => {
    // Generous: a runner starting on a loaded 2-core machine is slow, not broken (its exit is caught below).
    const timer = setTimeout(() => fail(new Error(`runner did not start: ${err}`)), 25_000);
    proc.stderr!.on('data', () => {
      if (err.includes('ready on')) {
        clearTimeout(timer);
        ok();
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`runner exited ${code}: ${err}`));
    });
  });
  // A runner that dies while its test still uses it says why in the test's output (its stderr), so a
  // crash seen once in CI can be read there, not only as "the runner closed the connection".
  let stopping = false;
  proc.once('exit', (code, signal) => {
    if (!stopping) process.stderr.write(`runner ${proc.pid} exited unexpectedly (${signal ?? code}); its stderr:\n${err}\n`);
  });
  return {
    proc,
    socketPath,
    stateDir,
    stderr: () => err,
    client: new RunnerClient(socketPath, {
      view: () => configView(opts.env, BUNDLED),
      frontSecret: opts.frontSecret,
      requestTimeoutMs: 10_000,
      runSlackMs: 10_000,
    }),
    async stop() {
      stopping = true;
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
    },
  };
}

/** The `token_id` the runner's audit lines give a token (its claims read unverified: a test's own token). */
export function tokenLogIdOf(token: string): string {
  const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { jti: string };
  return jtiLogId(claims.jti);
}

/**
 * The audit log's whole lines as objects. A line the runner is writing right now may be seen in
 * part (another process's read does not wait for its write: CI under load saw one), so the text
 * after the last newline is not a line yet and is left for the next look.
 */
export function auditLines(stateDir: string): Record<string, unknown>[] {
  const text = readFileSync(join(stateDir, 'audit.log'), 'utf8');
  return text
    .slice(0, text.lastIndexOf('\n') + 1)
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/**
 * Resolves with the first line of `stateDir`'s audit log that `match`es, once the runner has
 * written it (it appends and fsyncs before going on). Polls the file: another process writes it.
 */
export async function awaitAuditLine(
  stateDir: string,
  match: (line: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  for (;;) {
    const found = existsSync(join(stateDir, 'audit.log')) ? auditLines(stateDir).find(match) : undefined;
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Resolves once the runner holds no slot and queues no run (describe's `runs`), looked at every
 * 25 ms, or rejects after `withinMs`. A run answers before its folders are removed and keeps its
 * slot until they are (runner/requests/run-path.ts): a test that needs the slot back right after
 * an answer (one slot, no queue) waits for this.
 */
export async function slotsFree(client: RunnerClient, withinMs = 30_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const described = await client.describe();
    if (described.ok && described.result.runs?.running === 0 && described.result.runs.queued === 0) return;
    if (Date.now() > deadline) throw new Error(`the runner still holds a slot after ${withinMs} ms: ${JSON.stringify(described)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Whether `check` comes to hold, looked at every 25 ms; false once `withinMs` has passed (a backstop
 * against a hang, for a state another process makes that gives no event to wait on).
 */
export async function until(check: () => boolean, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
  return true;
}

/** The uid the runner gave to `runId` (from its audit log). */
export function runUid(stateDir: string, runId: string): number {
  const accept = auditLines(stateDir).find((l) => l['event'] === 'run.accept' && l['run_id'] === runId);
  if (!accept) throw new Error(`no run.accept for ${runId}`);
  return accept['uid'] as number;
}

/** Prepares then runs; fails the test if prepare is refused. */
export async function prepareAndRun(client: RunnerClient, skill: string, script: string, args: string[] = []) {
  const prepared = await client.prepare({ skill, script, args });
  if (!prepared.ok) throw new Error(`prepare refused: ${prepared.error.code} ${prepared.error.message}`);
  const ran = await client.run(
    { skill, script, args, confirmToken: prepared.result.confirmToken },
    { timeoutMs: prepared.result.willRun.timeoutMs },
  );
  if (!ran.ok) throw new Error(`run refused: ${ran.error.code} ${ran.error.message}`);
  return { willRun: prepared.result.willRun, token: prepared.result.confirmToken, result: ran.result };
}
