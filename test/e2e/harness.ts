/**
 * @module What every e2e suite shares: the built server spawned over a real stdio transport and
 * driven by the SDK's own `Client`, in either protocol era. Nothing here calls a handler directly.
 */
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, ProtocolError } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';
import { z } from 'zod';
import { mountsAtOrBelow, unmountAll } from '../../runner/workspace/mount.js';
import { SUITE_TMP } from '../suite-tmp.js';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));
export const SERVER_JS = `${REPO}dist/skill-mcp.js`;
export const VARIED_SKILLS = `${REPO}test/fixtures/varied-skills`;
export const BUNDLED_SKILLS = `${REPO}skills`;

/**
 * This test file's own temp tree (test/suite-tmp.ts). Every server it starts gets it as TMPDIR (so
 * the runner guard's private socket folder and the runner's scratch land here) and a state dir
 * inside it, so any process a test left behind names this path in its command line and
 * {@link leftoverProcesses} finds it.
 */
export { SUITE_TMP };

/** Whom a front started as root becomes (SKILL_MCP_FRONT_UID's default), and so whom a runner must admit. */
export const FRONT_UID = 61183;

/**
 * The runner flags of the hosted recipe for a front these tests start: as root the front drops to
 * {@link FRONT_UID}, so the runner must admit that uid; otherwise both share the caller's uid.
 */
export function hostedRunnerArgs(): string[] {
  return process.getuid?.() === 0 ? ['--front-uid', String(FRONT_UID), '--front-gid', String(FRONT_UID)] : [];
}

/** A fresh folder inside {@link SUITE_TMP} that the unprivileged front and the run uids can read. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(SUITE_TMP, `${prefix}-`));
  chmodSync(dir, 0o755);
  return dir;
}

/**
 * Run uids for this file's runners, apart from the runner unit tests' ranges (61184-61279) and
 * from the other worker's e2e files, so a runner reaping "its" uid never touches another suite's
 * script.
 */
function uidRangeForWorker(): string {
  const pool = Number(process.env['VITEST_POOL_ID'] ?? '1') % 8;
  const first = 61600 + pool * 32;
  return `${first}-${first + 31}`;
}

/**
 * Live pids (not this process) whose command line names `needle` (runner guards, runners: their
 * socket is under it) or whose working directory is under it (scripts: the runner starts them in
 * their skill folder, with a relative argv).
 */
export function processesNaming(needle: string): { pid: number; cmdline: string }[] {
  const found: { pid: number; cmdline: string }[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    const read = (path: string, how: (p: string) => string): string => {
      try {
        return how(path);
      } catch {
        return ''; // exited while we looked, or a kernel thread
      }
    };
    const cmdline = read(`/proc/${name}/cmdline`, (p) => readFileSync(p, 'utf8').replaceAll('\0', ' '));
    if (cmdline === '' || /^State:\s+Z/m.test(read(`/proc/${name}/status`, (p) => readFileSync(p, 'utf8')))) continue;
    const cwd = read(`/proc/${name}/cwd`, readlinkSync);
    if (cmdline.includes(needle) || cwd.startsWith(needle)) found.push({ pid: Number(name), cmdline: `${cmdline} (cwd ${cwd})` });
  }
  return found;
}

/**
 * What this file left running after its servers closed. A closed front's guard stops the runner
 * asynchronously (stdin EOF, then SIGTERM, then exit), so this waits for that to settle, up to
 * `withinMs`, and returns whatever is still there.
 */
export async function leftoverProcesses(withinMs = 20_000): Promise<{ pid: number; cmdline: string }[]> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const left = processesNaming(SUITE_TMP);
    if (left.length === 0 || Date.now() > deadline) return left;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The afterAll of every e2e file: nothing left behind, then the temp tree goes. */
