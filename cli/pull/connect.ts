/**
 * @module Connects `skill-mcp pull` to the server it pulls from, with the SDK's own `Client`: a
 * command started over stdio, or a Streamable HTTP URL. Both transports cap what one message may
 * make us hold, since the server is not trusted.
 */
import { Client, StreamableHTTPClientTransport, type FetchLike } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { PULL_MAX_SKILL_BYTES } from './checks.js';

/**
 * The largest message accepted: one whole file of the largest skill a pull accepts, in base64
 * (4/3), plus room for the JSON around it.
 */
export const MAX_MESSAGE_BYTES = Math.ceil((PULL_MAX_SKILL_BYTES * 4) / 3) + 1024 * 1024;

export type Source = { url: string } | { command: string[] };

export interface Connection {
  client: Client;
  close(): Promise<void>;
}

/**
 * A fetch whose response bodies end in an error past `maxBytes`, so a server that streams without
 * end cannot fill our memory (the stdio transport has its own cap).
 */
export function cappedFetch(maxBytes: number): FetchLike {
  return async (input, init) => {
    const response = await fetch(input, init);
    if (!response.body) return response;
    let seen = 0;
    const cap = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        // Security: bounds what a hostile server's answer can make us buffer.
        if (seen > maxBytes) controller.error(new Error(`the server's answer is over ${maxBytes} bytes; refused`));
        else controller.enqueue(chunk);
      },
    });
    return new Response(response.body.pipeThrough(cap), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

/** Parses `Name: value` header arguments. */
export function parseHeaders(lines: readonly string[]): Record<string, string> | string {
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon).trim() : '';
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) return `--header ${JSON.stringify(line)} is not "Name: value"`;
    headers[name] = line.slice(colon + 1).trim();
  }
  return headers;
}

/**
 * Opens a session. A command inherits this process's environment (it is the person's own
 * command line, as if run in their shell) and its stderr goes to ours.
 */
export async function connect(source: Source, headers: Record<string, string>): Promise<Connection> {
  const client = new Client({ name: 'skill-mcp-pull', version: '0.1.0' });
  if ('url' in source) {
    const transport = new StreamableHTTPClientTransport(new URL(source.url), {
      requestInit: { headers },
      fetch: cappedFetch(MAX_MESSAGE_BYTES),
      // Security: the headers (a bearer token) never follow a redirect to another origin.
      redirectPolicy: 'same-origin',
    });
    await client.connect(transport);
  } else {
    const [command, ...args] = source.command;
    const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));
    const transport = new StdioClientTransport({ command: command!, args, env, stderr: 'inherit', maxBufferSize: MAX_MESSAGE_BYTES });
    await client.connect(transport);
  }
  return { client, close: () => client.close() };
}
