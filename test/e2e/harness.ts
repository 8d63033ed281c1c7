/**
 * @module What every e2e suite shares: the built server spawned over a real stdio transport and
 * driven by the SDK's own `Client`, in either protocol era. Nothing here calls a handler directly.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client, ProtocolError } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';
import { z } from 'zod';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));
export const SERVER_JS = `${REPO}dist/skill-mcp.js`;
export const VARIED_SKILLS = `${REPO}test/fixtures/varied-skills`;
export const BUNDLED_SKILLS = `${REPO}skills`;

export interface Era {
  name: string;
  /** The client's negotiation: the 2025 era is the client's default `initialize` handshake. */
  versionNegotiation?: { mode: { pin: string } };
}

/** Both eras one stdio server must serve (SPEC §1). 2026-07-28 is pinned: no probe spawn, no fallback. */
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
  close(): Promise<void>;
}

/** Spawns `node dist/skill-mcp.js` with exactly `env` (plus PATH) and connects in `era`. */
export async function serve(env: Record<string, string>, era: Era): Promise<Served> {
  if (!existsSync(SERVER_JS)) throw new Error('dist/skill-mcp.js is missing: run `npm run build` first');
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [SERVER_JS],
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => void (stderr += chunk.toString('utf8')));
  const client = new Client(
    { name: 'skill-mcp-e2e', version: '0.0.0' },
    era.versionNegotiation ? { versionNegotiation: era.versionNegotiation } : {},
  );
  await client.connect(transport);
  return {
    client,
    skills: new SkillsClient(client),
    pid: transport.pid ?? -1,
    stderr: () => stderr,
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
  scripts: { script: string; interpreter: string; timeoutMs: number; env: string[] }[];
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
}

export async function skillList(client: Client): Promise<SkillListValue> {
  const answer = await callTool(client, 'skill_list');
  if (answer.isError) throw new Error(`skill_list failed: ${answer.text}`);
  return answer.value as unknown as SkillListValue;
}