export async function expectNoLeftovers(): Promise<void> {
  const left = await leftoverProcesses();
  for (const { pid } of left) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  // A run's workspace tmpfs (root runners) must never outlive the run: one still mounted fails the file, like a process.
  const mounts = mountsAtOrBelow(SUITE_TMP);
  unmountAll(SUITE_TMP);
  rmSync(SUITE_TMP, { recursive: true, force: true });
  if (left.length > 0) throw new Error(`processes left behind:\n${left.map((p) => `${p.pid} ${p.cmdline}`).join('\n')}`);
  if (mounts.length > 0) throw new Error(`workspace mounts left behind:\n${mounts.join('\n')}`);
}

export interface Era {
  name: string;
  /** The client's negotiation: the 2025 era is the client's default `initialize` handshake. */
  versionNegotiation?: { mode: { pin: string } };
}

/** Both eras one stdio server must serve (docs/architecture.md §1). 2026-07-28 is pinned: no probe spawn, no fallback. */
export const ERAS: Era[] = [
  { name: '2025 (initialize)' },
  { name: '2026-07-28 (server/discover)', versionNegotiation: { mode: { pin: '2026-07-28' } } },
];

export interface Served {
  client: Client;
  skills: SkillsClient;
  pid: number;
  /** Everything the server wrote to stderr so far. */
  stderr(): string;
  /** Resolves once stderr matches `pattern` (rejects after `withinMs`: a generous deadline, not a sleep). */
  waitForStderr(pattern: RegExp, withinMs?: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * The environment every e2e and HTTP server starts from: PATH, this file's TMPDIR, state dir and
 * run uids, and HOME there too — never the real state folder of the person running the tests
 * (test/state-guard.ts refuses such a start).
 */
export function baseEnv(): Record<string, string> {
  return {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: SUITE_TMP,
    TMPDIR: SUITE_TMP,
    SKILL_MCP_STATE_DIR: join(SUITE_TMP, 'state'),
    SKILL_MCP_UID_RANGE: uidRangeForWorker(),
    // CI's fallback pass (SKILL_MCP_BWRAP=off) reaches the runner each server starts.
    ...(process.env['SKILL_MCP_BWRAP'] ? { SKILL_MCP_BWRAP: process.env['SKILL_MCP_BWRAP'] } : {}),
  };
}

export interface ServeOptions {
  /** Client capabilities to declare (e.g. `{elicitation: {form: {}}}`). */
  capabilities?: Record<string, unknown>;
  /**
   * Answers `elicitation/create`: the 2025 server request, and (through the SDK's input-required
   * driver) the 2026-07-28 embedded request. Giving one declares form elicitation.
   */
  onElicit?: (params: { message: string; requestedSchema?: unknown }) => {
    action: 'accept' | 'decline' | 'cancel';
    content?: Record<string, unknown>;
  };
  /** A command the server is started through (e.g. `setpriv --reuid=U ...` to serve as an ordinary uid from a root test). */
  spawnPrefix?: string[];
}

/** Spawns `node dist/skill-mcp.js` with {@link baseEnv} plus `env` and connects in `era`. */
export async function serve(env: Record<string, string>, era: Era, options: ServeOptions = {}): Promise<Served> {
  if (!existsSync(SERVER_JS)) throw new Error('dist/skill-mcp.js is missing: run `npm run build` first');
  const [command, ...prefixArgs] = [...(options.spawnPrefix ?? []), process.execPath];
  const transport = new StdioClientTransport({
    command: command!,
    args: [...prefixArgs, SERVER_JS],
    env: { ...baseEnv(), ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  const stderrWaiters = new Set<() => void>();
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
    for (const check of stderrWaiters) check();
  });
  const waitForStderr = (pattern: RegExp, withinMs = 30_000): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        if (!pattern.test(stderr)) return;
        stderrWaiters.delete(check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        stderrWaiters.delete(check);
        reject(new Error(`stderr never matched ${pattern} within ${withinMs} ms:\n${stderr}`));
      }, withinMs);
      stderrWaiters.add(check);
      check();
    });
  const client = new Client(
    { name: 'skill-mcp-e2e', version: '0.0.0' },
    {
      ...(era.versionNegotiation ? { versionNegotiation: era.versionNegotiation } : {}),
      ...(options.capabilities || options.onElicit
        ? { capabilities: (options.capabilities ?? { elicitation: { form: {} } }) as never }
        : {}),
    },
  );
  const onElicit = options.onElicit;
  if (onElicit) client.setRequestHandler('elicitation/create', async (request) => onElicit(request.params as never) as never);
  await client.connect(transport);
  return {
    client,
    skills: new SkillsClient(client),
    pid: transport.pid ?? -1,
    stderr: () => stderr,
    waitForStderr,
    close: () => client.close(),
  };
}

