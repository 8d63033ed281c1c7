/**
 * @module One benchmark session: spawn a server as a real client would (the SDK's `Client` over
 * stdio, plain 2025 `initialize`), send raw requests (no client-side cache in the way), and read
 * the server process's memory from /proc. Timings start before the spawn.
 */
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import { z } from 'zod';

const ANY_RESULT = z.any();
/** Long enough for the reference server's sequential scan of 50,000 files. */
const REQUEST_TIMEOUT_MS = 300_000;

export const now = () => performance.now();

/** VmRSS / VmHWM of a process, in MB; undefined once it has exited. */
export function memoryOf(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rssMB: kb('VmRSS') / 1024, peakMB: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

export class Session {
  /** @param {{command: string, args: string[], env: Record<string, string>}} server */
  static async open(server) {
    const stderr = [];
    const transport = new StdioClientTransport({
      command: server.command,
      args: server.args,
      env: { ...getDefaultEnvironment(), ...server.env },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk) => {
      stderr.push(chunk);
      if (stderr.length > 50) stderr.shift();
    });
    const client = new Client({ name: 'skill-mcp-bench', version: '0.0.0' }, { capabilities: {} });
    const startedAt = now();
    try {
      await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });
    } catch (error) {
      throw new Error(`${server.args.join(' ')} did not start: ${error.message}\n${Buffer.concat(stderr).toString()}`);
    }
    return new Session(client, transport, startedAt, stderr);
  }

  constructor(client, transport, startedAt, stderr) {
    this.client = client;
    this.transport = transport;
    this.startedAt = startedAt;
    this.pid = transport.pid;
    this.stderr = stderr;
  }

  request(method, params = {}) {
    return this.client.request({ method, params }, ANY_RESULT, { timeout: REQUEST_TIMEOUT_MS });
  }

  async callTool(name, args) {
    const result = await this.client.callTool({ name, arguments: args }, { timeout: REQUEST_TIMEOUT_MS });
    if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.structuredContent ?? result.content).slice(0, 400)}`);
    return result;
  }

  memory() {
    return memoryOf(this.pid);
  }

  /** Every page of skills/list: time per page, and whether every entry carries digests. */
  async walkSkills() {
    const pages = [];
    let skills = 0;
    let undigested = 0;
    let cursor;
    const started = now();
    do {
      const t = now();
      const page = await this.request('skills/list', cursor === undefined ? {} : { cursor });
      pages.push(now() - t);
      for (const skill of page.skills) {
        skills++;
        if (!Array.isArray(skill.resources) || !skill.resources.every((r) => /^sha256:[0-9a-f]{64}$/.test(r.digest))) undigested++;
      }
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return { ms: now() - started, pages, skills, undigested };
  }

  async close() {
    await this.client.close().catch(() => undefined);
  }
}