const AnyResult = z.looseObject({});

/** Sends any method (the extension's own, or a malformed request) and returns the raw result. */
export async function rpc(client: Client, method: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  return (await client.request({ method, params } as never, AnyResult)) as Record<string, unknown>;
}

/** The JSON-RPC error code a request fails with (throws if it succeeds). */
export async function rpcErrorCode(request: Promise<unknown>): Promise<number> {
  try {
    await request;
  } catch (error) {
    if (error instanceof ProtocolError) return error.code;
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'number') return code;
    throw error;
  }
  throw new Error('the request succeeded; an error was expected');
}

export interface ToolAnswer {
  isError: boolean;
  value: Record<string, unknown>;
  /** The text the model reads. */
  text: string;
}

/** Calls a tool and returns its structured answer; checks the text the model reads carries the same JSON. */
export async function callTool(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolAnswer> {
  const result = await client.callTool({ name, arguments: args });
  const content = result.content as { type: string; text?: string }[];
  const text = content.map((c) => c.text ?? '').join('');
  const value = (result.structuredContent ?? JSON.parse(text)) as Record<string, unknown>;
  return { isError: result.isError === true, value, text };
}

/** Resident memory of a process in KiB (Linux). */
export function rssKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmRSS:\s+(\d+)\s+kB/.exec(status);
  return match ? Number(match[1]) : Number.NaN;
}

export interface SkillListEntry {
  name: string;
  description: string;
  whenToUse?: string;
  fileCount: number;
  published: boolean;
  uri?: string;
  runnable: boolean;
  scripts: { script: string; interpreter: string; timeoutMs: number; envNames: string[]; envNotSet?: string[]; envWarning?: string }[];
  ungrantedScripts?: { script: string; interpreter: string; why: string }[];
  unavailableScripts?: { script: string; interpreter: string; why: string }[];
}

export interface ProblemEntry {
  path: string;
  reason: string;
  detail: string;
}

export interface SkillListValue {
  skills: SkillListEntry[];
  problems: ProblemEntry[];
  grantFrom: string;
  grantNote?: string;
  isolation: { level: string; detail?: string; runnerRestarts?: number; interpreters?: { name: string; available: boolean }[] };
}

/**
 * The whole of skill_list: every page of skills (at most 200 a page) and, when the first page shows
 * only the first problems, every page of problems.
 */
export async function skillList(client: Client): Promise<SkillListValue> {
  const call = async (args: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const answer = await callTool(client, 'skill_list', args);
    if (answer.isError) throw new Error(`skill_list failed: ${answer.text}`);
    return answer.value;
  };
  const first = await call({ limit: 200 });
  const skills = [...(first['skills'] as SkillListEntry[])];
  for (let cursor = first['nextCursor'] as string | undefined; cursor !== undefined; ) {
    const page = await call({ limit: 200, cursor });
    skills.push(...(page['skills'] as SkillListEntry[]));
    cursor = page['nextCursor'] as string | undefined;
  }
  let problems = first['problems'] as ProblemEntry[];
  if ((first['problemCount'] as number) > problems.length) {
    // The runner's problems lead the first page; the problem pages hold the catalog's.
    const runner = problems.filter((p) => p.path === 'runner');
    problems = [...runner];
    for (let cursor: string | undefined, more = true; more; ) {
      const page = await call({ problems: true, limit: 200, ...(cursor ? { cursor } : {}) });
      problems.push(...(page['problems'] as ProblemEntry[]));
      cursor = page['nextCursor'] as string | undefined;
      more = cursor !== undefined;
    }
  }
  return { ...(first as unknown as SkillListValue), skills, problems };
}
